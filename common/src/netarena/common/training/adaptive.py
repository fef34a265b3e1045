"""Failure-targeted generation: more queries of what an agent gets wrong.

From an agent's results (any earlier run of the same app), ``adaptive_plan`` estimates the
failure rate (not correct, or not safe) of every (level, label) cell of the plan, and of
every value of the app parameters named as axes (``num_subnets=2,3,4``), and draws the next
queries in proportion to them:

* a cell's rate is smoothed, ``(failures + 1) / (runs + 2)``, so a cell never seen counts
  as 0.5 and a few lucky runs do not zero it out;
* a share ``floor`` of the queries is spread evenly over all cells and axis values, the
  rest in proportion to their rates, so every label keeps coverage (and a perfect agent
  gets the uniform plan back);
* counts are apportioned exactly (largest remainders), the order shuffled and each query's
  seed derived from the base seed: the same results and seed give the same plan anywhere.

Results are matched to axis values by their query ids (which digest the parameters). The
plan is stored with the run (``run.json``), so a replay needs no results file. An adaptive
run's records carry the agent name with `` (adaptive)`` appended: reports and leaderboards
keep the failure-targeted set apart from the uniform one, whose rates it would bias.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from netarena.common.core.app import App, load_app
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import MAX_REDRAWS, QueryPlan, generate_fit
from netarena.common.core.stats import solved_safely
from netarena.common.core.types import Query, QueryResult, query_id

__all__ = [
    "ADAPTIVE_SUFFIX",
    "AdaptivePlan",
    "Slot",
    "adaptive_plan",
    "apportion",
    "generate",
    "strata",
]

ADAPTIVE_SUFFIX = " (adaptive)"
"""Appended to the agent name of an adaptive run's records."""


