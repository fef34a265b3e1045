"""Every qualifier a MALT query states matters, is recorded, and is calibrated.

A qualifier (``netarena.malt.qualifiers``) is a detail an imprecise reader could drop:
depth, kind, a speed, stage or total filter, the order, the top N, the branch of an
if-else. The generator redraws a query until ignoring any stated one (or misreading any
stated bound, ``tests/malt/test_bounds.py``) changes the answer or the resulting topology;
these tests read the tasks back from the prompts (what agents see), not from the
generator's records, and run the blind baselines through the sandbox.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.stats import summarize
from netarena.common.core.types import query_record
from netarena.malt import LABELS, MaltApp, base_topology
from netarena.malt.audit import MISREAD, checks_of
from netarena.malt.generator import misses_truth, stated
from netarena.malt.qualifiers import QUALIFIERS
from netarena.malt.solver import parse_steps

APP = MaltApp()
ALL = [(level, label) for level, labels in LABELS.items() for label in labels]


def _queries(app: MaltApp, n: int, seed: int, level: int | None = None, label: str = "") -> list:
    plan = QueryPlan(
        num_queries=n,
        levels=(level,) if level else (1, 2, 3),
        labels=(label,) if label else None,
        seed=seed,
    )
    return plan_queries(app, plan)


def _misread_is_wrong(app: MaltApp, query, detail: str) -> bool:
    """Whether the task of the prompt, read blind to a qualifier (or misreading a bound in
    any of its ways), misses the truth every time."""
    base = base_topology(app.config.topology_params())
    ops = parse_steps(query.prompt)
    checks = checks_of(detail)
    assert checks, detail
    return all(misses_truth(base, MISREAD[check](ops), query.truth) for check in checks)


@pytest.mark.parametrize(("level", "label"), ALL)
def test_every_stated_qualifier_is_load_bearing(level: int, label: str) -> None:
    base = base_topology(APP.config.topology_params())
    for query in _queries(APP, 6, 31, level, label):
        ops = parse_steps(query.prompt)
        assert query.qualifiers == stated(base, ops)
        for detail in query.qualifiers:
            assert _misread_is_wrong(APP, query, detail), (query.id, detail)


def test_on_googles_uniform_example_idle_qualifiers_are_dropped_not_stated() -> None:
    """There every port runs at one speed: ``lowest first`` changes no ranking, so it goes
    (and every ranking is a tie, so its tie order always matters)."""
    example = MaltApp({"topology": "google-example"})
    queries = _queries(example, 30, 4, 1, "rank") + _queries(example, 24, 4, 3)
    for query in queries:
        for detail in query.qualifiers:
            assert _misread_is_wrong(example, query, detail), (query.id, detail)
    assert not any("order" in q.qualifiers for q in queries)
    assert all("ties" in q.qualifiers for q in queries if q.label == "rank")


def test_every_label_states_its_qualifiers_often_enough() -> None:
    """Wherever a label states a qualifier, ignoring it costs at least 10 points there."""
    for level, label in ALL:
        queries = _queries(APP, 60, 1, level, label)
        counts = Counter(q for query in queries for q in query.qualifiers if q in QUALIFIERS)
        rare = {q: n for q, n in counts.items() if n < 0.12 * len(queries)}
        assert not rare, (label, rare)


def test_results_summaries_and_a2a_records_carry_the_qualifiers() -> None:
    queries = _queries(APP, 24, 8)
    results = asyncio.run(Runner(APP, APP.reference_agent(), RunConfig()).run(queries))
    assert [r.qualifiers for r in results] == [q.qualifiers for q in queries]
    assert all(query_record(r)["qualifiers"] == r.qualifiers for r in results)
    summary = summarize(results, app="malt", agent="reference", seed=8)
    stated_any = {q for query in queries for q in query.qualifiers}
    assert set(summary.by_qualifier) == stated_any and len(stated_any) >= 5
    assert all(m.solved_safely.rate == 1.0 for m in summary.by_qualifier.values())


@pytest.mark.slow
def test_each_blind_baseline_is_wrong_where_its_qualifier_is_stated() -> None:
    """Over 300 queries, on those stating the qualifier, its blind reader fails >= 90%."""
    queries = _queries(APP, 300, 11)
    for qualifier in QUALIFIERS:
        stating = [q for q in queries if qualifier in q.qualifiers]
        agent = find_baseline(APP, f"{qualifier}-blind").make()
        results = asyncio.run(Runner(APP, agent, RunConfig(concurrency=2)).run(stating))
        assert not [r.error for r in results if r.error]
        wrong = sum(not (r.correct and r.safe) for r in results)
        assert len(stating) >= 10 and wrong >= 0.9 * len(stating), (qualifier, wrong, len(stating))
