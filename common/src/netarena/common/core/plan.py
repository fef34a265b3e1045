"""What a run plays: a ``QueryPlan`` and the queries ``plan_queries`` generates from it.

A plan says how many queries of which levels and labels, from which seed; generation is
deterministic, the queries distinct and sharded.

Each query's seed derives from the plan's seed and its index, so a plan gives the same
queries on any machine, and a shard (``shard_index`` of ``num_shards``) gets a disjoint,
deterministic part of them. A query that repeats an earlier instance of the same plan is
redrawn with a fresh derived seed (at most ``MAX_REDRAWS`` times).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Iterator

from pydantic import BaseModel, ConfigDict, Field, model_validator

from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError, UnfitSeed
from netarena.common.core.types import Query

__all__ = ["MAX_QUERIES", "QueryPlan", "fresh_seed", "generate_fit", "plan_queries", "plan_size"]


MAX_QUERIES = 100_000
"""Most queries one plan may hold (after the per-label expansion)."""


def fresh_seed() -> int:
    """A new random seed for runs that did not ask for one (reported back for repeats)."""
    return random.SystemRandom().randrange(2**31)


class QueryPlan(BaseModel):
    """Which queries a run covers. Same plan and app config → same queries, anywhere."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_queries: int = Field(10, ge=1, le=MAX_QUERIES)
    """Total queries (or per label when ``per_label``)."""
    levels: tuple[int, ...] = (1, 2, 3)
    """Levels to draw from, cycled in order."""
    labels: tuple[str, ...] | None = None
    """Restrict to these labels (each must belong to one of ``levels``)."""
    seed: int = 0
    """Base seed; each query gets its own seed derived from it and its index."""
    per_label: bool = False
    """Reference-dialect semantics: ``num_queries`` for every label of every level."""
    shard_index: int = Field(0, ge=0)
    num_shards: int = Field(1, ge=1)
    limit: int | None = Field(None, ge=1)
    """Keep only the first ``limit`` queries of the whole plan, before sharding (the
    leaderboard workflow's ``num_instances``)."""

    @model_validator(mode="after")
    def _check(self) -> QueryPlan:
        if not self.levels or any(lv not in (1, 2, 3) for lv in self.levels):
            raise ValueError("levels must be a non-empty list drawn from 1, 2, 3")
        if self.shard_index >= self.num_shards:
            raise ValueError("shard_index must be < num_shards")
        return self


MAX_REDRAWS = 8
"""Fresh seeds tried for a query that repeats an earlier one of the same plan."""


