"""Reading an FRR daemon's state over its vty socket, without starting ``vtysh``.

The judge reads every router's routes, neighbours and SPF state many times a step. Each
``vtysh`` run starts a process that connects to every daemon of the router: tens of
milliseconds of CPU, which at eight episodes in parallel was most of the machine. One
daemon's socket answers the same ``show`` command in about half a millisecond.

The socket speaks vtysh's protocol: the command ends in a NUL, the answer in three NULs
and a status byte (0: done). A connection starts in the view node, which has no
configuration commands, so this reads and never changes anything. (The running
configuration is shown in the enable node, which this enters for that one command.)
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

from netarena.common.core.errors import EmulatorError

__all__ = ["vty_show", "vty_lines", "DaemonDown", "MAX_ANSWER_BYTES"]

MAX_ANSWER_BYTES = 16 << 20
"""Longest answer read: the socket sits in a directory the agent's sandbox shares, so what
answers may be the agent's own listener, and an endless answer must not exhaust the judge."""


class DaemonDown(EmulatorError):
    """Nothing listens on the socket: the daemon is not running."""


def _connect(path: Path, timeout_s: float) -> socket.socket:
    """A connection to the daemon listening on the vty socket ``path``.

    Raises:
        DaemonDown: Nothing listens there.
        EmulatorError: ``path`` is not a socket (a link, say) or cannot be reached.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError as exc:
        raise DaemonDown(f"{path.name}: {exc}") from exc
    except OSError as exc:
        raise EmulatorError(f"{path.name}: {exc}") from exc
    if not stat.S_ISSOCK(mode):  # a link the agent made could lead to another router's
        raise EmulatorError(f"{path.name} is not a socket")
    vty = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    vty.settimeout(timeout_s)
    try:
        vty.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError) as exc:
        vty.close()
        raise DaemonDown(f"{path.name}: {exc}") from exc
    except OSError as exc:
        vty.close()
        raise EmulatorError(f"{path.name}: {exc}") from exc
    return vty


def vty_lines(path: Path, ceiling: int, timeout_s: float = 10.0) -> int:
    """How many lines the running configuration of the daemon at ``path`` has.

    Counted as the answer comes and cut at ``ceiling`` (the rest is not read): the size
    of a configuration an agent may have grown without end, in about the time its first
    ``ceiling`` lines take.

    Raises:
        DaemonDown: Nothing listens there.
        EmulatorError: It did not answer within ``timeout_s``, or refused.
    """
    with _connect(path, timeout_s) as vty:
        try:
            _ask(vty, "enable", path)
            vty.sendall(b"show running-config\0")
            lines, tail = 0, b""
            while lines < ceiling:
                chunk = vty.recv(1 << 16)
                if not chunk:
                    raise EmulatorError(f"{path.name} closed mid-answer")
                lines += chunk.count(b"\n")
                tail = (tail + chunk)[-4:]
                if b"\0\0\0" in tail[:-1] or tail.endswith(b"\0\0\0"):
                    break
        except OSError as exc:
            raise EmulatorError(f"{path.name}: {exc}") from exc
    return min(lines, ceiling)


def vty_show(path: Path, command: str, timeout_s: float = 10.0, *, enable: bool = False) -> str:
    """``command``'s output from the daemon listening on the vty socket ``path``.

    With ``enable``, the connection first enters the enable node, where ``show
    running-config`` is; nothing but those two commands is sent, so this still only reads.

    Raises:
        DaemonDown: Nothing listens there.
        EmulatorError: ``path`` is not a socket (a link, say), the daemon did not answer
            within ``timeout_s``, refused, or answered more than ``MAX_ANSWER_BYTES`` (the
            judge then fails closed).
    """
    with _connect(path, timeout_s) as vty:
        try:
            if enable:
                _ask(vty, "enable", path)
            return _ask(vty, command, path)
        except OSError as exc:
            raise EmulatorError(f"{path.name}: {exc}") from exc


def _ask(vty: socket.socket, command: str, path: Path) -> str:
    """Send one command, read its answer (it ends in three NULs and a status byte)."""
    answer = bytearray()
    vty.sendall(command.encode() + b"\0")
    while (end := answer.find(b"\0\0\0")) < 0 or len(answer) <= end + 3:
        chunk = vty.recv(1 << 16)
        if not chunk:
            raise EmulatorError(f"{path.name} closed mid-answer")
        answer += chunk
        if len(answer) > MAX_ANSWER_BYTES:
            raise EmulatorError(f"{path.name}: answer over {MAX_ANSWER_BYTES} bytes")
    text = answer[:end].decode(errors="replace")
    if answer[end + 3] != 0:
        raise EmulatorError(f"{path.name} refused {command!r}: {text.strip()[:300]}")
    return text
