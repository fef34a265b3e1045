"""Agents under test: the ``Agent`` protocol and the agents every app shares.

An agent turns an ``Observation`` into an action string. Remote A2A peers, LiteLLM models,
the app's reference solver and the null agent all fit the same one-method protocol, so the
runner never knows which one it drives.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from netarena.common.core.errors import AgentError, AgentUnavailable, ConfigError
from netarena.common.core.model_errors import infrastructure_failure
from netarena.common.core.replay import Tape

__all__ = [
    "Observation",
    "Agent",
    "Baseline",
    "NullAgent",
    "LiteLLMAgent",
    "DEFAULT_MAX_TOKENS",
    "MODEL_CHECK_PROMPT",
    "MODEL_CHECK_TIMEOUT_S",
    "completion_settings",
]


@dataclass(frozen=True)
class Observation:
    """What an agent receives each turn."""

    text: str
    """The full prompt for this turn (task, state, history): complete for stateless agents."""
    context_id: str
    """One id per episode, so stateful agents can keep per-episode memory."""
    turn: int = 0
    """0-based turn number within the episode."""
    query_id: str = ""
    """The query being played, for recording and replaying LLM calls (never sent to remote
    agents); empty when unknown."""


@runtime_checkable
class Agent(Protocol):
    """Anything that answers observations with actions."""

    name: str
    """Display name recorded in every result."""

    async def act(self, observation: Observation) -> str:
        """Return the next action (code, JSON command, kubectl line) as text.

        Raises:
            AgentError: The agent could not answer (transport, timeout, bad status).
        """
        ...


class NullAgent:
    """Does nothing: answers every turn with an empty reply. Must score about 0."""

    name = "null"

    async def act(self, observation: Observation) -> str:
        """Return the empty action."""
        return ""


@dataclass(frozen=True)
class Baseline:
    """A calibration baseline: a scripted, deliberately imperfect agent and its expected rates.

    Contract (every app's baselines, checked by ``tests/test_baselines.py`` and by
    ``netarena calibrate``):

    - ``make()`` returns an ``Agent`` that needs no network, model or key and answers from
      the observation text alone (never the hidden ``Query.truth``), so it can also be served
      as a purple agent;
    - it is deterministic: the same observation gets the same answer;
    - ``expected`` maps rate names of a run summary (``solved_safely``, ``correctness``,
      ``safety``, ``safety_when_changed``, ``changed``, or ``by_qualifier:Q``, solved safely
      on the queries stating ``Q``: ``RunSummary.rate_of``) to the ``(low, high)`` range measured
      with ``netarena calibrate APP`` on the app's default configuration (every level and
      label; the app's module says with how many queries). A benchmark build whose
      baseline falls outside a range (beyond sampling error) is not the benchmark those
      figures describe.
    """

    name: str
    """Registry name, used as ``--agent baseline:NAME``."""
    description: str
    """The one mistake (or strategy) this baseline makes, in a sentence."""
    make: Callable[[], Agent]
    """Builds a fresh agent."""
    expected: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    """Rate name → measured ``(low, high)`` range on the default configuration and plan."""
    labels: tuple[str, ...] = ()
    """Labels or label-set names it is measured on, when not the default plan's (route's
    dynamic-routing baselines: ``("ospf",)``, labels no default plan holds)."""


DEFAULT_MAX_TOKENS = 4096
"""Output cap per model call unless ``MODEL_MAX_TOKENS`` says otherwise: every answer format
fits (MALT code, a route or kubectl command, a chain of thought), and a base model that never
stops costs a bounded wait instead of the whole turn timeout."""


def completion_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """LiteLLM settings from the environment, the same for ``netarena run`` and the purple.

    ``MODEL_API_BASE`` (an OpenAI-compatible endpoint: vLLM, Ollama, llama.cpp's server),
    ``MODEL_TEMPERATURE`` and ``MODEL_MAX_TOKENS`` (default ``DEFAULT_MAX_TOKENS``; ``0``
    sends no cap) — see ``env.list.example``.

    Raises:
        ConfigError: A malformed number.
    """
    env = os.environ if environ is None else environ
    settings: dict[str, Any] = {}
    if base := env.get("MODEL_API_BASE", "").strip():
        settings["api_base"] = base
    try:
        if temperature := env.get("MODEL_TEMPERATURE", "").strip():
            settings["temperature"] = float(temperature)
        tokens = int(env.get("MODEL_MAX_TOKENS", "").strip() or DEFAULT_MAX_TOKENS)
    except ValueError as exc:
        raise ConfigError(f"bad MODEL_TEMPERATURE/MODEL_MAX_TOKENS: {exc}") from exc
    if tokens < 0:
        raise ConfigError(f"MODEL_MAX_TOKENS must be 0 (no cap) or more, not {tokens}")
    if tokens:
        settings["max_tokens"] = tokens
    return settings


MODEL_CHECK_PROMPT = "Say OK."
"""The start-up check's one message (answered with one token, never recorded)."""
MODEL_CHECK_TIMEOUT_S = 60.0
"""Longest wait for the start-up check's one-token reply (a cold local server loads first)."""


def _litellm() -> Any:
    """LiteLLM, imported on first use with its price list local and its banner off."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # its help banner would corrupt `--json` stdout
    return litellm


def _malformed(exc: BaseException) -> bool:
    """The provider read the request and refused its form (HTTP 400), so it was reached."""
    return any(cls.__name__ == "BadRequestError" for cls in type(exc).__mro__)


class LiteLLMAgent:
    """A plain relay to any LiteLLM model: the prompt in, the completion out.

    Prompts are complete on the green side, so no system prompt is added. This is the one
    place NetArena calls LiteLLM: prompting strategies subclass it and override ``messages``
    (what is sent) and ``finish`` (what is kept of the reply), so environment setup, the lazy
    import and error wrapping are written once.
    """

    def __init__(self, model: str, **completion_kwargs: Any) -> None:
        """Relay to ``model``; ``completion_kwargs`` go to ``litellm.acompletion``."""
        self.model = model
        self.name = f"litellm:{model}"
        self._kwargs = completion_kwargs
        self.tape = Tape()
        """Where calls are recorded, or replayed from (``netarena.common.core.replay``); the
        default one only counts usage."""

    def messages(self, observation: Observation) -> list[dict[str, str]]:
        """The chat messages for this turn: the observation as one user message."""
        return [{"role": "user", "content": observation.text}]

    def finish(self, reply: str, observation: Observation) -> str:
        """The action to return for the model's ``reply`` (the reply itself here)."""
        return reply

    async def act(self, observation: Observation) -> str:
        """Send ``messages(observation)`` and return ``finish`` of the reply text.

        Every call is handed to ``self.tape``; a replaying tape answers instead of the model.

        Raises:
            AgentUnavailable: The model could not be used (credentials, endpoint, model
                name, rate limits after retries): the query is left unscored.
            AgentError: Any other failure of the call (or, replaying, the recorded one).
        """
        request = {"model": self.model, "messages": self.messages(observation), **self._kwargs}
        key = observation.query_id or observation.context_id
        if self.tape.replaying:
            return self.finish(self.tape.replay(key, request).reply(), observation)
        litellm = _litellm()
        started = time.perf_counter()
        try:
            response = await litellm.acompletion(**request)
        except Exception as exc:  # noqa: BLE001 - any provider failure is reported as ours
            error = f"{self.name}: {type(exc).__name__}: {exc}"
            self.tape.record(key, observation.context_id, observation.turn, request,
                             error=error, latency_s=time.perf_counter() - started)
            reason = infrastructure_failure(exc)
            if reason is not None:
                raise AgentUnavailable(f"{reason} ({error})") from exc
            raise AgentError(error) from exc
        cost = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        self.tape.record(key, observation.context_id, observation.turn, request,
                         response=response.model_dump(), cost_usd=cost,
                         latency_s=time.perf_counter() - started)
        return self.finish(response.choices[0].message.content or "", observation)

    async def check(self, timeout_s: float = MODEL_CHECK_TIMEOUT_S) -> None:
        """One one-token completion before the first query: credentials, endpoint, model name.

        A run whose model cannot be used would otherwise fail every query, one turn timeout
        at a time. A request the provider rejects as malformed (a parameter this model
        does not take) still proves the rest, so it passes. Nothing is recorded; a
        replaying agent has nothing to check.

        Raises:
            AgentUnavailable: The model cannot be used, with what to fix.
        """
        if self.tape.replaying:
            return
        litellm = _litellm()
        request = {"model": self.model,
                   "messages": [{"role": "user", "content": MODEL_CHECK_PROMPT}],
                   **self._kwargs, "max_tokens": 1}
        try:
            await asyncio.wait_for(litellm.acompletion(**request), timeout_s)
        except TimeoutError as exc:
            raise AgentUnavailable(f"{self.name}: no answer to a one-token request within "
                                   f"{timeout_s:g}s (check MODEL_API_BASE and the network)"
                                   ) from exc
        except Exception as exc:  # noqa: BLE001 - sorted below; the message names it
            reason = infrastructure_failure(exc)
            if reason is None and _malformed(exc):
                return
            raise AgentUnavailable(f"{self.name}: {reason or 'the model call failed'} "
                                   f"({type(exc).__name__}: {str(exc)[:300]})") from exc

    def episode_usage(self, query_id: str) -> dict[str, float]:
        """LLM calls, tokens and cost spent on ``query_id`` (the runner adds them to results)."""
        return self.tape.episode_usage(query_id)
