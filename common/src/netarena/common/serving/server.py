"""The green agent: one A2A server, generic over ``App``, that evaluates a purple agent.

One request (see ``netarena.common.serving.request``) → one task: it streams progress as status
updates ("query 12/200 · correctness 0.58"), then adds the ``Result`` artifact (one JSON
record per query, then the summary) *before* completing, because the AgentBeats gateway
reads ``task.artifacts`` when it sees ``completed``. Records are JSON text parts so their
integers stay integers for every client (``netarena.common.serving.a2a``); each carries the
participant's role and id, the full effective config, the NetArena version and the seed.

A bad request ends its task ``rejected`` with the reason (as AgentBeats' green-agent
template does) and leaves the server up (a participant role that is not a name is refused
earlier, with HTTP 400 and no task); so does a request over the server's limits
(``ServerLimits``), a purple URL the outbound policy refuses, or a full server. An
evaluation whose queries were mostly unscored (the emulator, not the agent, failed) ends
``failed`` with that reason, so it cannot land on a leaderboard as a score of zero. An
evaluation stops when its requester disconnects or sends ``tasks/cancel`` (``canceled``) or
the server is told to stop (``failed``, resumable in the same context: every finished query
is already saved). Each request gets its own app, agent and runner, so concurrent requests
never share state.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from fastapi import FastAPI

from netarena.common.core.app import App
from netarena.common.core.environment import environment
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import plan_queries
from netarena.common.core.result_files import keyed_name
from netarena.common.core.runner import Runner
from netarena.common.core.stats import summarize
from netarena.common.core.summary import RunSummary
from netarena.common.core.types import Query, QueryResult, query_record
from netarena.common.serving.a2a import (
    BoundedTaskStore,
    a2a_routes,
    agent_card,
    json_part,
    json_records,
    text_of,
)
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.outbound import OutboundPolicy, OutboundRefused, public_url
from netarena.common.serving.remote import RemoteAgent
from netarena.common.serving.request import (
    ParsedRequest,
    load_request,
    parse_request,
    screen_roles,
)
from netarena.common.serving.requester import Requester, current_requester
from netarena.common.serving.status import Board, Entry
from netarena.common.serving.web import WebOptions, agent_web_app

__all__ = ["GreenOptions", "GreenExecutor", "green_app", "netarena_version",
           "UNSCORED_FAIL_FRACTION"]

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5
"""Minimum spacing of progress updates (the last query is always reported)."""
UNSCORED_FAIL_FRACTION = 0.5
"""An evaluation with more than this fraction of unscored queries ends ``failed``."""


def netarena_version() -> str:
    """The installed NetArena version (recorded in every result)."""
    try:
        return version("netarena")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "unknown"


@dataclass(frozen=True)
class GreenOptions:
    """How a green server treats its requesters."""

    results_dir: Path | None = None
    """Per-request JSONL results (a restarted server resumes a repeated request)."""
    limits: ServerLimits = field(default_factory=ServerLimits)
    """Bounds for unauthenticated requesters (``limits.trusted()`` for token holders)."""
    policy: OutboundPolicy = field(default_factory=OutboundPolicy)
    """Which purple URLs may be contacted."""
    app_params: dict[str, Any] = field(default_factory=dict)
    """The operator's app parameters (``serve --param``), under every request's own; the
    only way to set the app's ``operator_fields`` (a kubeconfig, say) on a server."""


