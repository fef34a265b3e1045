"""LiteLLM prompting strategies for the purple agent: zero-shot, few-shot, CoT, ReAct.

The green agent's prompts are complete (role, task, answer format, history), so zero-shot
is a plain relay with no system prompt, like the reference ``a2a_llm``. The other
strategies add a system prompt; chain-of-thought and ReAct let the model reason first and
return only what follows the last ``Answer:`` / ``Action:`` marker. ReAct also keeps the
model's own past thoughts per ``context_id`` (the green prompt never echoes them).
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict, deque
from typing import Any, Literal, get_args

from netarena.common.core.agents import LiteLLMAgent, Observation, completion_settings
from netarena.common.core.errors import ConfigError

__all__ = ["Strategy", "STRATEGIES", "LLMAgent", "from_env"]

Strategy = Literal["zeroshot", "fewshot", "cot", "react"]
STRATEGIES: tuple[str, ...] = get_args(Strategy)

MAX_CONTEXTS = 1024
"""ReAct memories kept (least recently used dropped)..."""
MAX_MEMORY_CHARS = 32 * 2**20
"""...and the characters they hold together (whoever reaches the agent chooses context ids
and prompt sizes; the current context is kept whatever its size)."""

FEWSHOT = """You operate networks. Answer exactly in the format the task asks for.
Examples of well-formed answers:
- Datacenter topology task (Python): 
```python
def process_graph(graph_data):
    count = sum(1 for _, d in graph_data.nodes(data=True) if 'EK_PORT' in d['type'])
    return {"type": "text", "data": count, "updated_graph": graph_data}
```
- Routing task (one shell command on one machine):
{"machine": "r0", "command": "sysctl -w net.ipv4.ip_forward=1"}
- Kubernetes task (one kubectl command): ```kubectl get networkpolicy -o yaml```
Give only the answer, with no commentary."""

COT = """Think step by step about the task and the current state first.
Then write a line `Answer:` followed by only the answer, in exactly the format the task asks for."""

REACT = """You solve the task over several turns. Each turn write:
Thought: your reasoning about the latest observation
Action: only the next action, in exactly the format the task asks for
Nothing may follow the action."""

_SYSTEM = {"zeroshot": None, "fewshot": FEWSHOT, "cot": COT, "react": REACT}
_MARKER = {"cot": "answer", "react": "action"}


def _after_marker(text: str, marker: str) -> str:
    """The text after the last line starting with ``marker:`` (the whole text if none)."""
    found = list(re.finditer(rf"^[ \t>*_#]*(?:final[ \t]+)?{marker}[*_]*[ \t]*:[*_]*[ \t]*",
                             text, re.IGNORECASE | re.MULTILINE))
    return text[found[-1].end():].strip() if found else text


def _chars(memory: deque[tuple[str, str]]) -> int:
    return sum(len(seen) + len(said) for seen, said in memory)


class LLMAgent(LiteLLMAgent):
    """A LiteLLM model answering with one of the ``STRATEGIES``.

    The call itself is ``LiteLLMAgent``'s; a strategy only shapes the messages and the reply.

    Args:
        model: LiteLLM model name (``openai/gpt-4o-mini``, ``anthropic/...``).
        strategy: ``zeroshot``, ``fewshot``, ``cot`` or ``react``.
        memory_turns: ReAct exchanges replayed to the model each turn.
        **completion_kwargs: Passed to ``litellm.acompletion`` (``api_base``,
            ``temperature``, ``mock_response`` in tests, ...).
    """

    def __init__(
        self, model: str, strategy: str = "zeroshot", *, memory_turns: int = 6,
        **completion_kwargs: Any,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ConfigError(f"unknown strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")
        super().__init__(model, **completion_kwargs)
        self.strategy = strategy
        self.name = f"{model}:{strategy}"
        self.memory_turns = memory_turns
        self._memory: OrderedDict[str, deque[tuple[str, str]]] = OrderedDict()
        self._memory_chars = 0

    def messages(self, observation: Observation) -> list[dict[str, str]]:
        """The chat messages sent for this observation (memory included for ReAct)."""
        system = _SYSTEM[self.strategy]
        messages = [{"role": "system", "content": system}] if system else []
        if self.strategy == "react":
            for seen, said in self._memory.get(observation.context_id, ()):
                messages += [{"role": "user", "content": seen},
                             {"role": "assistant", "content": said}]
        return messages + [{"role": "user", "content": observation.text}]

    def _remember(self, context_id: str, seen: str, said: str) -> None:
        """Keep the exchange; drop the least recently used contexts while over a bound."""
        memory = self._memory.pop(context_id, None) or deque(maxlen=self.memory_turns)
        self._memory_chars -= _chars(memory)
        memory.append((seen, said))
        self._memory_chars += _chars(memory)
        self._memory[context_id] = memory
        while len(self._memory) > 1 and (len(self._memory) > MAX_CONTEXTS
                                         or self._memory_chars > MAX_MEMORY_CHARS):
            self._memory_chars -= _chars(self._memory.popitem(last=False)[1])

    def finish(self, reply: str, observation: Observation) -> str:
        """Remember the exchange (ReAct); return the answer part of the reply."""
        if self.strategy == "react":
            self._remember(observation.context_id, observation.text, reply)
        marker = _MARKER.get(self.strategy)
        return _after_marker(reply, marker) if marker else reply


def from_env(strategy: str = "zeroshot", model: str | None = None) -> LLMAgent:
    """Build an ``LLMAgent`` from the environment (see ``env.list.example``).

    ``MODEL_NAME`` names the model; ``MODEL_API_BASE``, ``MODEL_TEMPERATURE`` and
    ``MODEL_MAX_TOKENS`` are read by ``netarena.common.core.agents.completion_settings``, as for
    ``netarena run --agent litellm:MODEL``; provider keys (``OPENAI_API_KEY``, ...) are read
    by LiteLLM itself.

    Raises:
        ConfigError: No model given and ``MODEL_NAME`` unset, or a malformed number.
    """
    model = model or os.environ.get("MODEL_NAME")
    if not model:
        raise ConfigError("set MODEL_NAME (e.g. openai/gpt-4o-mini) or pass --model")
    kwargs = completion_settings()
    return LLMAgent(model, strategy, **kwargs)
