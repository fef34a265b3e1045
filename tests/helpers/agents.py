"""Agents for the training tests: random text, and a scripted imperfect solver.

Both are deterministic functions of what they are shown, so the same episode played through
the runner, the Gymnasium API or a Ray worker gets the same answers.
"""

from __future__ import annotations

import hashlib
import os
import random
import string
from collections.abc import Callable, Iterable

from netarena.common.core.agents import Agent, Observation
from netarena.common.core.app import App
from netarena.common.core.types import Query


class RandomTextAgent:
    """Answers every observation with random printable text drawn from a hash of it."""

    name = "random-text"

    def __init__(self, max_chars: int = 200) -> None:
        self.max_chars = max_chars

    async def act(self, observation: Observation) -> str:
        digest = hashlib.sha256(observation.text.encode()).digest()
        rng = random.Random(digest)
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, self.max_chars)))


class FailsOn:
    """The reference solver, except on chosen queries, where it answers nothing.

    Until the ``baseline:NAME`` agents land, this is the imperfect agent adaptive generation is
    tested against. Queries are looked up by ``Observation.query_id`` (the runner fills it in)
    among those it was told about (``expect``), so the failure pattern is known exactly.
    """

    def __init__(self, inner: Agent, fails: Callable[[Query], bool], name: str) -> None:
        self.inner = inner
        self.fails = fails
        self.name = name
        self._failing: dict[str, bool] = {}

    @classmethod
    def on_labels(cls, inner: Agent, labels: set[str]) -> FailsOn:
        """Fails every query whose label is in ``labels``."""
        return cls(inner, lambda q: q.label in labels, "fails-on-" + "+".join(sorted(labels)))

    def expect(self, queries: Iterable[Query]) -> FailsOn:
        """Learn which of ``queries`` (the ones it is about to play) to fail; return itself."""
        self._failing.update((q.id, self.fails(q)) for q in queries)
        return self

    async def act(self, observation: Observation) -> str:
        if self._failing[observation.query_id]:
            return ""
        return await self.inner.act(observation)


class Coinflip:
    """The reference solver on a hash-chosen half of the turns, silence on the rest.

    Chosen by query and turn (not by text, which may carry wall-clock timestamps), so any
    executor gets the same mixed results.
    """

    def __init__(self, inner: Agent) -> None:
        self.inner = inner
        self.name = "coinflip"

    async def act(self, observation: Observation) -> str:
        key = f"{observation.query_id}/{observation.turn}"
        if hashlib.sha256(key.encode()).digest()[0] % 2:
            return ""
        return await self.inner.act(observation)


def coinflip(app: App) -> Coinflip:
    """An agent factory (picklable, so Ray workers can build it)."""
    return Coinflip(app.reference_agent())


class CrashesOn:
    """The reference solver, whose process dies (``os._exit``) when shown one query.

    For executor tests: played in a Ray actor, it kills the actor mid-episode.
    """

    def __init__(self, inner: Agent, query_id: str) -> None:
        self.inner = inner
        self.query_id = query_id
        self.name = inner.name

    async def act(self, observation: Observation) -> str:
        if observation.query_id == self.query_id:
            os._exit(17)
        return await self.inner.act(observation)


def crashes_on(query_id: str, app: App) -> CrashesOn:
    """An agent factory for ``functools.partial(crashes_on, query_id)``."""
    return CrashesOn(app.reference_agent(), query_id)