class _Evaluation:
    """One request being served: parse, plan, run, report."""

    def __init__(self, app_cls: type[App], updater: TaskUpdater, options: GreenOptions,
                 board: Board) -> None:
        self.app_cls = app_cls
        self.updater = updater
        self.options = options
        self.board = board
        self.entry: Entry | None = None
        self.finished: list[QueryResult] = []
        """Results so far, so a stopped evaluation can still hand them over."""
        self.context: dict[str, Any] = {}
        self.agent_name = ""

    def _say(self, text: str) -> Message:
        return self.updater.new_agent_message([Part(text=text)])

    def _params(self, req: ParsedRequest) -> dict[str, Any]:
        """The app parameters: the operator's, overridden by the request's own."""
        return {**self.options.app_params, **req.app_config}

    def _results_file(self, req: ParsedRequest) -> Path | None:
        """Where a request's results go, so a restarted server resumes it.

        The key holds the A2A context id: a participant URL does not name an agent (the
        AgentBeats gateway hands every submission the same proxy URL), so only a client
        that sends the same request *in the same context* resumes; any other request,
        however alike, plays its queries.
        """
        if self.options.results_dir is None:
            return None
        key = json.dumps(
            [self.app_cls.name, req.url, req.plan.model_dump(), self._params(req),
             self.updater.context_id],
            sort_keys=True,
        )
        return keyed_name(self.options.results_dir, self.app_cls.name, key)  # unpredictable

    async def _admit(self, message: Message, requester: Requester) -> tuple[ParsedRequest,
                                                                         ServerLimits]:
        limits = self.options.limits.trusted() if requester.authenticated else self.options.limits
        req = parse_request(load_request(text_of(message.parts), json_records(message.parts)),
                            self.app_cls, limits=limits)
        try:
            await self.options.policy.check_url(req.url)
        except OutboundRefused as exc:
            raise ConfigError(f"participant {req.role!r} refused: {exc}") from exc
        if self.board.closing:
            raise ConfigError("server stopping; retry later")
        if self.board.running_count() >= limits.max_running:
            raise ConfigError(f"server busy: {limits.max_running} evaluations running; "
                              "retry later")
        return req, limits

    async def _plan(self, app: App, req: ParsedRequest, limits: ServerLimits) -> list[Query]:
        stop = threading.Event()
        try:
            return await asyncio.wait_for(
                asyncio.to_thread(plan_queries, app, req.plan, stop.is_set),
                limits.planning_timeout_s)
        except TimeoutError as exc:
            raise ConfigError(f"planning the queries took over {limits.planning_timeout_s:g}s; "
                              "ask for fewer queries") from exc
        finally:
            stop.set()

    async def run(self, message: Message, requester: Requester) -> None:
        req, limits = await self._admit(message, requester)
        self.entry = entry = self.board.start(Entry(
            self.updater.task_id, self.app_cls.name, req.role, req.url))
        entry.task = asyncio.current_task()
        app = await asyncio.to_thread(self.app_cls, self._params(req))
        queries = await self._plan(app, req, limits)
        entry.total = len(queries)
        run = req.run
        if run.episode_timeout_s is None:
            run = run.model_copy(update={"episode_timeout_s": limits.max_episode_timeout_s})
        agent = RemoteAgent(req.url, timeout_s=run.turn_timeout_s + 5.0,
                            policy=self.options.policy)
        runner = Runner(app, agent, run)
        self.agent_name = public_url(agent.name)
        self.context = {
            "participant_role": req.role, "participant_id": public_url(req.url),
            "netarena_version": netarena_version(), "seed": req.plan.seed,
            "config": {"plan": req.plan.model_dump(mode="json"),
                       "run": {**run.model_dump(mode="json"), "max_turns": runner.max_turns},
                       "app": app.config.model_dump(mode="json")},
        }
        await self.updater.start_work(self._say(
            f"{app.name}: {len(queries)} queries for {req.role} at {public_url(req.url)}, "
            f"seed {req.plan.seed}{''.join(f'; {n}' for n in req.notes)}; "
            f"progress at /evaluations/{entry.public_id}/report"))
        last = 0.0

        async def progress(result: QueryResult, done: int, total: int) -> None:
            nonlocal last
            self.finished.append(result)
            self.board.progress(entry, app=app.name, correct=result.correct,
                                scored=result.scored, latency_s=result.latency_s)
            now = time.monotonic()
            if done == total or now - last >= PROGRESS_EVERY_S:
                last = now
                await self.updater.update_status(TaskState.TASK_STATE_WORKING, self._say(
                    f"query {done}/{total} · correctness {entry.correct / done:.2f}"))

        try:
            results = await runner.run(queries, out=self._results_file(req), on_result=progress)
        finally:
            await agent.aclose()
        await self._report(results)

    async def add_results(self, results: list[QueryResult]) -> RunSummary:
        """Add the ``Result`` artifact (records, then the summary); return the summary."""
        context = self.context
        tools = await asyncio.to_thread(environment)  # the first call runs each tool once
        summary = RunSummary.model_validate({
            **summarize(results, app=self.app_cls.name, agent=self.agent_name,
                        seed=context["seed"]).model_dump(), **context, "environment": tools})
        parts = [json_part(query_record(r, context)) for r in results]
        parts.append(json_part(summary.model_dump(mode="json")))
        await self.updater.add_artifact(parts, name="Result")
        return summary

    async def _report(self, results: list[QueryResult]) -> None:
        summary = await self.add_results(results)
        assert self.entry is not None
        unscored = summary.unscored
        if results and unscored > UNSCORED_FAIL_FRACTION * len(results):
            reasons = "; ".join(sorted({r.error for r in results if not r.scored and r.error}))
            reason = (f"{unscored} of {len(results)} queries unscored (the emulator failed, "
                      "not the agent)")
            self.board.finish(self.entry, "failed", reason, summary, detail=reasons[:500])
            await self.updater.failed(self._say(f"failed: {reason}: {reasons[:500]}"))
            return
        c = summary.correctness
        self.board.finish(self.entry, "completed", summary=summary)
        await self.updater.complete(self._say(
            f"done: {len(results)} queries · correctness {c.rate or 0.0:.3f} "
            f"[{c.ci95[0]:.3f}, {c.ci95[1]:.3f}] · seed {self.context['seed']}"))


