"""Stopping on SIGINT and SIGTERM without leaking what is open.

A run holds live emulators (route: a few network namespaces per episode) that only its own
``close()`` removes. SIGTERM's default action kills the process on the spot, and a
process started in the background by a non-interactive shell inherits SIGINT *ignored*
(Python then installs no ``KeyboardInterrupt`` handler), so neither signal used to close
anything. Both helpers install their own handlers whatever was inherited:

* ``run_until_stopped(coro)``: ``asyncio.run`` whose main task is cancelled by the first
  SIGINT or SIGTERM, so every ``finally`` (each episode's ``close()``) runs before the
  process exits; a second signal exits at once.
* ``exit_on_signals()``: for synchronous code (an interactive shell), SIGTERM raises
  ``SystemExit`` so ``finally`` blocks run; SIGINT raises ``KeyboardInterrupt`` (the
  shell decides what a Ctrl-C means) even where it was inherited ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Coroutine, Iterator
from types import FrameType
from typing import Any, TypeVar

__all__ = ["run_until_stopped", "exit_on_signals", "STOP_SIGNALS"]

log = logging.getLogger(__name__)

T = TypeVar("T")

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals that stop a run."""


def run_until_stopped(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` like ``asyncio.run``; SIGINT or SIGTERM cancels it, closing what is open.

    Outside the main thread (where signals cannot be handled) it is ``asyncio.run``.

    Raises:
        KeyboardInterrupt: A signal stopped the run (after every ``finally`` ran).
    """
    if threading.current_thread() is not threading.main_thread():
        return asyncio.run(coro)
    received: list[int] = []

    async def main() -> T:
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None

        def stop(sig: int) -> None:
            if received:  # asked twice: stop waiting for the cleanup
                log.warning("second %s: exiting now", signal.Signals(sig).name)
                os._exit(128 + sig)
            received.append(sig)
            log.warning("%s: stopping; closing what is open", signal.Signals(sig).name)
            task.cancel()

        for sig in STOP_SIGNALS:
            loop.add_signal_handler(sig, stop, sig)
        try:
            return await coro
        finally:
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        if received:
            raise KeyboardInterrupt from None
        raise


@contextlib.contextmanager
def exit_on_signals() -> Iterator[None]:
    """In the body, SIGTERM raises ``SystemExit`` and SIGINT ``KeyboardInterrupt``.

    Only in the main thread (elsewhere, signals cannot be handled and nothing changes).
    The previous handlers come back afterwards. A signal that lands after a blocking C
    call's last check and before it blocks (``input()`` under readline, right after the
    prompt is printed) would wait for the next keystroke: ``_Redeliver`` sends it again.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    redeliver = _Redeliver()
    stopping: list[int] = []

    def terminate(sig: int, _: FrameType | None) -> None:
        redeliver.handled(sig)
        if not stopping:  # a late re-delivery must not cut the clean-up short
            stopping.append(sig)
            raise SystemExit(128 + sig)

    def interrupt(sig: int, _: FrameType | None) -> None:
        redeliver.handled(sig)
        raise KeyboardInterrupt

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, terminate),
        signal.SIGINT: signal.signal(signal.SIGINT, interrupt),
    }
    try:
        with redeliver:
            yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


class _Redeliver:
    """Re-sends a stop signal to the main thread when its Python handler did not run.

    The C handler only marks a Python handler as due; the main thread runs it at its
    next bytecode, and a thread blocked in ``select`` never gets there unless a signal
    interrupts that call. A watcher thread learns of each arrival from the wakeup fd and,
    when no handler of that signal ran since the watcher's previous read nor in the
    ``_GRACE_S`` after this one, sends it again. (Timing the arrival by when the watcher
    woke sent a handled Ctrl-C again whenever the watcher woke late on a loaded machine:
    the route shell took the second one at its prompt and left.)
    """

    _GRACE_S = 0.2

    def __init__(self) -> None:
        self._ran_at: dict[int, float] = dict.fromkeys(STOP_SIGNALS, -1.0)
        self._main = threading.main_thread().ident or 0
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def handled(self, sig: int) -> None:
        """Called by the Python handler of ``sig`` (on the main thread)."""
        self._ran_at[sig] = time.monotonic()

    def __enter__(self) -> _Redeliver:
        self._previous_fd = signal.set_wakeup_fd(self._write)
        self._thread = threading.Thread(target=self._watch, name="signal-redeliver", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        signal.set_wakeup_fd(self._previous_fd)
        os.write(self._write, b"\0")  # no signal has number 0: the watcher's stop word
        self._thread.join(timeout=2)
        os.close(self._read)
        os.close(self._write)

    def _watch(self) -> None:
        # The kernel then gives a stop signal to the main thread, never to this one.
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        last_read = time.monotonic()
        while True:
            numbers = os.read(self._read, 64)
            if 0 in numbers:
                return
            # These arrived after the previous read; when this thread wakes late (a loaded
            # machine), the handler may have run well before now, and must count.
            since, last_read = last_read, time.monotonic()
            time.sleep(self._GRACE_S)
            for sig in {n for n in numbers if n in self._ran_at}:
                if self._ran_at[sig] < since:
                    with contextlib.suppress(ProcessLookupError):
                        signal.pthread_kill(self._main, sig)
