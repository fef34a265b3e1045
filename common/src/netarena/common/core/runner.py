"""Plays queries against an agent: concurrency, timeouts, turn limits, JSONL, resume, shards.

This is the only place that turns exceptions into ``QueryResult.error``: apps raise, agents
raise, the runner records. Every finished query is appended and flushed to the results file
before the next one is reported, so a crash loses nothing finished and ``resume`` skips it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from netarena.common.core.agents import Agent, Observation
from netarena.common.core.app import App, Episode
from netarena.common.core.errors import (
    AgentError,
    AgentUnavailable,
    ConfigError,
    EmulatorUnavailable,
    NetArenaError,
)
from netarena.common.core.result_files import open_regular, read_regular
from netarena.common.core.types import Query, QueryResult, Score, StepResult

__all__ = ["RunConfig", "TurnRecord", "Runner", "read_results"]

log = logging.getLogger(__name__)
T = TypeVar("T")


class RunConfig(BaseModel):
    """How queries are played (not which ones)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int = Field(4, ge=1, le=64)
    """Episodes in flight at once."""
    max_turns: int | None = Field(None, ge=1, le=200)
    """Turn budget per episode; ``None`` takes the app's default."""
    turn_timeout_s: float = Field(120.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest wait for one agent answer (finite: at most an hour)."""
    episode_timeout_s: float | None = Field(None, gt=0, le=86_400, allow_inf_nan=False)
    """Wall-clock budget per episode, checked between turns; ``None`` for no limit."""


def read_results(path: Path) -> list[QueryResult]:
    """Load a results JSONL file, skipping a torn last line left by a crash.

    A query recorded twice (an unscored result retried on resume) keeps its last record.

    Raises:
        UnsafeResultsFile: ``path`` is a FIFO, symlink or device, not a regular file.
    """
    data = read_regular(path)
    return _parse_results(data.decode("utf-8", "replace"), path) if data else []


def _parse_results(text: str, path: Path) -> list[QueryResult]:
    results: dict[str, QueryResult] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            log.warning("skipping torn line in %s", path)
            continue
        if record.get("kind", "query") == "query":
            result = QueryResult.model_validate(record)
            results.pop(result.query_id, None)
            results[result.query_id] = result
    return list(results.values())


def _log_failed_close(query_id: str, closing: asyncio.Future[None]) -> None:
    """Log a close that failed, whether or not anyone still awaits it."""
    if not closing.cancelled() and (exc := closing.exception()) is not None:
        log.error("closing episode %s failed", query_id, exc_info=exc)


def _close_orphan(opening: Future[Episode]) -> None:
    """Close the episode an abandoned ``opening`` built (runs in the thread that built it)."""
    if opening.cancelled() or opening.exception() is not None:
        return
    episode = opening.result()
    try:
        episode.close()
    except Exception:  # noqa: BLE001 - nobody is left to tell but the log
        log.exception("closing orphaned episode %s failed", episode.query.id)


def _resume(sink: TextIO, path: Path) -> list[QueryResult]:
    """The results already in ``sink``; a partial last line left by a crash is cut off."""
    sink.seek(0)
    text = sink.read()
    if text and not text.endswith("\n"):
        sink.truncate(len(text[: text.rfind("\n") + 1].encode("utf-8", "surrogateescape")))
    return _parse_results(text, path)


ResultCallback = Callable[[QueryResult, int, int], Any]


@dataclass(frozen=True)
class TurnRecord:
    """One turn of a played episode, kept when the runner records trajectories."""

    observation: str
    """The text the agent was shown."""
    action: str
    """What the agent answered."""
    step: StepResult
    """What the action did (its output, reward, validity, whether it ended the episode)."""


class Runner:
    """Runs queries for one app and agent with bounded concurrency."""

    def __init__(self, app: App, agent: Agent, config: RunConfig | None = None) -> None:
        self.app = app
        self.agent = agent
        self.config = config or RunConfig()
        limit = app.max_concurrency
        if limit is not None and self.config.concurrency > limit:
            raise ConfigError(
                f"{app.name} runs at most {limit} episodes at once; "
                f"concurrency {self.config.concurrency} is too high"
            )
        self.max_turns = self.config.max_turns or app.default_max_turns
        self.trajectories: dict[str, list[TurnRecord]] | None = None
        """Set to a dict to keep every played query's turns (rollouts); ``None``: keep none."""
        self._executor = ThreadPoolExecutor(
            max_workers=self.config.concurrency + 2, thread_name_prefix=f"netarena-{app.name}"
        )

    async def run(
        self,
        queries: Iterable[Query],
        out: Path | None = None,
        on_result: ResultCallback | None = None,
    ) -> list[QueryResult]:
        """Play every query; results come back in query order.

        Args:
            queries: The queries to play.
            out: JSONL file to append results to. Queries already in it are not replayed.
            on_result: Called as ``on_result(result, done, total)`` for each query already
                in ``out`` (first) and after each query played. Its failures are logged,
                never fatal: progress reporting must not cost results.

        Raises:
            UnsafeResultsFile: ``out`` is a FIFO, symlink or device, not a regular file.
        """
        queries = list(queries)
        done: dict[str, QueryResult] = {}
        sink = None
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            sink = open_regular(out)  # never a planted FIFO or symlink
            wanted = {q.id for q in queries}
            done = {r.query_id: r for r in _resume(sink, out) if r.query_id in wanted and r.scored}
        todo = [q for q in queries if q.id not in done]
        total, finished = len(queries), 0
        gate = asyncio.Semaphore(self.config.concurrency)

        async def report(result: QueryResult) -> None:
            nonlocal finished
            finished += 1
            if on_result is None:
                return
            try:
                ret = on_result(result, finished, total)
                if asyncio.iscoroutine(ret):
                    await ret
            except Exception:  # noqa: BLE001 - a progress failure must not cost results
                log.exception("progress callback failed for %s", result.query_id)

        async def play(query: Query) -> None:
            async with gate:
                result = await self.play(query)
            done[query.id] = result
            if sink is not None:
                sink.write(result.model_dump_json() + "\n")
                sink.flush()
            await report(result)

        try:
            for q in queries:
                if q.id in done:
                    await report(done[q.id])
            async with asyncio.TaskGroup() as group:
                for q in todo:
                    group.create_task(play(q))
        finally:
            if sink is not None:
                sink.close()
        return [done[q.id] for q in queries]

    async def play(self, query: Query) -> QueryResult:
        """Play one query to the end; never raises for agent or emulator failures."""
        started = time.perf_counter()
        agent_s = 0.0
        turns = 0
        reward = 0.0
        error: str | None = None
        scored = True
        score: Score | None = None
        episode: Episode | None = None
        # Opaque: the query id names the label (the injected fault), which a remote agent
        # must not learn from the conversation id.
        context_id = uuid.uuid4().hex
        trajectory: list[TurnRecord] = []
        if self.trajectories is not None:
            self.trajectories[query.id] = trajectory
        try:
            episode = await self._open(query)
            deadline = (
                started + self.config.episode_timeout_s if self.config.episode_timeout_s else None
            )
            while turns < self.max_turns:
                if deadline is not None and time.perf_counter() > deadline:
                    error = f"episode timeout after {self.config.episode_timeout_s:g}s"
                    break
                text = await self._call(episode.observe)
                t0 = time.perf_counter()
                action = await self._ask(Observation(text, context_id, turns, query.id))
                agent_s += time.perf_counter() - t0
                turns += 1
                step = await self._call(episode.step, action)
                trajectory.append(TurnRecord(text, action, step))
                reward += step.reward
                if step.done:
                    break
            score = await self._call(episode.score)
        except AgentUnavailable as exc:  # the model's infrastructure, not the agent
            error = f"agent unavailable: {exc}"
            scored = False
        except AgentError as exc:
            error = f"agent: {exc}"
            score = await self._score_after_error(episode)
        except EmulatorUnavailable as exc:
            error = f"{type(exc).__name__}: {exc}"
            scored = False
        except NetArenaError as exc:
            error = f"{type(exc).__name__}: {exc}"
            scored = turns > 0
        except Exception as exc:  # noqa: BLE001 - one query's crash must not end the run
            log.exception("query %s crashed", query.id)
            error = f"internal error: {type(exc).__name__}: {exc}"
            scored = turns > 0
        finally:
            if episode is not None:
                await self._close(episode)
        correct = bool(score and score.correct and error is None)
        return QueryResult(
            query_id=query.id,
            app=query.app,
            level=query.level,
            label=query.label,
            agent=self.agent.name,
            correct=correct,
            safe=bool(score and score.safe),
            changed=score.changed if score else None,
            collateral=score.collateral if score else None,
            blind_writes=score.blind_writes if score else None,
            qualifiers=query.qualifiers,
            latency_s=round(time.perf_counter() - started, 6),
            agent_latency_s=round(agent_s, 6),
            turns=turns,
            error=error,
            scored=scored,
            details={**(score.details if score else {}), "reward": reward, **self._usage(query)},
        )

    def _usage(self, query: Query) -> dict[str, Any]:
        """What the agent spent on ``query`` (LLM calls, tokens, cost), when it keeps count."""
        usage = getattr(self.agent, "episode_usage", None)
        return dict(usage(query.id)) if callable(usage) else {}

    async def _ask(self, observation: Observation) -> str:
        try:
            return await asyncio.wait_for(
                self.agent.act(observation), timeout=self.config.turn_timeout_s
            )
        except TimeoutError as exc:
            raise AgentError(f"no answer within {self.config.turn_timeout_s:g}s") from exc

    async def _score_after_error(self, episode: Episode | None) -> Score | None:
        """Safety still counts after an agent failure: score the path taken so far."""
        if episode is None:
            return None
        try:
            return await self._call(episode.score)
        except Exception:  # noqa: BLE001 - the agent error is the one worth reporting
            log.exception("scoring after an agent error failed")
            return None

    async def _open(self, query: Query) -> Episode:
        """Open an episode; if cancelled meanwhile, close it once the open finishes.

        The open runs in a thread that cancellation cannot stop; without this, an
        evaluation cancelled while its emulator was being built (a requester leaving, a
        SIGTERM) would leak that emulator (for route, up to 73 network namespaces). The
        orphan is closed by the thread that built it, so it is closed even when the event
        loop is gone by then.
        """
        opening = self._executor.submit(self.app.open, query)
        try:
            return await asyncio.shield(asyncio.wrap_future(opening))
        except asyncio.CancelledError:
            if not opening.cancel():  # already building: close it once built
                opening.add_done_callback(_close_orphan)
            raise

    async def _close(self, episode: Episode) -> None:
        """Close ``episode``, even when the run is cancelled while the close waits its turn.

        A cancelled run does not wait for the episode's running step (which holds one of
        the runner's threads for up to a command's time limit): it closes on a thread of
        its own. Otherwise the close is submitted to the runner's threads outright, so that
        a cancellation arriving before a thread takes it up does not withdraw it (through
        ``run_in_executor`` it did, and the episode leaked: a requester leaving a loaded
        server once left 1 of 12 open).
        """
        task = asyncio.current_task()
        closing: asyncio.Future[None]
        if task is not None and task.cancelling():
            closing = asyncio.ensure_future(asyncio.to_thread(episode.close))
        else:
            closing = asyncio.wrap_future(self._executor.submit(episode.close))
        closing.add_done_callback(functools.partial(_log_failed_close, episode.query.id))
        with contextlib.suppress(Exception):  # logged: cleanup must not hide the result
            await asyncio.shield(closing)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