class Slot(BaseModel):
    """One planned query: what ``App.generate`` needs, plus its axis values."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int
    level: int
    label: str
    params: dict[str, Any] = Field(default_factory=dict)
    """Axis values for this query (added to the run's app parameters)."""


class AdaptivePlan(BaseModel):
    """A failure-targeted plan and how it was drawn (stored in ``run.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    """The results file(s) the failure rates came from."""
    floor: float
    """Share of queries spread evenly over every cell and axis value."""
    failure_rate: dict[str, float]
    """Smoothed failure rate per ``L<level>/<label>`` cell."""
    observed: dict[str, int]
    """Scored results per cell in the source."""
    share: dict[str, float]
    """Planned share of queries per cell."""
    axes: dict[str, dict[str, float]] = Field(default_factory=dict)
    """Per axis, the planned share of each value (as JSON text)."""
    slots: list[Slot]
    """The queries, in play order."""


def strata(slots: Sequence[Slot]) -> list[tuple[dict[str, Any], list[Slot]]]:
    """``slots`` grouped by axis values (each group plays with one app configuration)."""
    groups: dict[str, list[Slot]] = {}
    for slot in slots:
        groups.setdefault(json.dumps(slot.params, sort_keys=True), []).append(slot)
    return [(json.loads(key), group) for key, group in groups.items()]


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Split ``total`` into integers proportional to ``weights`` (largest remainders)."""
    norm = sum(weights)
    exact = [total * w / norm for w in weights]
    counts = [int(x) for x in exact]
    order = sorted(range(len(weights)), key=lambda i: (counts[i] - exact[i], i))
    for i in order[: total - sum(counts)]:
        counts[i] += 1
    return counts


def _failure_rate(results: Sequence[QueryResult]) -> float:
    """Smoothed share of ``results`` not solved safely (0.5 with no results)."""
    failures = sum(1 for r in results if not solved_safely(r))
    return (failures + 1) / (len(results) + 2)


def _shares(rates: Sequence[float], floor: float) -> list[float]:
    even = 1 / len(rates)
    return [floor * even + (1 - floor) * r / sum(rates) for r in rates]


def _cells(app: App, plan: QueryPlan) -> list[tuple[int, str]]:
    wanted = set(app.expand_labels(plan.labels)) if plan.labels else None
    cells = [(lv, lb) for lv in plan.levels for lb in app.labels.get(lv, ())
             if (lb not in app.opt_in_labels if wanted is None else lb in wanted)]
    if not cells:
        raise ConfigError(f"{app.name}: no labels match levels {list(plan.levels)}")
    return cells


def _derive(seed: int, index: int) -> int:
    digest = hashlib.sha256(f"netarena-adaptive/{seed}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _axis_rates(
    app_name: str, params: dict[str, Any], axes: dict[str, list[Any]], results: list[QueryResult]
) -> dict[str, list[tuple[Any, float]]]:
    """Per axis, each value's smoothed failure rate among results made with that value."""
    out: dict[str, list[tuple[Any, float]]] = {}
    for axis, values in axes.items():
        rated = []
        for value in values:
            app = load_app(app_name, {**params, axis: value})
            digest = query_id(app_name, 0, 1, "x", app.params()).removeprefix(f"{app_name}-L1-x-0")
            mine = [r for r in results if digest and r.query_id.endswith(digest)]
            rated.append((value, _failure_rate(mine)))
        out[axis] = rated
    return out


def _draw_axes(
    rates: dict[str, list[tuple[Any, float]]], floor: float, total: int, rng: random.Random
) -> tuple[dict[str, list[Any]], dict[str, dict[str, float]]]:
    """Per axis, ``total`` values in proportion to their failure rates, and their shares."""
    values: dict[str, list[Any]] = {}
    shares: dict[str, dict[str, float]] = {}
    for axis, rated in rates.items():
        weights = _shares([r for _, r in rated], floor)
        pairs = zip(rated, weights, strict=True)
        shares[axis] = {json.dumps(v): round(w, 4) for (v, _), w in pairs}
        drawn = [v for (v, _), n in zip(rated, apportion(total, weights), strict=True)
                 for _ in range(n)]
        rng.shuffle(drawn)
        values[axis] = drawn
    return values, shares


def adaptive_plan(
    app: App,
    plan: QueryPlan,
    results: Sequence[QueryResult],
    *,
    source: str,
    floor: float = 0.2,
    axes: dict[str, list[Any]] | None = None,
) -> AdaptivePlan:
    """Draw ``plan.num_queries`` queries in proportion to the failure rates in ``results``.

    Args:
        app: The app (its parameters are the run's; axes add to them).
        plan: Levels, labels, size and base seed of the run (sharding is applied later).
        results: Earlier results of the agent on this app (other apps' records are ignored).
        source: Where ``results`` came from, for the record.
        floor: Share of queries spread evenly (0-1): every cell keeps coverage.
        axes: App parameters to vary per query, each with its candidate values.

    Raises:
        ConfigError: ``floor`` out of range, an axis value the app rejects, or no cells.
    """
    if not 0 <= floor <= 1:
        raise ConfigError(f"the adaptive floor must be within 0 and 1, got {floor}")
    cells = _cells(app, plan)
    mine = [r for r in results if r.app == app.name and r.scored]
    observed = {c: [r for r in mine if (r.level, r.label) == c] for c in cells}
    rates = [_failure_rate(rs) for rs in observed.values()]
    shares = _shares(rates, floor)
    counts = apportion(plan.num_queries, shares)
    rng = random.Random(f"netarena-adaptive/{plan.seed}")
    chosen = [c for c, n in zip(cells, counts, strict=True) for _ in range(n)]
    rng.shuffle(chosen)
    params = dict(app.config.model_dump(exclude_defaults=True))
    axis_values, axis_shares = _draw_axes(
        _axis_rates(app.name, params, axes or {}, mine), floor, len(chosen), rng)
    slots = [
        Slot(seed=_derive(plan.seed, i), level=lv, label=lb,
             params={axis: vals[i] for axis, vals in axis_values.items()})
        for i, (lv, lb) in enumerate(chosen)
    ]
    key = [f"L{lv}/{lb}" for lv, lb in cells]
    return AdaptivePlan(
        source=source,
        floor=floor,
        failure_rate={k: round(r, 4) for k, r in zip(key, rates, strict=True)},
        observed={k: len(rs) for k, rs in zip(key, observed.values(), strict=True)},
        share={k: round(s, 4) for k, s in zip(key, shares, strict=True)},
        axes=axis_shares,
        slots=slots,
    )


def generate(app: App, slots: Sequence[Slot]) -> list[Query]:
    """The queries of ``slots`` generated by ``app`` (whose config holds their axis values).

    A slot's seed that cannot carry its label (``UnfitSeed``: a small k8s cluster with no
    repairable fault set of it) is passed over for seeds derived from it, as a plan passes
    over one (``plan.MAX_REDRAWS``); a replay derives the same ones.
    """
    return [generate_fit(app, [s.seed, *(_derive(s.seed, k) for k in range(1, MAX_REDRAWS + 1))],
                         s.level, s.label)[0] for s in slots]

