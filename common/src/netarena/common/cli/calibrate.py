"""Check a benchmark build against its calibration ladder before trusting its numbers.

``calibrate`` plays one plan with the app's reference solver, the null agent and every
registered baseline (``App.baselines``), then compares each rate with the range documented
for it. A build whose reference is not perfect, whose null agent solves anything, or whose
baseline lands outside its range (beyond sampling error: the 99% Wilson interval of the
measured rate must meet the documented range) does not measure what its figures claim.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netarena.common.core.agents import Agent, NullAgent
from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.signals import run_until_stopped
from netarena.common.core.stats import RATES, consistent, summarize
from netarena.common.core.summary import RunSummary
from netarena.common.core.types import Query, QueryResult

__all__ = [
    "Rung",
    "calibrate",
    "ladder",
    "ladder_table",
    "ladder_plan_labels",
    "write_ladder_table",
    "REFERENCE_EXPECTED",
    "NULL_EXPECTED",
]

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
    summary: RunSummary
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
            stat = self.summary.rate_of(metric)
            if stat.n and stat.rate is not None and not consistent(stat, (lo, hi)):
                found.append(f"{metric} {stat.rate:.3f} outside [{lo:.2f}, {hi:.2f}]")
        return found

    @property
    def ok(self) -> bool:
        """Every documented rate is consistent with the measurement."""
        return not self.misses


Progress = Callable[[str, int, int], Any]


_Step = tuple[Agent, dict[str, tuple[float, float]], str, tuple[str, ...] | None]
"""An agent of the ladder, its ranges, its description and its labels (``None``: all)."""


def _ladder(app: App) -> list[_Step]:
    ladder: list[_Step] = [
        (app.reference_agent(), dict(REFERENCE_EXPECTED), "the reference solver", None),
        (NullAgent(), dict(NULL_EXPECTED), "an empty reply every turn", None),
    ]
    for b in app.baselines():
        text = f"{b.description} (on {', '.join(b.labels)} queries)" if b.labels else b.description
        ladder.append((b.make(), dict(b.expected), text, b.labels))
    return ladder


def ladder_plan_labels(app: App) -> list[tuple[str, ...]]:
    """The label lists a full calibration plans: the default (``()``), then the baselines' own."""
    found: list[tuple[str, ...]] = [()]
    for baseline in app.baselines():
        if baseline.labels and baseline.labels not in found:
            found.append(baseline.labels)
    return found


def ladder(app: App) -> list[tuple[str, dict[str, tuple[float, float]], str]]:
    """The documented ladder ``calibrate`` checks, without running it.

    Returns:
        ``(agent name, rate name → (low, high), description)`` per rung, reference and null
        first, then the app's baselines in their registered order.
    """
    return [(agent.name, expected, text) for agent, expected, text, _ in _ladder(app)]


def _bound(x: float) -> str:
    return f"{x:.2f}" if round(x, 2) == x else repr(x)


def ladder_table(app: App) -> str:
    """``ladder(app)`` as a Markdown table: one row per rung, one column per rate it names.

    Each range reads ``[low, high]`` exactly as stored (two decimals, or every digit when a
    range has more); ``-`` where the rung documents no range for that rate. This is the
    table ``netarena ladder`` prints and ``docs/validity.md`` quotes.
    """
    rows = ladder(app)
    named = {rate for _, expected, _ in rows for rate in expected}
    rates = [r for r in RATES if r in named] + sorted(named - set(RATES))
    lines = [
        "| app | agent | " + " | ".join(rates) + " | what it does |",
        "|---|---|" + "---|" * len(rates) + "---|",
    ]
    for name, expected, text in rows:
        cells = [
            f"[{_bound(expected[r][0])}, {_bound(expected[r][1])}]" if r in expected else "-"
            for r in rates
        ]
        text = text.replace("|", "\\|")
        lines.append(f"| {app.name} | `{name}` | " + " | ".join(cells) + f" | {text} |")
    return "\n".join(lines) + "\n"


def _markers(app_name: str) -> tuple[str, str]:
    return f"<!-- ladder:{app_name}:begin -->", f"<!-- ladder:{app_name}:end -->"


def write_ladder_table(text: str, app: App) -> str:
    """``text`` with the block between the app's ladder markers replaced by its table.

    The markers are ``<!-- ladder:APP:begin -->`` and ``<!-- ladder:APP:end -->`` on lines of
    their own; everything between them is regenerated.

    Raises:
        ConfigError: The markers are missing or out of order.
    """
    begin, end = _markers(app.name)
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise ConfigError(f"no {begin} ... {end} block")
    return pattern.sub(lambda _: f"{begin}\n{ladder_table(app)}{end}", text, count=1)


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
    for agent, expected, description, labels in _ladder(app):
        if only is not None and agent.name not in only:
            continue
        mine = queries
        if labels is not None:  # a baseline runs on its own labels (the default plan's: none)
            scope = app.label_scope(labels)
            mine = [q for q in queries if q.label in scope]
        if not mine:
            continue
        path = out / agent.name.replace(":", "_") / "results.jsonl" if out else None

        def tick(result: QueryResult, done: int, total: int, name: str = agent.name) -> None:
            if progress is not None:
                progress(name, done, total)

        results = run_until_stopped(Runner(app, agent, config).run(mine, out=path, on_result=tick))
        summary = summarize(results, app=app.name, agent=agent.name, seed=None)
        rungs.append(Rung(agent.name, expected, summary, results, description))
    return rungs
