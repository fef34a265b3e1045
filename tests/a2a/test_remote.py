"""RemoteAgent: the A2A client behind ``netarena run APP --agent http://...``."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import pytest

from netarena.a2a_llm import purple_app
from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError, AgentTimeout
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.stats import summarize
from netarena.common.serving.agent_spec import make_agent
from netarena.common.serving.remote import RemoteAgent
from tests.a2a.servers import http_response, message_result, prompt_of, raw_server, serving
from tests.helpers.toy import ToyApp


class Recorder:
    """An agent that remembers what it was asked."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[Observation] = []

    async def act(self, observation: Observation) -> str:
        self.seen.append(observation)
        return f"echo {observation.turn}"


async def test_run_against_remote_reference_scores_one() -> None:
    app = ToyApp()
    async with serving(lambda url: purple_app(app.reference_agent(), url)) as purple:
        agent = make_agent(purple, app)
        assert isinstance(agent, RemoteAgent)
        queries = plan_queries(app, QueryPlan(num_queries=6, seed=5))
        results = await Runner(app, agent, RunConfig(concurrency=3)).run(queries)
        await agent.aclose()
    summary = summarize(results, app="toy", agent=agent.name, seed=5)
    assert summary.correctness.rate == 1.0 and summary.agent == purple
    assert all(r.turns >= 1 and r.agent_latency_s > 0 for r in results)


async def test_context_id_and_turns_reach_the_purple_agent() -> None:
    recorder = Recorder()
    async with serving(lambda url: purple_app(recorder, url)) as purple:
        agent = RemoteAgent(purple, timeout_s=10)
        replies = [await agent.act(Observation(f"prompt {i}", ctx, i))
                   for ctx in ("episode-a", "episode-b") for i in range(2)]
        await agent.aclose()
    assert replies == ["echo 0", "echo 1", "echo 0", "echo 1"]
    assert [(o.context_id, o.turn, o.text) for o in recorder.seen] == [
        ("episode-a", 0, "prompt 0"), ("episode-a", 1, "prompt 1"),
        ("episode-b", 0, "prompt 0"), ("episode-b", 1, "prompt 1")]


async def test_connection_refused_is_retried_until_the_agent_is_up() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens yet: connections are refused
    recorder = Recorder()
    agent = RemoteAgent(f"http://127.0.0.1:{port}/", timeout_s=10, retries=5, backoff_s=0.1)

    async def start_late() -> Any:
        await asyncio.sleep(0.4)
        from tests.a2a.servers import uvicorn  # the same server runner, on the fixed port

        config = uvicorn.Config(purple_app(recorder, f"http://127.0.0.1:{port}/"),
                                host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        return server, asyncio.create_task(server.serve())

    starter = asyncio.create_task(start_late())
    reply = await agent.act(Observation("hello", "c1", 0))
    server, task = await starter
    await agent.aclose()
    server.should_exit = True
    await task
    assert reply == "echo 0"


async def test_unreachable_agent_gives_up_with_a_clear_reason() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    agent = RemoteAgent(f"http://127.0.0.1:{port}/", retries=2, backoff_s=0.01)
    with pytest.raises(AgentError, match=f"cannot connect to http://127.0.0.1:{port}/"):
        await agent.act(Observation("hello", "c1", 0))


async def test_http_errors_are_not_retried() -> None:
    posts = 0

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        nonlocal posts
        posts += 1
        writer.write(http_response(503, b"busy"))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, retries=3, backoff_s=0.01)
        with pytest.raises(AgentError, match="HTTP 503"):
            await agent.act(Observation("hello", "c1", 0))
        await agent.aclose()
    assert posts == 1


async def test_http_timeout_is_explicit_not_the_sdk_default() -> None:
    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        await asyncio.sleep(1.0)
        writer.write(http_response(200, message_result(rpc["id"], "late")))

    async with raw_server(on_post) as url:
        slow_ok = RemoteAgent(url, timeout_s=10)
        assert await slow_ok.act(Observation("hi", "c", 0)) == "late"
        impatient = RemoteAgent(url, timeout_s=0.3)
        with pytest.raises(AgentTimeout, match="did not answer within 0.3s"):
            await impatient.act(Observation("hi", "c", 0))
        for agent in (slow_ok, impatient):
            await agent.aclose()


async def test_03_purple_reply_text_and_huge_reply_is_capped() -> None:
    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        text = "y" * 1_000_000 if "huge" in prompt_of(rpc) else "ok: " + prompt_of(rpc)
        writer.write(http_response(200, message_result(rpc["id"], text)))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=10)
        assert await agent.act(Observation("ping", "c", 0)) == "ok: ping"
        from netarena.common.core.replies import MAX_REPLY_CHARS

        assert len(await agent.act(Observation("huge", "c", 1))) == MAX_REPLY_CHARS
        await agent.aclose()


class TaskReplyExecutor:
    """A 1.x purple agent in the AgentBeats-template style: answers with a Task whose
    artifact carries the text (after a working status), or fails it with a reason."""

    async def execute(self, context, event_queue) -> None:
        from a2a.server.tasks import TaskUpdater
        from a2a.types import Part, Task, TaskState, TaskStatus

        await event_queue.enqueue_event(Task(
            id=context.task_id, context_id=context.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work(updater.new_agent_message([Part(text="thinking")]))
        prompt = context.get_user_input()
        if "fail" in prompt:
            await updater.failed(updater.new_agent_message([Part(text="cannot do that")]))
            return
        await updater.add_artifact([Part(text="answer to " + prompt)], name="answer")
        await updater.complete()

    async def cancel(self, context, event_queue) -> None:
        return None


async def test_task_replies_are_read_from_artifacts_and_failures_named() -> None:
    from starlette.applications import Starlette

    from netarena.common.serving.a2a import BoundedTaskStore, a2a_routes, agent_card

    def build(url: str):
        card_routes, rpc_routes = a2a_routes(
            TaskReplyExecutor(), agent_card("task-purple", "t", url, "t"), BoundedTaskStore(8))
        return Starlette(routes=card_routes + rpc_routes)

    async with serving(build) as url:
        agent = RemoteAgent(url, timeout_s=10)
        assert await agent.act(Observation("q1", "c", 0)) == "answer to q1"
        with pytest.raises(AgentError, match="agent reported task failed: cannot do that"):
            await agent.act(Observation("please fail", "c", 1))
        await agent.aclose()


async def test_reply_bodies_are_capped_in_bytes() -> None:
    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        writer.write(http_response(200, message_result(rpc["id"], "z" * 3_000_000)))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=10, max_reply_bytes=2_000_000)
        with pytest.raises(AgentError, match="sent a reply over 2000000 bytes"):
            await agent.act(Observation("hi", "c", 0))
        roomy = RemoteAgent(url, timeout_s=10)
        assert len(await roomy.act(Observation("hi", "c", 0))) == 200_000
        for a in (agent, roomy):
            await a.aclose()
