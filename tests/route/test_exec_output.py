"""Command output is read with a byte limit, so a chatty command cannot fill the evaluator."""

from __future__ import annotations

import pytest

from netarena.route.topology import _CAP_READ_BYTES, OUTPUT_CAP_BYTES, Network, TopologySpec
from netarena.route.topology import _run_capped as run_capped

from .conftest import NEEDS_ROOT


def test_an_endless_writer_is_bounded_and_timed_out() -> None:
    returncode, out, timed_out = run_capped(["yes"], 0.5, 10_000)
    assert (returncode, timed_out) == (-9, True)
    assert out == b"y\n" * 5_000


def test_a_big_writer_keeps_its_exit_status() -> None:
    # 20 MB of output past the limit is read and dropped; the exit status is the command's.
    cmd = ["sh", "-c", "head -c 20000000 /dev/zero; echo oops >&2; exit 3"]
    returncode, out, timed_out = run_capped(cmd, 10.0, 4096)
    assert (returncode, timed_out, out) == (3, False, b"\0" * 4096)


def test_small_output_merges_stdout_and_stderr() -> None:
    cmd = ["sh", "-c", "echo out; echo err >&2"]
    assert run_capped(cmd, 5.0, 4096) == (0, b"out\nerr\n", False)


def test_a_command_that_closes_its_output_still_times_out() -> None:
    returncode, out, timed_out = run_capped(["sh", "-c", "exec >&- 2>&-; sleep 5"], 0.3, 4096)
    assert (returncode, out, timed_out) == (-9, b"", True)


def test_a_missing_program_raises() -> None:
    with pytest.raises(OSError):
        run_capped(["/nonexistent/netarena-tool"], 1.0, 4096)


@pytest.mark.root
@NEEDS_ROOT
def test_network_exec_caps_a_chatty_command() -> None:
    with Network(TopologySpec(1, 1)) as net:
        result = net.exec("h1", ["yes", "chatty"], timeout_s=0.5)
        assert result.timed_out and result.returncode == -9
        assert result.output.startswith("chatty\n")
        assert f"[output cut at {OUTPUT_CAP_BYTES} characters]" in result.output
        assert result.output.endswith("[timed out after 0.5s]")
        assert len(result.output) < OUTPUT_CAP_BYTES + 100
        done = net.exec("h1", ["seq", "1", "200000"])  # about 1.3 MB, exits by itself
        assert done.returncode == 0 and not done.timed_out
        assert done.output.startswith("1\n2\n3\n") and "[output cut" in done.output
        assert _CAP_READ_BYTES > OUTPUT_CAP_BYTES
