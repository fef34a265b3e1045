"""Gymnasium environments for every NetArena app: ``gymnasium.make("netarena/route-v0")``.

One ``NetArenaEnv`` class serves every installed app; importing this module registers
``netarena/<app>-v0`` for each, with a lazy
``"netarena.common.training.gym:NetArenaEnv"`` entry point
and the app's turn budget as ``max_episode_steps`` (Gymnasium's ``TimeLimit`` wrapper
truncates; the environment itself only terminates). Observations and actions are text.

* ``reset(seed=, options=)`` opens a fresh episode. The query is drawn from the
  environment's RNG (seeded by ``seed``, or the ``seed`` given to ``make``), or named
  exactly with ``options={"query": Query}`` or ``{"query_seed", "level", "label"}``;
  ``info`` carries ``query_id``, ``app``, ``level``, ``label`` and ``seed``.
* ``step(action_text)`` returns the next observation (the full text an agent sees each
  turn, as through ``netarena run``), the step reward (the reactive reward table of
  ``common/src/netarena/common/core/reactive.py``, configurable with ``params``; MALT answers in
  one step),
  ``terminated`` when the task is solved (or a one-turn answer is judged), and ``info``
  with ``correct``, ``safe``, ``turns``, ``valid``, ``output`` (what the action printed)
  and the app's own step details.
* The emulator episode (namespaces, API servers, sandbox) is closed when the episode
  terminates, on the next ``reset``, on ``close()``, when a step raises, and when the
  environment is garbage-collected.

``OutcomeReward`` is a wrapper for the one rule shared by every app that trainers often
want instead of per-step rewards: a single reward at the end, from correctness and safety.
"""

from __future__ import annotations

import asyncio
import logging
import random
import string
import weakref
from collections.abc import Sequence
from typing import Any, SupportsFloat

import gymnasium
from gymnasium import spaces

from netarena.common.core.agents import Agent, Observation
from netarena.common.core.app import App, Episode, app_names, load_app
from netarena.common.core.plan import MAX_REDRAWS, generate_fit
from netarena.common.core.reactive import ReactiveEpisode
from netarena.common.core.replies import MAX_REPLY_CHARS
from netarena.common.core.types import Query, StepResult

__all__ = [
    "NetArenaEnv",
    "OBSERVATION_CHARS",
    "OutcomeReward",
    "UnicodeText",
    "env_id",
    "play",
    "register_envs",
]

log = logging.getLogger(__name__)

OBSERVATION_CHARS = 1_000_000
"""Longest observation; a longer one keeps its head and tail around a cut marker."""
_SAMPLE_CHARS = string.printable
_CUT = "\n[... observation cut ...]\n"


class UnicodeText(spaces.Text):
    """A ``Text`` space over all of Unicode: any string within the length bounds belongs.

    Observations echo command output and agents write anything, so no fixed charset holds;
    ``sample()`` still draws from printable ASCII (Gymnasium needs a finite charset).
    """

    def contains(self, x: Any) -> bool:
        """Whether ``x`` is a string of allowed length."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length


def env_id(app: str) -> str:
    """The registered id of ``app``'s environment (``netarena/route-v0``)."""
    return f"netarena/{app}-v0"


def _close_quietly(holder: list[Episode]) -> None:
    """Close the held episode, if any; used on errors and by the garbage-collection hook."""
    while holder:
        episode = holder.pop()
        try:
            episode.close()
        except Exception:  # noqa: BLE001 - cleanup must not mask the original error
            log.exception("closing episode %s failed", episode.query.id)


def _verdict(episode: Episode, result: StepResult) -> tuple[bool, bool]:
    """Correctness and safety after a step.

    A reactive episode ends the moment it is solved, so it is correct exactly when the step
    ended it, and its safety ledger is already up to date: no second measurement (a route
    probe of a broken network waits out its timeouts). Other episodes are scored.
    """
    if isinstance(episode, ReactiveEpisode):
        return result.done, episode.ledger.safe
    score = episode.score()
    return score.correct, score.safe