def _derive_seed(base: int, index: int, redraw: int = 0) -> int:
    key = f"netarena/{base}/{index}" + (f"/{redraw}" if redraw else "")
    digest = hashlib.sha256(key.encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _slots(app: App | type[App], plan: QueryPlan) -> list[tuple[int, str | None]]:
    """(level, label) for each query index, before sharding.

    A label-set name (``App.label_sets``) stands for its labels in the plan's levels.
    """
    wanted = set(app.expand_labels(plan.labels)) if plan.labels else None
    explicit = {lb for lb in plan.labels or () if lb not in app.label_sets}
    per_level: dict[int, list[str]] = {}
    for level in plan.levels:
        if level not in app.labels:
            raise ConfigError(f"{app.name} has no level {level}")
        labels = [
            lb
            for lb in app.labels[level]
            if (lb not in app.opt_in_labels if wanted is None else lb in wanted)
        ]
        if labels:
            per_level[level] = labels
    if wanted is not None:
        unknown = explicit - {lb for labels in per_level.values() for lb in labels}
        if unknown:
            raise ConfigError(
                f"{app.name}: labels {sorted(unknown)} are not in levels {list(plan.levels)}"
            )
    if not per_level:
        raise ConfigError(f"{app.name}: no labels match levels {list(plan.levels)}")
    slots = _all_slots(plan, per_level)
    return slots[: plan.limit] if plan.limit is not None else slots


def _all_slots(plan: QueryPlan, per_level: dict[int, list[str]]) -> list[tuple[int, str | None]]:
    if plan.per_label:
        total = plan.num_queries * sum(len(labels) for labels in per_level.values())
        if total > MAX_QUERIES:
            raise ConfigError(f"{total} queries requested; at most {MAX_QUERIES} per run")
        return [
            (level, label)
            for level, labels in per_level.items()
            for label in labels
            for _ in range(plan.num_queries)
        ]
    levels = list(per_level)
    slots: list[tuple[int, str | None]] = []
    for i in range(plan.num_queries):
        level = levels[i % len(levels)]
        labels = per_level[level]
        slots.append((level, labels[(i // len(levels)) % len(labels)]))
    return slots


def plan_size(app: App | type[App], plan: QueryPlan) -> tuple[int, int]:
    """``(slots before sharding, this shard's queries)``: cheap, nothing is generated.

    Raises:
        ConfigError: The plan's levels or labels do not fit the app.
    """
    total = len(_slots(app, plan))
    return total, len(range(plan.shard_index, total, plan.num_shards))


def generate_fit(app: App, seeds: Iterable[int], level: int,
                 label: str | None) -> tuple[Query, int]:
    """The query of the first of ``seeds`` that can carry ``label``, and how many it passed.

    Raises:
        UnfitSeed: Every seed was unfit (the last one's error).
    """
    error: UnfitSeed | None = None
    for skipped, seed in enumerate(seeds):
        try:
            return app.generate(seed, level, label), skipped
        except UnfitSeed as unfit:
            error = unfit
    raise error or UnfitSeed("no seed to draw from")


def plan_queries(
    app: App, plan: QueryPlan, should_stop: Callable[[], bool] | None = None
) -> list[Query]:
    """Generate this shard's queries: labels cycle evenly, seeds derive from ``plan.seed``.

    Queries are drawn without replacement: one that repeats an earlier instance of the plan
    (same prompt and hidden truth) is drawn again from a derived seed, up to ``MAX_REDRAWS``
    times (a label with fewer instances than asked for keeps repeats). A repeat would count
    one instance twice and make the interval narrower than the evidence. A seed whose
    instance cannot carry the slot's label (``UnfitSeed``: a rare k8s cluster repairs no
    fault set of it) is passed over the same way, so one such seed costs no plan. Shards
    still partition the whole plan, so a sharded shard generates the plan's earlier queries
    too.

    Args:
        app: The app generating them.
        plan: Which queries.
        should_stop: Checked before each query; when it returns true, planning stops.

    Raises:
        ConfigError: The plan does not fit the app, or ``should_stop`` stopped it.
        UnfitSeed: ``MAX_REDRAWS`` fresh seeds in a row were unfit for a slot's label.
    """
    queries: list[Query] = []
    seen: set[str] = set()
    slots = _slots(app, plan)
    mine = range(plan.shard_index, len(slots), plan.num_shards)

    def check() -> None:
        if should_stop is not None and should_stop():
            raise ConfigError(f"planning stopped after {len(queries)} queries")

    def draw(i: int, redraw: int, level: int, label: str | None) -> tuple[Query, int]:
        """Slot ``i``'s query from redraw ``redraw`` on, past seeds unfit for its label."""
        def seeds() -> Iterator[int]:
            for fresh in range(redraw, redraw + MAX_REDRAWS + 1):
                check()
                yield _derive_seed(plan.seed, i, fresh)
        query, skipped = generate_fit(app, seeds(), level, label)
        return query, redraw + skipped

    for i, (level, label) in enumerate(slots[: mine[-1] + 1 if mine else 0]):
        query, redraw = draw(i, 0, level, label)
        while app.instance_key(query) in seen and redraw < MAX_REDRAWS:
            query, redraw = draw(i, redraw + 1, level, label)
        seen.add(app.instance_key(query))
        if i % plan.num_shards == plan.shard_index:
            queries.append(query)
    return queries
