"""The judge's vty reader against listeners it does not trust (no root, no FRR needed).

The vty sockets live in a directory the agent's sandbox on that router shares, so a hostile
agent can put its own listener there; the reader must fail closed, not hang or run out of memory.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from netarena.common.core.errors import EmulatorError
from netarena.route.frr import vty
from netarena.route.frr.vty import DaemonDown, vty_show


def _serve(
    path: Path, answer: Callable[[socket.socket], None], asked: list[bytes] | None = None
) -> threading.Thread:
    """Answer one connection: read a request (kept in ``asked``), then ``answer`` it."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def run() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                request = conn.recv(4096)
                if asked is not None:
                    asked.append(request)
                answer(conn)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def sock(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "zebra.vty"


def test_a_daemon_answer_is_read_whole(sock: Path) -> None:
    _serve(sock, lambda c: c.sendall(b'{"a": 1}\n\0\0\0\0'))
    assert vty_show(sock, "show ip route json") == '{"a": 1}\n'


def test_a_refused_command_fails_closed(sock: Path) -> None:
    _serve(sock, lambda c: c.sendall(b"% Unknown command\n\0\0\0\x02"))
    with pytest.raises(EmulatorError, match="refused"):
        vty_show(sock, "configure terminal")


def test_an_endless_answer_is_cut_off(sock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vty, "MAX_ANSWER_BYTES", 1 << 20)

    def flood(conn: socket.socket) -> None:
        try:
            while True:
                conn.sendall(b"x" * 65536)
        except OSError:
            pass

    _serve(sock, flood)
    with pytest.raises(EmulatorError, match="answer over"):
        vty_show(sock, "show ip route json")


def test_a_silent_listener_times_out(sock: Path) -> None:
    done = threading.Event()
    _serve(sock, lambda c: done.wait(5))
    with pytest.raises(EmulatorError):
        vty_show(sock, "show ip route json", timeout_s=0.3)
    done.set()


def test_a_listener_that_hangs_up_mid_answer_fails_closed(sock: Path) -> None:
    _serve(sock, lambda c: c.sendall(b"partial"))
    with pytest.raises(EmulatorError, match="closed mid-answer"):
        vty_show(sock, "show ip route json")


def test_no_listener_means_the_daemon_is_down_and_a_dead_socket_too(sock: Path) -> None:
    with pytest.raises(DaemonDown):
        vty_show(sock, "show running-config", enable=True)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock))
    stale.close()  # the file stays, nothing listens: a daemon that died
    with pytest.raises(DaemonDown):
        vty_show(sock, "show running-config", enable=True)


def test_the_running_config_is_asked_for_in_the_enable_node(sock: Path) -> None:
    """Two requests on one connection: ``enable``, then the command (nothing else)."""
    asked: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        conn.sendall(b"\0\0\0\0")  # enable: no output
        asked.append(conn.recv(4096))
        conn.sendall(b"router ospf\n\0\0\0\0")

    thread = _serve(sock, answer, asked)
    assert vty_show(sock, "show running-config", enable=True) == "router ospf\n"
    thread.join(2)
    assert asked == [b"enable\0", b"show running-config\0"]


def test_a_link_to_another_routers_socket_is_not_followed(tmp_path: Path) -> None:
    """An agent could link its router's socket to another router's healthy daemon."""
    other = tmp_path / "other.vty"
    _serve(other, lambda c: c.sendall(b'{"neighbors": {}}\n\0\0\0\0'))
    link = tmp_path / "ospfd.vty"
    link.symlink_to(other)
    with pytest.raises(EmulatorError, match="not a socket"):
        vty_show(link, "show ip ospf neighbor json")
    assert vty_show(other, "show ip ospf neighbor json").startswith('{"neighbors"')
