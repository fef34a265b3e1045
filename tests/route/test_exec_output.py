"""Command output is read with a byte limit, so a chatty command cannot fill the evaluator."""

from __future__ import annotations

import pytest

from netarena.route.sandbox import run_capped


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
