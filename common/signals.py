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
    The previous handlers come back afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(sig: int, _: FrameType | None) -> None:
        raise SystemExit(128 + sig)

    previous = {
        signal.SIGTERM: signal.signal(signal.SIGTERM, terminate),
        signal.SIGINT: signal.signal(signal.SIGINT, signal.default_int_handler),
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
