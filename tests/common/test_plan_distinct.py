"""Plans draw queries without replacement: a repeated instance is drawn again."""

from __future__ import annotations

from collections import Counter

import pytest

from netarena.common.core.errors import UnfitSeed
from netarena.common.core.plan import MAX_REDRAWS, QueryPlan, plan_queries
from tests.helpers.toy import ToyApp


def _targets(queries: list) -> Counter:
    return Counter(q.truth["target"] for q in queries)


def test_a_plan_repeats_no_instance_while_the_label_has_fresh_ones() -> None:
    app = ToyApp({"max_target": 50})
    queries = plan_queries(app, QueryPlan(num_queries=30, levels=(1,), seed=4))
    assert len({app.instance_key(q) for q in queries}) == 30
    assert queries == plan_queries(app, QueryPlan(num_queries=30, levels=(1,), seed=4))


def test_without_redraws_the_same_plan_would_repeat() -> None:
    """The toy's 50 targets: 30 independent draws almost surely repeat one (p > 0.99)."""
    app = ToyApp({"max_target": 50})
    from netarena.common.core.plan import _derive_seed

    raw = [app.generate(_derive_seed(4, i), 1, "small") for i in range(30)]
    assert max(_targets(raw).values()) > 1


def test_a_small_label_keeps_repeats_once_exhausted() -> None:
    app = ToyApp({"max_target": 3})
    queries = plan_queries(app, QueryPlan(num_queries=8, levels=(1,), seed=1))
    assert len(queries) == 8 and set(_targets(queries)) == {1, 2, 3}


def test_shards_partition_the_deduplicated_plan() -> None:
    app = ToyApp({"max_target": 50})
    whole = plan_queries(app, QueryPlan(num_queries=40, levels=(1,), seed=9))
    shards = [
        plan_queries(
            app, QueryPlan(num_queries=40, levels=(1,), seed=9, shard_index=i, num_shards=3)
        )
        for i in range(3)
    ]
    assert sorted(q.id for s in shards for q in s) == sorted(q.id for q in whole)
    assert len({app.instance_key(q) for s in shards for q in s}) == 40


class _Picky(ToyApp):
    """A toy whose instances cannot carry the label for some seeds (``unfit`` picks them)."""

    def __init__(self, unfit, params=None) -> None:
        super().__init__(params)
        self.unfit, self.refused = unfit, 0

    def generate(self, seed: int, level: int, label: str | None = None):
        if self.unfit(seed):
            self.refused += 1
            raise UnfitSeed(f"seed {seed} cannot carry {label}")
        return super().generate(seed, level, label)


def test_a_seed_unfit_for_its_label_is_passed_over_and_the_plan_stays_deterministic() -> None:
    app = _Picky(lambda seed: seed % 3 == 0, {"max_target": 500})
    queries = plan_queries(app, QueryPlan(num_queries=30, levels=(1,), seed=4))
    assert len(queries) == 30 and app.refused > 0
    assert all(q.seed % 3 for q in queries)
    again = plan_queries(_Picky(lambda seed: seed % 3 == 0, {"max_target": 500}),
                         QueryPlan(num_queries=30, levels=(1,), seed=4))
    assert [q.id for q in again] == [q.id for q in queries]


def test_a_label_no_seed_fits_still_fails_after_the_redraws() -> None:
    app = _Picky(lambda seed: True)
    with pytest.raises(UnfitSeed):
        plan_queries(app, QueryPlan(num_queries=2, levels=(1,), seed=4))
    assert app.refused == MAX_REDRAWS + 1
