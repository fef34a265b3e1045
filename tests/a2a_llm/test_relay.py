"""The strategies reuse the one LiteLLM relay in ``netarena.common.core.agents``.

LiteLLM's mock stands in for a provider.
"""

from __future__ import annotations

import pytest

from netarena.a2a_llm import LLMAgent
from netarena.common.core.agents import LiteLLMAgent, Observation
from netarena.common.core.errors import AgentError


class Shouting(LiteLLMAgent):
    """A strategy written only with the relay's hooks."""

    def messages(self, observation: Observation) -> list[dict[str, str]]:
        return [{"role": "system", "content": "shout"}, *super().messages(observation)]

    def finish(self, reply: str, observation: Observation) -> str:
        return f"{reply.upper()}@{observation.turn}"


def test_strategies_are_the_common_relay() -> None:
    agent = LLMAgent("openai/fake", "cot")
    assert isinstance(agent, LiteLLMAgent)
    assert type(agent).act is LiteLLMAgent.act  # no second LiteLLM call site


async def test_the_relay_sends_messages_and_finishes_the_reply() -> None:
    plain = LiteLLMAgent("openai/fake", mock_response="add 3")
    assert plain.name == "litellm:openai/fake"
    assert await plain.act(Observation("task", "c", 0)) == "add 3"
    agent = Shouting("openai/fake", mock_response="add 3")
    assert agent.messages(Observation("task", "c", 2))[0] == {"role": "system", "content": "shout"}
    assert await agent.act(Observation("task", "c", 2)) == "ADD 3@2"


async def test_the_relay_wraps_provider_failures() -> None:
    agent = Shouting("openai/fake", mock_response=Exception("provider down"))
    with pytest.raises(AgentError, match="provider down"):
        await agent.act(Observation("task", "c", 0))
