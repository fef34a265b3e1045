"""Plans draw queries without replacement: a repeated instance is drawn again."""

from __future__ import annotations

from collections import Counter

from netarena.common.core.plan import QueryPlan, plan_queries
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