class GreenExecutor(AgentExecutor):
    """Runs one evaluation per incoming message, for the app class it was built with.

    Args:
        app_cls: The app to evaluate on; each request builds its own instance.
        options: Results directory, limits and outbound policy.
        board: Where running and recent evaluations are shown (status page, metrics).
    """

    def __init__(self, app_cls: type[App], options: GreenOptions | None = None,
                 board: Board | None = None) -> None:
        self.app_cls = app_cls
        self.options = options or GreenOptions()
        self.board = board or Board()
        self._running: set[str] = set()
        """Tasks whose evaluation runs here now."""
        self._canceled: set[str] = set()
        """Running tasks a ``tasks/cancel`` asked to stop."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Enqueue the task first, then evaluate; any failure ends the task as failed."""
        message = context.message
        task = context.current_task or Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message] if message is not None else [],
        )
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        requester = current_requester.get() or Requester()
        evaluation = _Evaluation(self.app_cls, updater, self.options, self.board)
        self._running.add(task.id)
        try:
            if message is None:
                raise ConfigError("no message in the request")
            await self._until_gone(evaluation.run(message, requester), requester)
        except ConfigError as exc:
            # Cut: an unknown key's name is the requester's, up to the body limit.
            reason = str(exc) if len(str(exc)) <= 2000 else f"{str(exc)[:2000]}..."
            log.info("rejected request: %r", reason)
            if evaluation.entry is not None:  # refused after it started (planning took too long)
                self.board.finish(evaluation.entry, "rejected", reason)
            await updater.reject(updater.new_agent_message([Part(text=f"rejected: {reason}")]))
        except asyncio.CancelledError:
            await self._stopped(evaluation, updater, requester)
        except Exception as exc:  # noqa: BLE001 - the server must survive any evaluation crash
            log.exception("evaluation crashed")
            reason = f"internal error: {type(exc).__name__}: {exc}"
            if evaluation.entry is not None:
                self.board.finish(evaluation.entry, "failed", reason)
            await updater.failed(updater.new_agent_message([Part(text=reason)]))
        finally:
            self._running.discard(task.id)
            self._canceled.discard(task.id)

    @staticmethod
    async def _until_gone(work: Any, requester: Requester) -> None:
        """Run ``work``; cancel it (raising ``CancelledError``) if the requester goes away."""
        task = asyncio.ensure_future(work)
        gone = asyncio.ensure_future(requester.gone.wait())
        try:
            await asyncio.wait({task, gone}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done():
                task.cancel()
            await task
        finally:
            gone.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def _stopped(self, evaluation: _Evaluation, updater: TaskUpdater,
                       requester: Requester) -> None:
        entry = evaluation.entry
        done = f"{entry.done}/{entry.total}" if entry else "0"
        if updater.task_id in self._canceled:
            reason = f"canceled by the requester (tasks/cancel) after {done} queries"
            state = "canceled"
        elif requester.gone.is_set():
            reason = f"requester disconnected after {done} queries; evaluation stopped"
            state = "canceled"
        else:
            reason = (f"server stopping after {done} queries; finished queries are saved "
                      "when the server keeps results: send the same request with contextId "
                      f"{updater.context_id!r} to resume")
            state = "failed"
        log.warning("%s: %s", updater.task_id, reason)
        if entry is not None:
            self.board.finish(entry, state, reason)
        with contextlib.suppress(Exception):
            if evaluation.finished:  # checkpoint: the finished queries, as a partial Result
                await evaluation.add_results(evaluation.finished)
            message = updater.new_agent_message([Part(text=reason)])
            await (updater.cancel(message) if state == "canceled" else updater.failed(message))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Stop a running evaluation on ``tasks/cancel``.

        The SDK cancels ``execute`` right after this returns; the evaluation then ends the
        task ``canceled`` with the reason and the finished queries as a partial ``Result``.
        A task with nothing running here is marked canceled at once.
        """
        task_id = context.task_id or ""
        if task_id in self._running:
            self._canceled.add(task_id)
            return
        updater = TaskUpdater(event_queue, task_id, context.context_id or "")
        await updater.cancel()


def green_app(app_cls: type[App], card_url: str, options: GreenOptions | None = None, *,
              token: str | None = None) -> FastAPI:
    """The green agent's web app for ``app_cls``, its card advertising ``card_url``.

    Args:
        app_cls: The app to evaluate on.
        card_url: The public base URL peers reach this server at.
        options: Results directory, limits, outbound policy.
        token: Optional bearer token (see ``netarena.common.serving.web.WebOptions``).
    """
    options = options or GreenOptions()
    card = agent_card(
        f"netarena-{app_cls.name}",
        f"NetArena green agent for {app_cls.name} ({app_cls.kind}): generates fresh queries, "
        "plays them against one purple agent and scores correctness, safety and latency.",
        card_url,
        'Send {"participants": {"<role>": "<purple url>"}, "config": {...}}; get a Result '
        'artifact with one record per query and a summary with 95% intervals.',
    )
    board = Board()
    executor = GreenExecutor(app_cls, options, board)
    store = BoundedTaskStore(options.limits.max_tasks, options.limits.max_task_bytes)
    card_routes, rpc_routes = a2a_routes(executor, card, store)
    api = agent_web_app(
        card_routes, rpc_routes, title=f"NetArena {app_cls.name} green agent",
        options=WebOptions(options.limits, token, screen=screen_roles), board=board,
        ready=lambda: not board.closing and board.running_count() < options.limits.max_running)
    api.state.task_store = store
    return api
