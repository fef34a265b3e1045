"""Waiting for a child process without sleep-polling."""

from __future__ import annotations

import os
import select
import subprocess

__all__ = ["exited_within"]


def exited_within(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether ``proc`` exits within ``timeout_s``, woken by the kernel when it does.

    ``Popen.wait(timeout)`` polls with sleeps of up to 50 ms, which nearly doubled a short
    command's round trip (kubectl's); a pidfd becomes readable the moment the process exits.
    The process is not reaped: call ``proc.wait()`` after.
    """
    pidfd = os.pidfd_open(proc.pid)
    try:
        waiter = select.poll()
        waiter.register(pidfd, select.POLLIN)
        return bool(waiter.poll(timeout_s * 1000))
    finally:
        os.close(pidfd)
