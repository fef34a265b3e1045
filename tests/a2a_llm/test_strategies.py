"""LiteLLM strategies with LiteLLM's own mock (no network)."""

from __future__ import annotations

import pytest

from netarena.a2a_llm import STRATEGIES, LLMAgent, from_env
from netarena.common.core.agents import DEFAULT_MAX_TOKENS, Observation
from netarena.common.core.errors import AgentError, ConfigError


def obs(text: str, ctx: str = "c1", turn: int = 0) -> Observation:
    return Observation(text, ctx, turn)


async def test_zeroshot_is_a_plain_relay() -> None:
    agent = LLMAgent("openai/fake", "zeroshot", mock_response="add 3")
    assert agent.messages(obs("task")) == [{"role": "user", "content": "task"}]
    assert await agent.act(obs("task")) == "add 3"


@pytest.mark.parametrize("strategy", ["fewshot", "cot", "react"])
def test_other_strategies_add_a_system_prompt(strategy: str) -> None:
    messages = LLMAgent("openai/fake", strategy).messages(obs("task"))
    assert messages[0]["role"] == "system" and messages[-1] == {"role": "user", "content": "task"}


async def test_cot_returns_only_the_answer() -> None:
    reply = "The value is 3 and the target 9.\nWe need 6 more.\n**Answer:** add 3"
    agent = LLMAgent("openai/fake", "cot", mock_response=reply)
    assert await agent.act(obs("task")) == "add 3"
    fenced = "Reasoning...\nAnswer:\n```python\ndef process_graph(g):\n    return 1\n```"
    agent = LLMAgent("openai/fake", "cot", mock_response=fenced)
    assert await agent.act(obs("task")) == "```python\ndef process_graph(g):\n    return 1\n```"
    agent = LLMAgent("openai/fake", "cot", mock_response="no marker at all")
    assert await agent.act(obs("task")) == "no marker at all"


async def test_react_keeps_memory_per_context() -> None:
    agent = LLMAgent("openai/fake", "react", memory_turns=2,
                     mock_response="Thought: value low\nAction: add 1")
    assert await agent.act(obs("state 0", "a")) == "add 1"
    await agent.act(obs("state 1", "a"))
    await agent.act(obs("other", "b"))
    messages = agent.messages(obs("state 2", "a"))
    assert [m["content"] for m in messages[1:]] == [
        "state 0", "Thought: value low\nAction: add 1",
        "state 1", "Thought: value low\nAction: add 1", "state 2"]
    await agent.act(obs("state 2", "a"))
    contents = [m["content"] for m in agent.messages(obs("state 3", "a"))]
    assert "state 0" not in contents and "state 1" in contents  # bounded memory
    assert [m["content"] for m in agent.messages(obs("next", "b"))][1] == "other"


async def test_provider_failure_is_an_agent_error() -> None:
    agent = LLMAgent("openai/fake", "zeroshot", mock_response=Exception("provider down"))
    with pytest.raises(AgentError, match="provider down"):
        await agent.act(obs("task"))


def test_unknown_strategy_is_rejected() -> None:
    with pytest.raises(ConfigError, match="unknown strategy 'tot'"):
        LLMAgent("openai/fake", "tot")
    assert STRATEGIES == ("zeroshot", "fewshot", "cot", "react")


def test_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MODEL_NAME", raising=False)
    with pytest.raises(ConfigError, match="set MODEL_NAME"):
        from_env()
    monkeypatch.setenv("MODEL_NAME", "openai/gpt-4o-mini")
    monkeypatch.setenv("MODEL_API_BASE", "http://127.0.0.1:1/v1")
    monkeypatch.setenv("MODEL_TEMPERATURE", "0.2")
    agent = from_env("react")
    assert agent.name == "openai/gpt-4o-mini:react"
    assert agent._kwargs == {"api_base": "http://127.0.0.1:1/v1", "temperature": 0.2,
                             "max_tokens": DEFAULT_MAX_TOKENS}
    monkeypatch.setenv("MODEL_MAX_TOKENS", "lots")
    with pytest.raises(ConfigError, match="MODEL_MAX_TOKENS"):
        from_env()


def test_react_memory_is_bounded_in_characters() -> None:
    """Anyone who reaches a purple agent chooses its context ids and prompt sizes (up to
    the 1 MiB body limit): 1,024 contexts x 6 turns of 1 MB prompts would hold 6 GB."""
    from netarena.a2a_llm import strategies

    agent = LLMAgent("openai/fake", "react")
    for i in range(40):
        agent.finish("Action: add 1", obs("p" * 1_000_000, f"ctx{i}"))
    held = sum(len(seen) + len(said) for memory in agent._memory.values()
               for seen, said in memory)
    assert held <= strategies.MAX_MEMORY_CHARS
    assert "ctx39" in agent._memory and "ctx0" not in agent._memory  # the oldest go first
