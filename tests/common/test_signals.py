"""SIGINT and SIGTERM stop a run and close every open episode at once."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from netarena.common.core.app import Episode
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.reactive import Command
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.signals import exit_on_signals, run_until_stopped
from netarena.common.core.types import Query
from tests.helpers.toy import ReferenceToyAgent, ToyApp, ToyEpisode


class _SlowEpisode(ToyEpisode):
    """A step runs for ``STEP_S`` in its thread (a route command up to its time limit)."""

    STEP_S = 3.0
    opened: list[_SlowEpisode] = []  # noqa: RUF012 - a test's ledger

    def __init__(self, query: Query) -> None:
        super().__init__(query)
        self.closed_at: float | None = None
        self.opened.append(self)

    def _execute(self, command: Command[int]) -> tuple[str, int]:
        time.sleep(self.STEP_S)
        return super()._execute(command)

    def _close(self) -> None:
        self.closed_at = time.monotonic()
        super()._close()


class _SlowApp(ToyApp):
    def open(self, query: Query) -> Episode:
        return _SlowEpisode(query)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_cancels_the_run_and_closes_open_episodes_at_once(sig: int) -> None:
    app = _SlowApp()
    queries = plan_queries(app, QueryPlan(num_queries=6, levels=(3,), seed=2))
    runner = Runner(app, ReferenceToyAgent(), RunConfig(concurrency=3))
    _SlowEpisode.opened.clear()
    sent: list[float] = []

    async def run() -> None:
        def send() -> None:
            sent.append(time.monotonic())
            os.kill(os.getpid(), sig)

        asyncio.get_running_loop().call_later(0.5, send)
        await runner.run(queries)

    ignored = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as `cmd &` in a script leaves it
    try:
        with pytest.raises(KeyboardInterrupt):
            run_until_stopped(run())
    finally:
        signal.signal(signal.SIGINT, ignored)
    opened = _SlowEpisode.opened
    assert len(opened) == 3  # the others never started
    for episode in opened:  # closed while its step still ran, not after it
        assert episode.closes == 1 and episode.closed_at is not None
        assert episode.closed_at - sent[0] < _SlowEpisode.STEP_S / 2


def test_without_a_signal_the_run_returns_its_result() -> None:
    async def answer() -> int:
        return 42

    assert run_until_stopped(answer()) == 42
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_exit_on_signals_turns_sigterm_into_exit_and_restores_handlers() -> None:
    before = signal.getsignal(signal.SIGTERM)
    cleaned = []
    with pytest.raises(SystemExit) as stopped:
        with exit_on_signals():
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                threading.Event().wait(5)
            finally:
                cleaned.append(True)
    assert stopped.value.code == 128 + signal.SIGTERM and cleaned
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.serial
def test_a_signal_the_blocked_main_thread_missed_is_delivered_again() -> None:
    """A signal taken by another thread only marks the handler as due: the main thread,
    blocked in ``select`` (as ``input()`` under readline is), would sleep through it."""
    import select

    read, write = os.pipe()
    sender = threading.Thread(target=lambda: (time.sleep(0.2), signal.pthread_kill(
        threading.get_ident(), signal.SIGTERM)))
    started = time.monotonic()
    try:
        with pytest.raises(SystemExit), exit_on_signals():
            sender.start()
            select.select([read], [], [], 10)
    finally:
        sender.join()
        os.close(read)
        os.close(write)
    assert time.monotonic() - started < 3


@pytest.mark.serial
def test_a_handled_signal_is_not_delivered_again_when_the_watcher_wakes_late(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On a loaded machine the watcher thread may run long after the handler did; a
    second SIGINT would stop the route shell at its prompt after a Ctrl-C."""
    real_read = os.read

    def late_read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        if threading.current_thread().name == "signal-redeliver" and 0 not in data:
            time.sleep(0.6)  # the watcher gets the CPU late
        return data

    monkeypatch.setattr(os, "read", late_read)
    interrupts = []
    with exit_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            interrupts.append("first")
        try:
            time.sleep(1.5)
        except KeyboardInterrupt:
            interrupts.append("again")
    assert interrupts == ["first"]