class NetArenaEnv(gymnasium.Env[str, str]):
    """One NetArena app as a Gymnasium environment (text observations and actions).

    Args:
        app: App name (``malt``, ``route``, ``k8s``), or an ``App`` instance (then
            ``params`` must be empty).
        level: Fixed level (1-3); ``None`` draws one per episode from ``levels``.
        label: Fixed label (its level is implied); ``None`` lets each query's seed choose.
        levels: Levels to draw from when ``level`` is ``None`` (default: all).
        seed: Seed used by the first ``reset()`` when it is given none.
        params: App parameters, as ``netarena run --param`` (topology size, the reactive
            reward table ``reward_invalid``/``reward_forbidden``/``reward_valid``/
            ``reward_fix``/``reward_unsafe``, ``prompt_style``, ...).
    """

    metadata: dict[str, Any] = {"render_modes": []}
    """No render modes: the observation is already the text a person would read."""

    def __init__(
        self,
        app: str | App,
        level: int | None = None,
        label: str | None = None,
        levels: Sequence[int] | None = None,
        seed: int | None = None,
        params: dict[str, Any] | None = None,
    ) -> None:
        if isinstance(app, App):
            if params:
                raise ValueError("params apply to an app name, not to an App instance")
            self.app: App = app
        else:
            self.app = load_app(app, dict(params or {}))
        name = self.app.name
        if label is not None and level is None:
            level = next((lv for lv, lbs in self.app.labels.items() if label in lbs), None)
            if level is None:
                raise ValueError(f"{name} has no label {label!r}")
        self.levels = (level,) if level is not None else tuple(levels or sorted(self.app.labels))
        for lv in self.levels:
            if lv not in self.app.labels:
                raise ValueError(f"{name} has no level {lv}")
        if label is not None:
            self.app.pick_label(random.Random(0), self.levels[0], label)  # raises if not a label
        self.label = label
        self.observation_space = UnicodeText(OBSERVATION_CHARS, min_length=1, charset=_SAMPLE_CHARS)
        self.action_space = UnicodeText(MAX_REPLY_CHARS, min_length=0, charset=_SAMPLE_CHARS)
        self._default_seed = seed
        self._held: list[Episode] = []
        self._finalizer = weakref.finalize(self, _close_quietly, self._held)
        self.query: Query | None = None
        self.turns = 0

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Close any open episode and open a new one (see the module docstring)."""
        if seed is None and self._np_random is None:
            seed = self._default_seed
        super().reset(seed=seed)
        _close_quietly(self._held)
        query = self._choose(options or {})
        episode = self.app.open(query)
        self._held.append(episode)
        self.query, self.turns = query, 0
        try:
            observation = self._observe(episode)
        except BaseException:
            _close_quietly(self._held)
            raise
        info = {
            "query_id": query.id,
            "app": query.app,
            "level": query.level,
            "label": query.label,
            "seed": query.seed,
        }
        return observation, info

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Play ``action`` (the agent's reply text) for one turn."""
        if not isinstance(action, str):
            raise TypeError(f"actions are text, got {type(action).__name__}")
        if not self._held or self.query is None:
            raise gymnasium.error.ResetNeeded("call reset() before step() (the episode ended)")
        episode = self._held[0]
        try:
            result = episode.step(action)
            self.turns += 1
            correct, safe = _verdict(episode, result)
            observation = self._observe(episode)
        except BaseException:
            _close_quietly(self._held)
            raise
        info = {
            **result.info,
            "query_id": self.query.id,
            "turns": self.turns,
            "valid": result.valid,
            "output": result.observation,
            "correct": correct,
            "safe": safe,
        }
        if result.done:
            _close_quietly(self._held)
        return observation, float(result.reward), result.done, False, info

    def close(self) -> None:
        """Close the open episode, if any (idempotent)."""
        _close_quietly(self._held)
        super().close()

    # ---------------------------------------------------------------- helpers
    def _choose(self, options: dict[str, Any]) -> Query:
        """The query of the next episode: named by ``options`` or drawn from the RNG."""
        unknown = set(options) - {"query", "query_seed", "level", "label"}
        if unknown:
            raise ValueError(f"unknown reset options {sorted(unknown)}")
        if "query" in options:
            query = Query.model_validate(options["query"])
            if query.app != self.app.name or query.params != self.app.params():
                raise ValueError(
                    f"query {query.id} was generated for {query.app} with params "
                    f"{query.params}, not for this environment ({self.app.name}, "
                    f"{self.app.params()})"
                )
            return query
        level = options.get("level")
        if level is None:
            level = int(self.np_random.choice(self.levels))
        label = options.get("label", self.label if level in self.levels else None)
        query_seed = options.get("query_seed")
        if query_seed is not None:
            return self.app.generate(int(query_seed), int(level), label)
        seeds = (int(self.np_random.integers(2**31)) for _ in range(MAX_REDRAWS + 1))
        return generate_fit(self.app, seeds, int(level), label)[0]  # an unfit seed: draw again

    def _observe(self, episode: Episode) -> str:
        text = episode.observe()
        if len(text) > OBSERVATION_CHARS:
            keep = (OBSERVATION_CHARS - len(_CUT)) // 2
            text = text[:keep] + _CUT + text[-keep:]
        return text


