"""No degenerate MALT queries: name order and constants fail where the reference succeeds.

On Google's example every port runs at 1 Gb/s and every block has the same size, so ranking
by name is ranking by capacity and a count is a constant. The default ``datacenter`` fabric
must give every rank, count and capacity query one right answer that neither strategy can
produce, while the reference still solves everything.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.malt import LABELS, MaltApp

APP = MaltApp()
ALL = [(level, label) for level, labels in LABELS.items() for label in labels]
NUMBERS = [
    "count",
    "capacity",
    "add-capacity",
    "remove-count",
    "update-capacity",
    "add-count",
    "if-capacity",
    "if-count",
]
"""Labels whose answer is a count or a capacity (a number, or capacity rows)."""


def _queries(app: MaltApp, level: int, label: str, n: int, seed: int = 13) -> list:
    return plan_queries(app, QueryPlan(num_queries=n, levels=(level,), labels=(label,), seed=seed))


def _rate(app: MaltApp, agent, queries: list) -> float:
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=4)).run(queries))
    assert not [r.error for r in results if r.error]
    return sum(r.correct and r.safe for r in results) / len(results)


def _level(label: str) -> int:
    return next(lv for lv, lb in ALL if lb == label)


@pytest.mark.parametrize(("level", "label"), ALL)
def test_reference_solves_every_label(level: int, label: str) -> None:
    assert _rate(APP, APP.reference_agent(), _queries(APP, level, label, 4)) == 1.0


def test_name_order_fails_on_level_1_rank() -> None:
    queries = _queries(APP, 1, "rank", 30)
    assert _rate(APP, APP.reference_agent(), queries) == 1.0
    assert _rate(APP, find_baseline(APP, "rank-by-name").make(), queries) <= 0.6


@pytest.mark.parametrize("label", NUMBERS)
def test_no_constant_is_right_more_than_a_tenth_of_the_time(label: str) -> None:
    """The best constant in hindsight (the commonest true answer) is right <= 10% of the time."""
    answers = Counter(
        repr(q.truth["answer"]["data"]) for q in _queries(APP, _level(label), label, 100, seed=5)
    )
    assert answers.most_common(1)[0][1] <= 10, answers.most_common(3)


def test_on_googles_example_name_order_and_constants_do_win() -> None:
    """Why the example is not the default: there, the degenerate strategies score."""
    example = MaltApp({"topology": "google-example"})
    ranks = [  # name order is right where all tie and ties go by name ascending
        q
        for q in _queries(example, 1, "rank", 12)
        if "top" not in q.truth["ops"][0] and q.truth["ops"][0].get("ties") == "asc"
    ]
    assert _rate(example, find_baseline(example, "rank-by-name").make(), ranks) == 1.0
    counts = Counter(
        repr(q.truth["answer"]["data"]) for q in _queries(example, 1, "count", 40, seed=5)
    )
    assert counts.most_common(1)[0][1] >= 8


def test_each_strategy_fails_exactly_where_its_mistake_matters() -> None:
    """Over every label: name order loses only on rankings, a constant only on numbers."""
    rank_by_name = find_baseline(APP, "rank-by-name").make()
    constant = find_baseline(APP, "constant-answer").make()
    for level, label in ALL:
        queries = _queries(APP, level, label, 4, seed=21)
        names, numbers = _rate(APP, rank_by_name, queries), _rate(APP, constant, queries)
        assert names <= 0.6 if label.endswith("rank") else names == 1.0, (label, names)
        assert numbers <= 0.1 if label in NUMBERS else numbers == 1.0, (label, numbers)
