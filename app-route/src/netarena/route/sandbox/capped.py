"""Running a command with its output, time and input bounded (``sandbox.EpisodeSandbox``).

A command cut at its time limit returns what it printed so far (``LINE_BUFFERED`` makes the
tools write each line as they go, so a killed ``tracepath`` keeps its hops), with a note that
says why and, for tools that print only at their end, how to fit the limit
(``time_limit_note``); output beyond ``OUTPUT_CAP_CHARS`` is cut with a note. A qdisc
this kernel lacks (netem) gets a note that says so (``unknown_qdisc_note``).
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import subprocess
import threading
import time
from collections.abc import Callable

__all__ = [
    "CAP_READ_BYTES", "CUT_NOTE_PREFIX", "GUARD_PERIOD_S", "LINE_BUFFERED", "OUTPUT_CAP_CHARS",
    "cap_output", "pipe_of", "run_capped", "time_limit_note", "unknown_qdisc_note",
]

OUTPUT_CAP_CHARS = 8000
"""Longest command output kept (the rest is cut with a note)."""
CUT_NOTE_PREFIX = "[output cut at "
"""How the note on a cut output begins (the cap and "characters]" follow)."""
GUARD_PERIOD_S = 0.2
"""How often a running command's guard looks at the node (``run_capped``)."""
CAP_READ_BYTES = 4 * OUTPUT_CAP_CHARS + 4
"""Bytes read of a command's output: enough for ``OUTPUT_CAP_CHARS`` characters."""
_STDBUF = "/usr/libexec/coreutils/libstdbuf.so"
LINE_BUFFERED: dict[str, str] = (
    {"LD_PRELOAD": _STDBUF, "_STDBUF_O": "L"} if os.path.exists(_STDBUF) else {}
)
"""Environment that makes a command's stdio write each line at once (``stdbuf -oL``).

Into a pipe, C programs buffer 4 KiB before writing; killed at the time limit they lose it
all (``tracepath`` past a silent hop printed nothing). On a terminal they write each line,
as here. Programs that run with more privileges (``ping``) ignore it, and flush anyway."""
_ENDS_ONLY = (
    (re.compile(r"\bmtr\b"), "mtr prints its report only when it ends, after its cycles (one a "
     "second, 10 by default) and a 5 s grace for late replies: try `mtr --report -n -c 1 "
     "--gracetime 1 HOST`"),
    (re.compile(r"\biperf3?\b.*\s-s\b"), "an iperf server runs until stopped, and nothing a "
     "command starts outlives it: a server cannot wait for a later command's client"),
    (re.compile(r"\biperf3?\b"), "iperf reports when its test ends (10 s by default): try "
     "`iperf -c HOST -t 2`"),
    (re.compile(r"\btcpdump\b"), "tcpdump stops at its packet count (-c) or at the limit"),
    (re.compile(r"\bping\b"), "ping runs until its count (-c) or deadline (-w) is reached"),
)


def run_capped(
    argv: list[str],
    timeout_s: float,
    limit: int,
    env: dict[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
    guard: Callable[[], bool] | None = None,
    stdin: str | None = None,
) -> tuple[int, bytes, bool]:
    """Run ``argv`` (stdout and stderr merged), keeping at most ``limit`` bytes of output.

    A chatty command must not grow the evaluator's memory for its whole timeout (``yes``
    writes gigabytes in five seconds), so output past ``limit`` is read and dropped: the
    command still runs to completion (or the timeout), so its exit status is its own.

    Args:
        argv: The command line.
        timeout_s: When the command is killed, seconds.
        limit: Most output bytes kept.
        env: Its environment.
        pass_fds: Descriptors it inherits.
        guard: Called every ``GUARD_PERIOD_S`` while it runs; ``True`` kills it at once.
        stdin: Its input (written from a thread); none by default.

    Returns:
        ``(returncode, output, killed)``; a command still running at ``timeout_s`` is
        killed (returncode -9).

    Raises:
        OSError: The command could not be started.
    """
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd="/",
        pass_fds=pass_fds,
    )
    assert proc.stdout is not None
    if stdin is not None:
        threading.Thread(target=_feed, args=(proc, stdin.encode()), daemon=True).start()
    fd, kept = proc.stdout.fileno(), bytearray()
    poller = select.poll()  # select() fails past fd 1024 (many live networks)
    poller.register(fd, select.POLLIN | select.POLLHUP)
    deadline = time.monotonic() + timeout_s
    checked = time.monotonic()
    killed = False
    try:
        while True:
            now = time.monotonic()
            if guard is not None and now - checked >= GUARD_PERIOD_S:
                checked = now
                if guard():
                    killed = True
                    break
            left = deadline - now
            if left <= 0:
                killed = True
                break
            wait_s = left if guard is None else min(left, GUARD_PERIOD_S)
            if not poller.poll(wait_s * 1000):
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            if len(kept) < limit:
                kept += chunk[: limit - len(kept)]
        if not killed:
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # closed its output but kept running
                killed = True
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return (-9 if killed else proc.returncode), bytes(kept), killed


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(OSError):  # it may exit without reading
        with proc.stdin:
            proc.stdin.write(data)


def pipe_of(data: bytes) -> int:
    """A descriptor to read ``data`` from (a pipe; the caller closes it)."""
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, data)  # a few kilobytes at most: within a pipe's buffer
    finally:
        os.close(write_end)
    return read_end


def time_limit_note(command: str, timeout_s: float) -> str:
    """The note that ends the output of ``command`` stopped at its ``timeout_s`` limit."""
    hints = [hint for pattern, hint in _ENDS_ONLY if pattern.search(command)][:1]
    return " ".join([f"[stopped after {timeout_s:g} s, the command time limit; output so far]",
                     *hints])


_UNKNOWN_QDISC = "Error: Specified qdisc kind is unknown."
UNKNOWN_QDISC_NOTE = (
    "[this kernel has no module for that qdisc kind: netem (delay, loss), fq_codel, sfq, "
    "prio, fq and cake are not available here; htb, tbf, pfifo, bfifo, red and ingress are]"
)
"""Why ``tc qdisc add ... netem`` fails: the real tc says only ``_UNKNOWN_QDISC``, as a
box without ``sch_netem`` would, which reads as a typo (measured on this kernel)."""


def unknown_qdisc_note(command: str, output: str) -> str:
    """``output`` with ``UNKNOWN_QDISC_NOTE`` after tc's unknown-kind error, if it has one."""
    if _UNKNOWN_QDISC not in output or not re.search(r"\bqdisc\b", command):
        return output
    return output.rstrip("\n") + "\n" + UNKNOWN_QDISC_NOTE + "\n"


def cap_output(raw: bytes) -> str:
    """Decode a command's output, cut at ``OUTPUT_CAP_CHARS`` characters with a note."""
    text = raw.decode("utf-8", "replace")
    if len(text) > OUTPUT_CAP_CHARS:
        text = text[:OUTPUT_CAP_CHARS] + f"\n{CUT_NOTE_PREFIX}{OUTPUT_CAP_CHARS} characters]"
    return text
