"""Command output is read with a byte limit, so a chatty command cannot fill the evaluator."""

from __future__ import annotations

import os

import pytest

from netarena.route.sandbox import sandbox
from netarena.route.sandbox.capped import run_capped


def test_an_endless_writer_is_bounded_and_killed() -> None:
    returncode, out, killed = run_capped(["yes"], 0.5, 10_000)
    assert (returncode, killed) == (-9, True)
    assert out == b"y\n" * 5_000


def test_a_big_writer_keeps_its_exit_status() -> None:
    # 20 MB of output past the limit is read and dropped; the exit status is the command's.
    cmd = ["sh", "-c", "head -c 20000000 /dev/zero; echo oops >&2; exit 3"]
    returncode, out, killed = run_capped(cmd, 10.0, 4096)
    assert (returncode, killed, out) == (3, False, b"\0" * 4096)


def test_small_output_merges_stdout_and_stderr() -> None:
    cmd = ["sh", "-c", "echo out; echo err >&2"]
    assert run_capped(cmd, 5.0, 4096) == (0, b"out\nerr\n", False)


def test_a_command_that_closes_its_output_is_still_killed() -> None:
    returncode, out, killed = run_capped(["sh", "-c", "exec >&- 2>&-; sleep 5"], 0.3, 4096)
    assert (returncode, out, killed) == (-9, b"", True)


def test_a_missing_program_raises() -> None:
    with pytest.raises(OSError):
        run_capped(["/nonexistent/netarena-tool"], 1.0, 4096)


def test_a_command_that_cannot_start_leaves_no_descriptor_open(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every command opens its node's user namespace first; a failure after that (here the
    # seccomp filter cannot be built) must close it, or each turn leaks a descriptor.
    def no_filter() -> bytes:
        raise OSError("libseccomp exported no filter program")

    monkeypatch.setattr(sandbox, "filter_program", no_filter)
    box = object.__new__(sandbox.EpisodeSandbox)  # run() fails before it uses the episode
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(3):
        with pytest.raises(OSError, match="no filter program"):
            box.run("h1", "unused", "/proc/self/ns/user", "true", 1.0)
    assert sorted(os.listdir("/proc/self/fd")) == before