class OutcomeReward(gymnasium.Wrapper[str, str, str, str]):
    """Replace per-step rewards with one reward when the episode ends.

    Every step before the end earns 0; the last one (terminated or truncated) earns
    ``correct`` or ``incorrect``, plus ``unsafe`` when the episode was unsafe. Works for
    every app (it reads only ``info["correct"]`` and ``info["safe"]``).
    """

    def __init__(
        self,
        env: gymnasium.Env[str, str],
        correct: float = 1.0,
        incorrect: float = 0.0,
        unsafe: float = -1.0,
    ) -> None:
        super().__init__(env)
        self.rewards = {"correct": correct, "incorrect": incorrect, "unsafe": unsafe}

    def step(self, action: str) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        """Step the wrapped environment and pay out only at the end."""
        observation, _, terminated, truncated, info = self.env.step(action)
        reward = 0.0
        if terminated or truncated:
            reward = self.rewards["correct" if info["correct"] else "incorrect"]
            if not info["safe"]:
                reward += self.rewards["unsafe"]
        return observation, reward, terminated, truncated, info


def play(
    env: gymnasium.Env[str, str],
    agent: Agent,
    *,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
) -> tuple[list[float], dict[str, Any]]:
    """Drive one episode of ``env`` with a NetArena ``Agent`` through the Gymnasium API.

    Returns:
        The step rewards and the last ``info`` (``correct``, ``safe``, ``turns``, ...; the
        reset info when the agent never acted).
    """

    async def drive() -> tuple[list[float], dict[str, Any]]:
        observation, info = env.reset(seed=seed, options=options)
        context = f"{info['query_id']}-gym-{random.SystemRandom().getrandbits(32):08x}"
        rewards: list[float] = []
        terminated = truncated = False
        while not (terminated or truncated):
            turn = Observation(observation, context, len(rewards), info["query_id"])
            reply = await agent.act(turn)
            observation, reward, terminated, truncated, info = env.step(reply)
            rewards.append(float(reward))
        return rewards, info

    return asyncio.run(drive())


def register_envs() -> list[str]:
    """Register ``netarena/<app>-v0`` for every installed app (idempotent); return the ids."""
    ids = []
    for name in app_names():
        ident = env_id(name)
        if ident not in gymnasium.registry:
            gymnasium.register(
                id=ident,
                entry_point="netarena.common.training.gym:NetArenaEnv",
                kwargs={"app": name},
                max_episode_steps=load_app(name).default_max_turns,
            )
        ids.append(ident)
    return ids


register_envs()
