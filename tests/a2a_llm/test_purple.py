"""The purple agent served over real HTTP: a LiteLLM model behind a fake OpenAI-compatible
server on loopback, agent failures, and the ``netarena purple`` command."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import pytest
from a2a.types import TaskState
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from netarena.a2a_llm import LLMAgent, purple_app
from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError
from netarena.common.serving.remote import RemoteAgent
from netarena.common.serving.server import green_app
from tests.a2a.conftest import evaluate
from tests.a2a.servers import serving
from tests.helpers.toy import ToyApp


def fake_openai(calls: list[dict[str, Any]]) -> Starlette:
    """An OpenAI-compatible chat endpoint whose 'model' solves toy prompts, with reasoning."""

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        calls.append(body)
        prompt = body["messages"][-1]["content"]
        target = int(re.search(r"reach (\d+)", prompt).group(1))
        value = int(re.search(r"value=(-?\d+)", prompt).group(1))
        content = f"Thought: {target - value} to go.\nAction: add {min(3, target - value)}"
        return JSONResponse({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


async def test_litellm_purple_against_fake_openai_solves_toy() -> None:
    calls: list[dict[str, Any]] = []
    async with serving(lambda url: fake_openai(calls)) as llm:
        agent = LLMAgent("openai/fake-model", "react", api_base=llm + "v1", api_key="sk-test")
        async with (
            serving(lambda url: purple_app(agent, url)) as purple,
            serving(lambda url: green_app(ToyApp, url)) as green,
        ):
            out = await evaluate(green, {"participants": {"agent": purple},
                                         "config": {"num_queries": 4, "seed": 2, "levels": [1]}})
    assert out.state == TaskState.TASK_STATE_COMPLETED, out.statuses
    assert out.summary["correctness"]["rate"] == 1.0
    assert calls and all(c["model"] == "fake-model" for c in calls)
    assert calls[0]["messages"][0]["role"] == "system"  # react system prompt
    assert out.summary["latency"]["mean_turns"] > 1
    multi = [c for c in calls if len(c["messages"]) > 2]
    assert multi, "ReAct replays earlier turns of the same context"


class Broken:
    name = "broken"

    async def act(self, observation: Observation) -> str:
        raise AgentError("model quota exhausted")


async def test_agent_failure_is_reported_as_a_failed_task() -> None:
    async with serving(lambda url: purple_app(Broken(), url)) as purple:
        agent = RemoteAgent(purple, timeout_s=10)
        with pytest.raises(AgentError, match="task failed: AgentError: model quota exhausted"):
            await agent.act(Observation("hi", "c", 0))
        await agent.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
async def test_netarena_purple_command_serves_null_agent() -> None:
    port = _free_port()
    cmd = [sys.executable, "-c", "from netarena.common.cli.root import main; main()", "purple",
           "--solver", "null", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    url = f"http://127.0.0.1:{port}/"
    try:
        async with httpx.AsyncClient(timeout=2) as http:
            deadline = time.monotonic() + 120  # over a minute on 2 busy cores
            while True:
                try:
                    card = (await http.get(url + ".well-known/agent-card.json")).json()
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        pytest.fail(f"purple did not start: {proc.stderr.read1().decode()}")
                    await asyncio.sleep(0.2)
        assert card["name"] == "netarena-purple-null"
        agent = RemoteAgent(url, timeout_s=10)
        assert await agent.act(Observation("anything", "c", 0)) == ""
        await agent.aclose()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("args, message", [
    (["--solver", "reference"], "needs --app"),
    (["--solver", "oracle"], "unknown solver 'oracle'"),
    (["--solver", "litellm", "--strategy", "tot", "--model", "x"], "unknown strategy 'tot'"),
])
def test_netarena_purple_rejects_bad_options(args: list[str], message: str) -> None:
    import typer
    from typer.testing import CliRunner

    from netarena.a2a_llm.cli import purple

    cli = typer.Typer()  # one command: invoked without its name
    cli.command()(purple)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    assert message in result.output


def test_netarena_serve_rejects_unknown_app() -> None:
    from typer.testing import CliRunner

    from netarena.common.cli.root import cli

    result = CliRunner().invoke(cli, ["serve", "nosuchapp"])
    assert result.exit_code == 2 and "unknown app 'nosuchapp'" in result.output



class _Computing:
    """Holds its thread until told to go on, as the reference solvers hold it planning."""

    name = "computing"

    def __init__(self) -> None:
        self.started = threading.Event()
        self.go_on = threading.Event()

    async def act(self, observation: Observation) -> str:
        self.started.set()
        return "went on" if self.go_on.wait(20) else "never told to go on"  # never awaits


async def test_the_server_answers_while_its_agent_computes() -> None:
    """The agent runs off the server's loop: what the loop serves goes on meanwhile.

    On the server's loop, an agent that computed held it, and on resuming the server found
    the body timers of turns that had arrived meanwhile expired: an HTTP 408 for a turn
    sent in time (the likely end of a k8s reference episode on a loaded CI host).
    """
    agent = _Computing()

    def check_health(url: str) -> int:
        assert agent.started.wait(60)
        status = httpx.get(url + "healthz", timeout=60).status_code
        agent.go_on.set()  # only once the server has answered
        return status

    async with serving(lambda url: purple_app(agent, url)) as url:
        health = asyncio.create_task(asyncio.to_thread(check_health, url))
        reply = await RemoteAgent(url, timeout_s=120).act(Observation("hi", "c1", 0))
        assert await health == 200
    assert reply == "went on"
