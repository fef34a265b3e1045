"""One env.list for both: ``netarena run --agent litellm:...`` reads the purple's settings."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from typer.testing import CliRunner

from netarena.a2a_llm import from_env
from netarena.common.cli.root import cli
from netarena.common.core.agents import (
    DEFAULT_MAX_TOKENS,
    MODEL_CHECK_PROMPT,
    Observation,
    completion_settings,
)
from netarena.common.core.app import load_app
from netarena.common.core.errors import ConfigError
from netarena.common.serving.agent_spec import make_agent
from tests.a2a.servers import serving
from tests.helpers.toy import ToyApp

ENV = ("MODEL_API_BASE", "MODEL_TEMPERATURE", "MODEL_MAX_TOKENS")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_settings_default_to_a_bounded_output() -> None:
    assert completion_settings({}) == {"max_tokens": DEFAULT_MAX_TOKENS}
    assert completion_settings({"MODEL_API_BASE": "http://127.0.0.1:8080/v1",
                                "MODEL_TEMPERATURE": "0", "MODEL_MAX_TOKENS": "256"}) == {
        "api_base": "http://127.0.0.1:8080/v1", "temperature": 0.0, "max_tokens": 256}
    assert completion_settings({"MODEL_MAX_TOKENS": "0"}) == {}  # the provider's own default
    for bad in ({"MODEL_MAX_TOKENS": "lots"}, {"MODEL_TEMPERATURE": "warm"},
                {"MODEL_MAX_TOKENS": "-5"}):
        with pytest.raises(ConfigError, match="MODEL_"):
            completion_settings(bad)


def test_cli_agent_and_purple_read_the_same_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODEL_API_BASE", "http://127.0.0.1:8080/v1")
    monkeypatch.setenv("MODEL_TEMPERATURE", "0.3")
    monkeypatch.setenv("MODEL_NAME", "openai/local")
    cli_agent = make_agent("litellm:openai/local", ToyApp())
    purple = from_env()
    assert cli_agent._kwargs == purple._kwargs == {  # type: ignore[attr-defined]
        "api_base": "http://127.0.0.1:8080/v1", "temperature": 0.3,
        "max_tokens": DEFAULT_MAX_TOKENS}


def _openai_compatible(calls: list[dict[str, Any]]) -> Starlette:
    """A local OpenAI-compatible server (as vLLM, Ollama or llama.cpp's serve) that
    answers with the malt reference solver and records every request body (the start-up
    check's one-token request is answered ``OK``)."""
    solver = load_app("malt").reference_agent()

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        calls.append(body)
        prompt = body["messages"][-1]["content"]
        checked = prompt == MODEL_CHECK_PROMPT
        text = "OK" if checked else await solver.act(Observation(prompt, "c", 0))
        return JSONResponse({
            "id": f"chatcmpl-{len(calls)}", "object": "chat.completion", "created": 0,
            "model": body["model"], "usage": {"prompt_tokens": 100, "completion_tokens": 50,
                                              "total_tokens": 150},
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": text}}]})

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


async def test_netarena_run_reaches_a_local_model_at_model_api_base(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[dict[str, Any]] = []
    async with serving(lambda url: _openai_compatible(calls)) as llm:
        monkeypatch.setenv("MODEL_API_BASE", llm + "v1")
        monkeypatch.setenv("MODEL_TEMPERATURE", "0")
        monkeypatch.setenv("MODEL_MAX_TOKENS", "512")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local")  # local servers take any key
        result = await asyncio.to_thread(CliRunner().invoke, cli, [
            "run", "malt", "--agent", "litellm:openai/local-model", "-n", "3", "--seed", "4",
            "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["errors"] == 0 and summary["correctness"]["rate"] == 1.0
    check, *queries = calls  # the start-up check first, then one call per query
    assert check["messages"][-1]["content"] == MODEL_CHECK_PROMPT and check["max_tokens"] == 1
    assert len(queries) == 3
    for body in calls:
        assert body["model"] == "local-model" and body["temperature"] == 0
    assert all(body["max_tokens"] == 512 for body in queries)
