"""The green agent: one A2A server, generic over ``App``, that evaluates a purple agent.

One request (see ``netarena.common.request``) → one task: it streams progress as status
updates ("query 12/200 · correctness 0.58"), then adds the ``Result`` artifact (one DataPart
per query, then the summary) *before* completing, because the AgentBeats gateway reads
``task.artifacts`` when it sees ``completed``. A bad request or a crash fails that task with
the reason and leaves the server up; each request gets its own app, agent and runner, so
concurrent requests never share state.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Part, Task, TaskState, TaskStatus
from starlette.applications import Starlette

from netarena.common.a2a import a2a_app, agent_card, data_part, data_parts, text_of
from netarena.common.app import App
from netarena.common.errors import ConfigError
from netarena.common.remote import RemoteAgent
from netarena.common.request import ParsedRequest, load_request, parse_request
from netarena.common.result_files import keyed_name
from netarena.common.runner import Runner, plan_queries
from netarena.common.stats import summarize
from netarena.common.types import QueryResult

__all__ = ["GreenExecutor", "green_app", "query_record"]

log = logging.getLogger(__name__)

PROGRESS_EVERY_S = 0.5
"""Minimum spacing of progress updates (the last query is always reported)."""


def query_record(result: QueryResult) -> dict[str, Any]:
    """The flat per-query record of the ``Result`` artifact: core fields plus app details.

    A detail whose name collides with a core field is kept as ``details_<name>``.
    """
    record = result.model_dump(exclude={"details"})
    for key, value in result.details.items():
        record[f"details_{key}" if key in record else key] = value
    return record


class _Evaluation:
    """One request being served: parse, plan, run, report."""

    def __init__(self, app_cls: type[App], updater: TaskUpdater, results_dir: Path | None):
        self.app_cls = app_cls
        self.updater = updater
        self.results_dir = results_dir

    def _say(self, text: str) -> Message:
        return self.updater.new_agent_message([Part(text=text)])

    def _results_file(self, req: ParsedRequest) -> Path | None:
        """Where a seeded request's results go, so a restarted server resumes it."""
        if self.results_dir is None:
            return None
        key = json.dumps(
            [self.app_cls.name, req.url, req.plan.model_dump(), req.app_config], sort_keys=True
        )
        return keyed_name(self.results_dir, self.app_cls.name, key)  # unpredictable name

    async def run(self, message: Message) -> None:
        req = parse_request(
            load_request(text_of(message.parts), data_parts(message.parts)), self.app_cls
        )
        app = await asyncio.to_thread(self.app_cls, req.app_config)
        queries = await asyncio.to_thread(plan_queries, app, req.plan)
        agent = RemoteAgent(req.url, timeout_s=req.run.turn_timeout_s + 5.0)
        runner = Runner(app, agent, req.run)
        notes = "".join(f"; {n}" for n in req.notes)
        await self.updater.start_work(self._say(
            f"{app.name}: {len(queries)} queries for {req.role} at {req.url}, "
            f"seed {req.plan.seed}{notes}"
        ))
        correct = 0
        last = 0.0

        async def progress(result: QueryResult, done: int, total: int) -> None:
            nonlocal correct, last
            correct += int(result.correct)
            now = time.monotonic()
            if done == total or now - last >= PROGRESS_EVERY_S:
                last = now
                await self.updater.update_status(TaskState.TASK_STATE_WORKING, self._say(
                    f"query {done}/{total} · correctness {correct / done:.2f}"
                ))

        try:
            results = await runner.run(queries, out=self._results_file(req), on_result=progress)
        finally:
            await agent.aclose()
        summary = summarize(results, app=app.name, agent=agent.name, seed=req.plan.seed)
        parts = [data_part(query_record(r)) for r in results] + [data_part(summary)]
        await self.updater.add_artifact(parts, name="Result")
        c = summary["correctness"]
        await self.updater.complete(self._say(
            f"done: {len(results)} queries · correctness {c['rate']:.3f} "
            f"[{c['ci95'][0]:.3f}, {c['ci95'][1]:.3f}] · seed {req.plan.seed}"
        ))


class GreenExecutor(AgentExecutor):
    """Runs one evaluation per incoming message, for the app class it was built with.

    Args:
        app_cls: The app to evaluate on; each request builds its own instance.
        results_dir: Optional directory for per-request JSONL results (resume after a crash).
    """

    def __init__(self, app_cls: type[App], results_dir: Path | None = None) -> None:
        self.app_cls = app_cls
        self.results_dir = results_dir

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
        try:
            if message is None:
                raise ConfigError("no message in the request")
            await _Evaluation(self.app_cls, updater, self.results_dir).run(message)
        except ConfigError as exc:
            log.info("rejected request: %s", exc)
            await updater.failed(updater.new_agent_message([Part(text=f"rejected: {exc}")]))
        except Exception as exc:  # noqa: BLE001 - the server must survive any evaluation crash
            log.exception("evaluation crashed")
            await updater.failed(updater.new_agent_message(
                [Part(text=f"internal error: {type(exc).__name__}: {exc}")]
            ))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task canceled (the SDK has already cancelled ``execute``)."""
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def green_app(app_cls: type[App], card_url: str, results_dir: Path | None = None) -> Starlette:
    """The green agent's ASGI app for ``app_cls``, with its card advertising ``card_url``."""
    card = agent_card(
        f"netarena-{app_cls.name}",
        f"NetArena green agent for {app_cls.name} ({app_cls.kind}): generates fresh queries, "
        "plays them against one purple agent and scores correctness, safety and latency.",
        card_url,
        'Send {"participants": {"<role>": "<purple url>"}, "config": {...}}; get a Result '
        'artifact with one record per query and a summary with 95% intervals.',
    )
    return a2a_app(GreenExecutor(app_cls, results_dir), card)
