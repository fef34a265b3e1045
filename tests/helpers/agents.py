"""Agents for the training tests: random text, and a scripted imperfect solver.

Both are deterministic functions of what they are shown, so the same episode played through
the runner, the Gymnasium API or a Ray worker gets the same answers.
"""

from __future__ import annotations

import hashlib
import random
import string
from collections.abc import Iterable

from netarena.common.agents import Agent, Observation
from netarena.common.types import Query


class RandomTextAgent:
    """Answers every observation with random printable text drawn from a hash of it."""

    name = "random-text"

    def __init__(self, max_chars: int = 200) -> None:
        self.max_chars = max_chars

    async def act(self, observation: Observation) -> str:
        digest = hashlib.sha256(observation.text.encode()).digest()
        rng = random.Random(digest)
        return "".join(rng.choice(string.printable) for _ in range(rng.randint(0, self.max_chars)))


class FailsOnLabels:
    """The reference solver, except on queries of the given labels, where it answers nothing.

    Until the ``baseline:NAME`` agents land, this is the imperfect agent adaptive generation is
    tested against. A query's label is looked up by ``Observation.query_id`` (the runner fills
    it in) among the queries it was told about, so the failure pattern is known exactly.
    """

    def __init__(self, inner: Agent, failing: set[str]) -> None:
        self.inner = inner
        self.failing = failing
        self.name = "fails-on-" + "+".join(sorted(failing))
        self._labels: dict[str, str] = {}

    def expect(self, queries: Iterable[Query]) -> FailsOnLabels:
        """Learn the labels of ``queries`` (the ones it is about to play); return itself."""
        self._labels.update((q.id, q.label) for q in queries)
        return self

    async def act(self, observation: Observation) -> str:
        if self._labels[observation.query_id] in self.failing:
            return ""
        return await self.inner.act(observation)
