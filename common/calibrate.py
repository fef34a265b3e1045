"""Check a benchmark build against its calibration ladder before trusting its numbers.

``calibrate`` plays one plan with the app's reference solver, the null agent and every
registered baseline (``App.baselines``), then compares each rate with the range documented
for it. A build whose reference is not perfect, whose null agent solves anything, or whose
baseline lands outside its range (beyond sampling error: the 99% Wilson interval of the
measured rate must meet the documented range) does not measure what its figures claim.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netarena.common.agents import Agent, NullAgent
from netarena.common.app import App
from netarena.common.runner import RunConfig, Runner
from netarena.common.signals import run_until_stopped
from netarena.common.stats import consistent, summarize
from netarena.common.types import Query, QueryResult

__all__ = ["Rung", "calibrate", "REFERENCE_EXPECTED", "NULL_EXPECTED"]

REFERENCE_EXPECTED = {"solved_safely": (1.0, 1.0)}
"""The reference solver solves every generated query, correctly and safely."""
NULL_EXPECTED = {"solved_safely": (0.0, 0.0)}
"""The null agent (an empty reply) solves nothing."""


@dataclass
class Rung:
    """One agent of the ladder: what was expected and what was measured."""

    agent: str
    """The agent's name (``baseline:NAME``, the reference's, ``null``)."""
    expected: dict[str, tuple[float, float]]
    """Rate name → documented range."""
    summary: dict[str, Any]
    """``stats.summarize`` of its run."""
    results: list[QueryResult] = field(default_factory=list)
    """Its per-query records."""
    description: str = ""
    """What the agent gets wrong, for baselines."""

    @property
    def misses(self) -> list[str]:
        """The rates outside their range beyond sampling error, one description each."""
        found = []
        for metric, (lo, hi) in self.expected.items():
            stat = self.summary[metric]
            if stat["n"] and not consistent(stat, (lo, hi)):
                found.append(f"{metric} {stat['rate']:.3f} outside [{lo:.2f}, {hi:.2f}]")
        return found

    @property
    def ok(self) -> bool:
        """Every documented rate is consistent with the measurement."""
        return not self.misses


Progress = Callable[[str, int, int], Any]


def _ladder(app: App) -> list[tuple[Agent, dict[str, tuple[float, float]], str]]:
    ladder: list[tuple[Agent, dict[str, tuple[float, float]], str]] = [
        (app.reference_agent(), dict(REFERENCE_EXPECTED), "the reference solver"),
        (NullAgent(), dict(NULL_EXPECTED), "an empty reply every turn"),
    ]
    ladder += [(b.make(), dict(b.expected), b.description) for b in app.baselines()]
    return ladder


def calibrate(
    app: App,
    queries: Sequence[Query],
    config: RunConfig | None = None,
    *,
    out: Path | None = None,
    only: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> list[Rung]:
    """Play ``queries`` with the reference, the null agent and every baseline of ``app``.

    Args:
        app: The app whose build is checked.
        queries: The plan (the ranges are documented for the default plan of 600+ queries).
        config: How to run them.
        out: Directory for ``<agent>/results.jsonl`` per agent (resumable), or ``None``.
        only: Agent names to run (``null``, ``baseline:rank-by-name``, ...); all when ``None``.
        progress: Called as ``progress(agent, done, total)`` after each query.

    Returns:
        One ``Rung`` per agent, reference and null first.
    """
    rungs = []
    for agent, expected, description in _ladder(app):
        if only is not None and agent.name not in only:
            continue
        path = out / agent.name.replace(":", "_") / "results.jsonl" if out else None

        def tick(result: QueryResult, done: int, total: int, name: str = agent.name) -> None:
            if progress is not None:
                progress(name, done, total)

        results = run_until_stopped(
            Runner(app, agent, config).run(queries, out=path, on_result=tick)
        )
        summary = summarize(results, app=app.name, agent=agent.name, seed=None)
        rungs.append(Rung(agent.name, expected, summary, results, description))
    return rungs
