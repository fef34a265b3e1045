"""Every comparison bound a MALT query states decides its answer, and the audit shows it.

A bound (``netarena.malt.bounds``) is a filter's comparison word ("of exactly", "of at
least", "below", "from A to B inclusive", ...) or a ranking's tie order. Read another way
("exactly" as "at least", inclusive as exclusive, ties reversed) it must change the answer
or the resulting topology on every query that states it: the generator redraws until it
does. These tests read the tasks back from the prompts (what agents see) and judge each
misreading on the whole topology with the episode's comparisons; the slow one runs the
misreading baselines through the sandbox.
"""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.malt import MaltApp, base_topology
from netarena.malt.audit import THRESHOLD
from netarena.malt.baselines import MISREADERS
from netarena.malt.bounds import BOUNDS, MISREADINGS, misread
from netarena.malt.generator import solve
from netarena.malt.operations import SPEED_TESTS, contained, measure_value
from netarena.malt.prompts import describe
from netarena.malt.solver import parse_steps

APP = MaltApp()
BASE = base_topology(APP.config.topology_params())


def _plan(n: int, seed: int, labels: tuple[str, ...] | None = None) -> list:
    return plan_queries(APP, QueryPlan(num_queries=n, seed=seed, labels=labels))


def test_each_misreading_reads_its_words_and_differs_at_the_bound() -> None:
    """The phrase a bound is stated in parses back to it, and each misreading disagrees
    with it next to the stated value (or a range's end)."""
    for m in MISREADINGS:
        for stated, read in m.swap.items():
            if m.bound == "ties":
                continue
            bps = [10, 40] if stated in ("range", "between") else 10
            op = {"op": "count", "node": "ju1.a1", "kind": "EK_PORT", "speed": {"cmp": stated,
                                                                              "bps": bps}}
            assert parse_steps(f"\nTask:\n1. {describe(op)}\n\n") == [op], m.name
            near = [e + d for e in (bps if isinstance(bps, list) else [bps]) for d in (-1, 0, 1)]
            assert any(
                SPEED_TESTS[stated](v, bps) != SPEED_TESTS[read](v, bps) for v in near
            ), m.name


@pytest.mark.slow
def test_every_bound_misreading_is_judged_wrong_wherever_it_changes_the_task() -> None:
    """The audit's checks over a default plan: each bound stated, each misreading caught."""
    queries = _plan(160, 41)
    stated = Counter(b for q in queries for b in q.qualifiers if b in BOUNDS)
    assert set(stated) == set(BOUNDS), stated
    checks = {c.name: c for c in APP.audit_checks(queries)}
    for m in MISREADINGS:
        check = checks[f"bound:{m.name}"]
        assert check.queries >= 3 and check.rate >= THRESHOLD, check
        assert check.rate == 1.0, check  # redrawn at generation: every one, not 90%
    assert all(c.passed for c in checks.values())


def test_a_bound_that_decides_nothing_fails_the_check() -> None:
    """The check can fail: "exactly" the fastest speed reads the same as "at least" it."""
    queries = [q for q in _plan(80, 5, ("count",)) if "exactly" in q.qualifiers]
    planted = []
    for query in queries:
        op = dict(query.truth["ops"][0])
        ports = contained(BASE, op["node"], "EK_PORT")
        fastest = max(BASE.nodes[p]["physical_capacity_bps"] for p in ports)
        op["speed"] = {"cmp": "eq", "bps": fastest}
        truth = solve(BASE, [op])
        prompt = query.prompt.replace(describe(query.truth["ops"][0]), describe(op))
        planted.append(query.model_copy(update={"prompt": prompt, "truth": truth}))
    assert len(planted) >= 3
    check = {c.name: c for c in APP.audit_checks(planted)}["bound:exactly->at least"]
    assert check.queries == len(planted) and not check.passed, check


def test_ties_are_stated_only_where_they_decide_the_ranking() -> None:
    ranks = _plan(120, 7, ("rank", "add-rank", "remove-rank", "update-rank"))
    states = [q for q in ranks if "ties" in q.qualifiers]
    assert 0.2 * len(ranks) <= len(states) < len(ranks)
    for query in ranks:
        ops = parse_steps(query.prompt)
        flipped = [{**op, "ties": "desc"} if op["op"] == "rank" else op for op in ops]
        if "ties" not in query.qualifiers:  # no tie reaches the answer: either order is right
            assert solve(BASE, flipped)["answer"] == query.truth["answer"], query.id
        else:
            assert solve(BASE, misread(ops, "ties->reversed"))["answer"] != query.truth[
                "answer"
            ], query.id
    assert {q.truth["ops"][-1]["ties"] for q in states} == {"asc", "desc"}


def test_an_if_threshold_is_never_the_measured_value() -> None:
    """So "greater than" and "at least" take one branch: strictness is not a stated bound."""
    for query in _plan(60, 9, ("if-capacity", "if-count")):
        (op,) = query.truth["ops"]
        assert measure_value(BASE, op["measure"]) != op["threshold"], query.id


@pytest.mark.slow
def test_each_misreading_baseline_is_wrong_where_its_bounds_are_stated() -> None:
    """Through the sandbox, over 240 queries: on those stating a bound a misreading baseline
    misreads, it fails at least 90% (the generator makes it 100%)."""
    queries = _plan(240, 11)
    for spec in MISREADERS:
        bounds = {m.removeprefix("by_qualifier:") for m in spec.expected if ":" in m}
        stating = [q for q in queries if bounds & set(q.qualifiers)]
        agent = find_baseline(APP, spec.name).make()
        results = asyncio.run(Runner(APP, agent, RunConfig(concurrency=2)).run(stating))
        assert not [r.error for r in results if r.error]
        wrong = sum(not (r.correct and r.safe) for r in results)
        assert len(stating) >= 10 and wrong >= 0.9 * len(stating), (spec.name, wrong, len(stating))
