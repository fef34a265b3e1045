"""SIGINT and SIGTERM close every open episode: ``netarena run`` and ``netarena route shell``."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from netarena.route.linux.cgroups import stale_groups
from netarena.route.linux.namespaces import OWNER_DIR, list_prefixes

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, pytest.mark.slow, NEEDS_ROOT]

NETARENA = str(Path(sys.executable).parent / "netarena")


def _owned_by(pid: int) -> set[str]:
    """Prefixes of the live episodes of process ``pid`` (from their owner files)."""
    found = set()
    for owner in OWNER_DIR.glob("nr*.pid"):
        try:
            if owner.read_text().split()[0] == str(pid):
                found.add(owner.stem)
        except OSError:
            continue
    return found


def _wait_for_episodes(pid: int, count: int, timeout_s: float) -> set[str]:
    seen: set[str] = set()
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        now = _owned_by(pid)
        seen |= now
        if len(now & list_prefixes()) >= count:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"process {pid} did not open {count} episodes in {timeout_s:g}s")


def _assert_all_closed(pid: int, prefixes: set[str]) -> None:
    assert not _owned_by(pid)
    assert not prefixes & list_prefixes()
    assert not prefixes & stale_groups()


@pytest.mark.serial
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_run_closes_every_open_episode(sig: signal.Signals, tmp_path: Path) -> None:
    """Even with SIGINT inherited ignored (a run started with ``&`` by a script)."""
    run = (
        f"trap '' INT; exec {NETARENA} run route --agent reference --queries 24 "
        f"--concurrency 4 --seed 11 -p num_subnets=2 -p hosts_per_subnet=2 --out {tmp_path}"
    )
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    proc = subprocess.Popen(["sh", "-c", run], stderr=subprocess.PIPE, text=True, env=env)
    try:
        prefixes = _wait_for_episodes(proc.pid, 3, 90)
        prefixes |= _owned_by(proc.pid)
        started = time.monotonic()
        proc.send_signal(sig)
        _, errors = proc.communicate(timeout=30)
        took = time.monotonic() - started
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, errors
    assert "every open episode was closed" in errors
    assert took < 10, took
    _assert_all_closed(proc.pid, prefixes)


class _Shell:
    """``netarena route shell`` on a pseudo-terminal, as a person types into it."""

    def __init__(self, *args: str) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: becomes the shell (SIGABRT prints its stacks)
            os.execve(NETARENA, [NETARENA, "route", "shell", *args],
                      {**os.environ, "PYTHONFAULTHANDLER": "1"})
        self.text = ""

    def read_until(self, pattern: str, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            if select.select([self.fd], [], [], 0.1)[0]:
                try:
                    self.text += os.read(self.fd, 65536).decode("utf-8", "replace")
                except OSError:  # the shell is gone
                    return False
            if re.search(pattern, self.text):
                return True
        return False

    def diagnosis(self) -> str:
        """What was seen, whether the terminal turns Ctrl-C into SIGINT, and every thread's
        stack (the shell is aborted: call it only on a failure)."""
        isig = bool(termios.tcgetattr(self.fd)[3] & termios.ISIG)
        seen = self.text
        os.kill(self.pid, signal.SIGABRT)
        self.read_until("$^", 3)
        return f"{seen}\n[ISIG {'on' if isig else 'off'}; stacks:]\n{self.text}"

    def type(self, keys: str) -> None:
        self.text = ""
        os.write(self.fd, keys.encode())

    def stop(self, sig: int, timeout_s: float) -> int | None:
        """Send ``sig``; the exit status, or ``None`` if it is still running."""
        os.kill(self.pid, sig)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                return os.waitstatus_to_exitcode(status)
            self.read_until("$^", 0.1)  # keep its output flowing
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return None


@pytest.mark.serial  # alone: under the parallel tier's load, Ctrl-C went unanswered for
# 30 s once in a fresh-clone CI run (2026-12-01) and no stack came back to SIGABRT either
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_the_route_shell_stops_commands_and_closes_its_network(sig: signal.Signals) -> None:
    shell = _Shell("--seed", "3", "--level", "1", "--label", "DR")
    try:
        assert shell.read_until("mininet> $", 90), shell.text
        prefixes = _owned_by(shell.pid)
        assert len(prefixes) == 1 and prefixes <= list_prefixes()
        shell.type("iperf h1 h5\n")  # across the broken router: waits for ever
        assert not shell.read_until("mininet> $", 3), shell.text
        shell.type("\x03")  # Ctrl-C
        # 10 s: missed once under load; 30 s: missed twice in about a dozen CI runs
        assert shell.read_until("mininet> $", 30), shell.diagnosis()
        shell.type("h1 echo still-$((20+1))\n")
        assert shell.read_until("still-21", 10) and shell.read_until("mininet> $", 10)
        shell.type("h1 ping -c 100 h5\n")
        assert not shell.read_until("mininet> $", 2)
        shell.type("\x03")
        assert shell.read_until(r"packets transmitted[\s\S]*mininet> $", 10), shell.text
        status = shell.stop(sig, 15)
    finally:
        if _owned_by(shell.pid):
            subprocess.run([NETARENA, "route", "cleanup"], capture_output=True)
    assert status == (143 if sig == signal.SIGTERM else 0), shell.text
    _assert_all_closed(shell.pid, prefixes)
