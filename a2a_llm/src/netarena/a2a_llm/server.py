"""The purple agent's A2A server: any ``Agent`` behind one JSON-RPC endpoint.

Each incoming message is one turn: its text becomes an ``Observation`` (with the sender's
``context_id`` and a per-context turn counter), the agent's answer goes back as a single
agent Message (over ``message/send`` or, as one event, ``message/stream``: the AgentBeats
gateway and many clients stream). An agent failure is reported as a failed Task carrying
the reason, so the green side records it instead of waiting.

The agent runs on an event loop of its own, in its own thread: an agent that computes
without awaiting (the reference solvers plan for seconds) would otherwise hold the server's
loop, and on resuming it the server's guards would find other requests' body and header
timers expired (an HTTP 408 for a turn the green had sent in time).
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Coroutine
from typing import Any, TypeVar

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus
from fastapi import FastAPI

from netarena.common.core.agents import Agent, Observation
from netarena.common.serving.a2a import (
    BoundedTaskStore,
    a2a_routes,
    agent_card,
    data_parts,
    text_of,
)
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.web import WebOptions, agent_web_app

__all__ = ["PurpleExecutor", "purple_app"]

log = logging.getLogger(__name__)

MAX_CONTEXTS = 4096
"""Turn counters kept (least recently used dropped), so memory stays bounded."""

T = TypeVar("T")
_agent_loop: asyncio.AbstractEventLoop | None = None
_agent_loop_lock = threading.Lock()


async def on_agent_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` run on the process's agent loop (one daemon thread, started once).

    Cancelling the caller cancels ``coro`` there.
    """
    global _agent_loop
    with _agent_loop_lock:
        if _agent_loop is None:
            _agent_loop = asyncio.new_event_loop()
            threading.Thread(target=_agent_loop.run_forever, name="purple-agent",
                             daemon=True).start()
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, _agent_loop))


class PurpleExecutor(AgentExecutor):
    """Answers each message with ``agent.act``.

    Args:
        agent: The agent to serve (LiteLLM strategy, reference solver, null).
    """

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._turns: OrderedDict[str, int] = OrderedDict()

    def _next_turn(self, context_id: str) -> int:
        turn = self._turns.pop(context_id, -1) + 1
        self._turns[context_id] = turn
        while len(self._turns) > MAX_CONTEXTS:
            self._turns.popitem(last=False)
        return turn

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Reply with one agent Message, or a failed Task with the reason."""
        message = context.message
        context_id = context.context_id or ""
        parts = message.parts if message is not None else []
        text = text_of(parts) or "\n".join(json.dumps(d) for d in data_parts(parts))
        try:
            answer = await on_agent_loop(self.agent.act(
                Observation(text, context_id, self._next_turn(context_id))
            ))
        except Exception as exc:  # noqa: BLE001 - any agent failure is reported to the caller
            log.warning("agent %s failed: %s", self.agent.name, exc)
            reason = Message(
                role=Role.ROLE_AGENT, message_id=f"{context.task_id}-error",
                context_id=context_id, task_id=context.task_id or "",
                parts=[Part(text=f"{type(exc).__name__}: {exc}")],
            )
            await event_queue.enqueue_event(Task(
                id=context.task_id or "", context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_FAILED, message=reason),
            ))
            return
        await event_queue.enqueue_event(Message(
            role=Role.ROLE_AGENT, message_id=f"{context.task_id}-reply",
            context_id=context_id, parts=[Part(text=answer)],
        ))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Turns are short and stateless on our side: nothing to cancel."""


def purple_app(agent: Agent, card_url: str, limits: ServerLimits | None = None) -> FastAPI:
    """The purple agent's web app serving ``agent``, its card advertising ``card_url``.

    It has the green agent's HTTP guards (body and header limits, bounded task store) and
    its ``/healthz``, ``/readyz`` and ``/metrics``; its status page lists no evaluations.
    """
    card = agent_card(
        f"netarena-purple-{agent.name}",
        f"NetArena purple agent answering with {agent.name}.",
        card_url,
        "Send the complete task prompt as text; get the next action (code, JSON or command).",
    )
    limits = limits or ServerLimits()
    card_routes, rpc_routes = a2a_routes(PurpleExecutor(agent), card,
                                         BoundedTaskStore(limits.max_tasks, limits.max_task_bytes))
    return agent_web_app(card_routes, rpc_routes, title=f"NetArena purple agent ({agent.name})",
                         options=WebOptions(limits))
