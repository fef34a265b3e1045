"""kubectl runs under kernel limits: a runaway read cannot take the evaluator's memory."""

from __future__ import annotations

import time

import pytest

from netarena.k8s.kubectl import MAX_OUTPUT_BYTES, Kubectl


@pytest.mark.serial
def test_reading_an_endless_file_stops_at_the_memory_limit() -> None:
    """``--patch-file=/dev/zero`` grew kubectl to 2.6 GB; the allowlist refuses it, and
    the kernel limit stops the same read when it is reached another way. (The Landlock
    domain refuses to open /dev/zero at all, ``test_jail``; this tests the limit alone.)"""
    with Kubectl("http://127.0.0.1:1", confine=False) as kubectl:
        start = time.monotonic()
        result = kubectl.run(["create", "-f", "/dev/zero", "--dry-run=client"], timeout_s=30)
        assert not result.ok and time.monotonic() - start < 10
        assert len(result.stdout) + len(result.stderr) < 2 * MAX_OUTPUT_BYTES + 1000
        assert "out of memory" in result.stderr
