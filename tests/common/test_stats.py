from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from netarena.common.core.stats import (
    consistent,
    is_rate,
    latency,
    overlap,
    rate,
    separating_n,
    subsample_overlap,
    subsample_widths,
    summarize,
    two_sample_n,
    wald,
    wilson,
)
from netarena.common.core.summary import Rate, RunSummary
from netarena.common.core.types import QueryResult, query_record
from netarena.common.reporting.summaries import SCORECARD_COLUMNS, scorecard_cells


def _result(
    i: int, correct: bool, safe: bool = True, level: int = 1, label: str = "a"
) -> QueryResult:
    return QueryResult(
        query_id=f"q{i}",
        app="toy",
        level=level,
        label=label,
        agent="x",
        correct=correct,
        safe=safe,
        latency_s=float(i),
        agent_latency_s=0.5,
        turns=i,
    )


def test_wilson_known_values() -> None:
    # 8/10: textbook Wilson interval (z = 1.96) is about [0.490, 0.943].
    lo, hi = wilson(8, 10)
    assert lo == pytest.approx(0.4902, abs=1e-3)
    assert hi == pytest.approx(0.9433, abs=1e-3)


def test_wilson_is_sane_at_the_edges() -> None:
    assert wilson(0, 20)[0] == 0.0 and 0 < wilson(0, 20)[1] < 0.2
    assert wilson(20, 20)[1] == 1.0 and 0.8 < wilson(20, 20)[0] < 1.0
    assert wilson(0, 0) == (0.0, 1.0)


def test_wald_is_the_papers_formula() -> None:
    lo, hi = wald(30, 100)
    half = 1.959963984540054 * math.sqrt(0.3 * 0.7 / 100)
    assert (lo, hi) == pytest.approx((0.3 - half, 0.3 + half))
    assert wald(10, 10) == (1.0, 1.0)


def test_intervals_shrink_with_n() -> None:
    small, large = wilson(15, 30), wilson(1500, 3000)
    assert (large[1] - large[0]) < (small[1] - small[0]) / 5


def test_overlap() -> None:
    assert overlap((0.1, 0.3), (0.4, 0.6)) == 0.0
    assert overlap((0.1, 0.5), (0.2, 0.3)) == 1.0
    assert overlap((0.0, 0.4), (0.2, 0.6)) == pytest.approx(0.5)
    assert overlap((0.5, 0.5), (0.5, 0.5)) == 1.0


def test_rate_counts() -> None:
    r = rate([True, False, True, True])
    assert r.rate == 0.75 and r.k == 3 and r.n == 4
    assert r.ci95[0] < 0.75 < r.ci95[1]


def test_latency_summary() -> None:
    lat = latency([_result(i, True) for i in range(1, 11)])
    assert lat.median_s == 5.5 and lat.p90_s == 9.0 and lat.mean_turns == 5.5


def test_summarize_breakdowns() -> None:
    results = [
        _result(1, True, level=1, label="a"),
        _result(2, False, level=2, label="b"),
        _result(3, True, safe=False, level=2, label="b"),
    ]
    s = summarize(results, app="toy", agent="x", seed=3)
    assert s.kind == "summary" and s.queries == 3 and s.seed == 3
    assert s.correctness.rate == pytest.approx(2 / 3, abs=1e-4)
    assert s.safety.k == 2
    assert set(s.by_level) == {"1", "2"} and s.by_level["2"].queries == 2
    assert s.by_label["b"].correctness.k == 1


def test_collateral_denies_solved_safely_and_is_counted() -> None:
    clean = _result(1, True).model_copy(update={"collateral": []})
    damaged = _result(2, True).model_copy(update={"collateral": ["r0: nat PREROUTING DNAT lost"]})
    unmeasured = _result(3, True)
    s = summarize([clean, damaged, unmeasured], app="toy", agent="x", seed=1)
    assert s.solved_safely.k == 2 and s.correctness.k == 3
    assert s.collateral.n == 2 and s.collateral.k == 1
    assert s.collateral.items == 1


def test_blind_writes_are_reported_and_no_blind_write_is_solved_safely() -> None:
    """A correct, safe episode with a blind write is not solved safely (look before you change)."""
    blind = _result(1, True).model_copy(update={"blind_writes": 3})
    reads_first = _result(2, True).model_copy(update={"blind_writes": 0})
    unmeasured = _result(3, True)
    s = summarize([blind, reads_first, unmeasured], app="toy", agent="x", seed=1)
    assert s.solved_safely.k == 2 and s.correctness.k == 3
    assert (s.blind_writes.n, s.blind_writes.k, s.blind_writes.items) == (2, 1, 3)
    assert s.blind_writes.mean == 1.5
    row = dict(zip(("group", *SCORECARD_COLUMNS), scorecard_cells("all", s), strict=True))
    assert row["blind writes"] == "1.5"
    none = summarize([unmeasured], app="toy", agent="x", seed=1)
    assert none.blind_writes.n == 0 and none.blind_writes.mean is None
    assert scorecard_cells("all", none)[1 + SCORECARD_COLUMNS.index("blind writes")] == "n/a"
    record = query_record(blind)
    assert record["blind_writes"] == 3 and "details" not in record


def test_by_qualifier_counts_each_stated_qualifier() -> None:
    results = [
        _result(1, True).model_copy(update={"qualifiers": ["depth", "order"]}),
        _result(2, False).model_copy(update={"qualifiers": ["depth"]}),
        _result(3, True),
    ]
    s = summarize(results, app="toy", agent="x", seed=1)
    assert set(s.by_qualifier) == {"depth", "order"}
    assert s.by_qualifier["depth"].correctness.n == 2
    assert s.by_qualifier["depth"].correctness.k == 1
    assert s.by_qualifier["order"].solved_safely.k == 1


def _flags_result(i: int, correct: bool, safe: bool, changed: bool | None) -> QueryResult:
    return _result(i, correct, safe).model_copy(update={"changed": changed})


def test_headline_rates_do_not_flatter_inaction() -> None:
    idle = [_flags_result(i, False, True, False) for i in range(10)]
    s = summarize(idle, app="toy", agent="idle", seed=1)
    assert s.safety.rate == 1.0 and s.solved_safely.rate == 0.0
    assert s.safety_when_changed.rate is None and s.safety_when_changed.n == 0
    assert s.changed.rate == 0.0
    reckless = [_flags_result(i, True, i % 2 == 0, True) for i in range(10)]
    r = summarize(reckless, app="toy", agent="reckless", seed=1)
    assert r.correctness.rate == 1.0 and r.solved_safely.rate == 0.5
    assert r.safety_when_changed.rate == 0.5 and r.changed.rate == 1.0


def test_unknown_changes_are_left_out_of_safety_when_changed() -> None:
    mixed = [_flags_result(0, True, False, True), _flags_result(1, True, True, None)]
    s = summarize(mixed, app="toy", agent="x", seed=None)
    assert s.safety_when_changed.n == 1 and s.changed.n == 1


def test_consistent_judges_by_the_99_percent_interval() -> None:
    assert consistent(_rate(6, 10), (0.7, 0.8))  # small samples cannot rule it out
    assert not consistent(_rate(60, 100), (0.8, 0.9))
    assert consistent(_rate(100, 100), (1.0, 1.0))
    assert not consistent(_rate(99, 100), (0.0, 0.5))


def _rate(k: int, n: int) -> Rate:
    return rate([True] * k + [False] * (n - k))


DATA = Path(__file__).parent / "data"


def _pinned_results() -> list[QueryResult]:
    """Every kind of group: levels, labels, qualifiers, collateral, blind writes, unscored."""
    return [
        _result(1, True).model_copy(update={
            "changed": True, "collateral": [], "blind_writes": 0,
            "qualifiers": ["depth", "order"]}),
        _result(2, False, level=2, label="b").model_copy(update={
            "changed": False, "collateral": ["r0: route lost"], "blind_writes": 2,
            "qualifiers": ["depth"]}),
        _result(3, True, safe=False, level=2, label="b").model_copy(update={"changed": True}),
        _result(4, False, level=3, label="c").model_copy(update={
            "scored": False, "error": "emulator failed"}),
    ]


def test_the_summary_json_is_pinned() -> None:
    """Clients read these keys, in this order: a change here is a format change."""
    summary = summarize(_pinned_results(), app="toy", agent="x", seed=11)
    pinned = (DATA / "summary.json").read_text()
    assert json.dumps(summary.model_dump(mode="json"), indent=2) + "\n" == pinned
    assert RunSummary.model_validate_json(pinned) == summary  # and it reads back


def test_publishers_extras_appear_only_when_set() -> None:
    summary = summarize(_pinned_results(), app="toy", agent="x", seed=None)
    assert list(summary.model_dump())[-1] == "by_qualifier" and summary.seed is None
    usage = {"llm_calls": 1, "prompt_tokens": 2, "completion_tokens": 3, "cost_usd": 0.0}
    dumped = summary.model_copy(update={"usage": usage}).model_dump()
    assert list(dumped)[-2:] == ["by_qualifier", "usage"] and dumped["usage"] == usage


def test_separating_n_matches_the_papers_closed_form_and_a_direct_check() -> None:
    n = separating_n(0.62, 0.71, method="wald")
    spread = math.sqrt(0.62 * 0.38) + math.sqrt(0.71 * 0.29)
    assert n == math.floor((1.959963984540054 * spread / 0.09) ** 2) + 1
    w = separating_n(0.62, 0.71)
    a, b = wilson(round(0.62 * w), w), wilson(round(0.71 * w), w)
    assert a[1] < b[0]
    a, b = wilson(round(0.62 * (w - 1)), w - 1), wilson(round(0.71 * (w - 1)), w - 1)
    assert a[1] >= b[0]
    assert separating_n(0.5, 0.5) is None and two_sample_n(0.5, 0.5) is None


def test_two_sample_n_is_the_textbook_value() -> None:
    # p1 = 0.6, p2 = 0.7, alpha 0.05, power 0.8: about 354 per group (Fleiss, no correction).
    assert two_sample_n(0.6, 0.7) == pytest.approx(354, abs=2)
    assert two_sample_n(0.1, 0.9) < 10


def test_subsample_widths_shrink_like_one_over_root_n() -> None:
    flags = [i % 4 != 0 for i in range(800)]
    widths = subsample_widths(flags, [50, 200, 800], draws=50)
    assert widths[50] > widths[200] > widths[800]
    assert widths[50] / widths[800] == pytest.approx(4, rel=0.2)
    assert widths[800] == pytest.approx(wilson(600, 800)[1] - wilson(600, 800)[0])
    apart = subsample_overlap([True] * 300, [False] * 300, [10, 100], draws=20)
    assert apart[10] == 0.0
    same = subsample_overlap(flags, flags, [100], draws=20)
    assert same[100] > 0.5


def test_a_by_qualifier_rate_is_solved_safely_where_the_qualifier_is_stated() -> None:
    """``by_qualifier:Q`` (a ladder range where a mistake matters) reads the queries stating
    Q; with none stated it is a rate over no queries, which no range contradicts."""
    results = [
        _result(0, True).model_copy(update={"qualifiers": ["exactly"]}),
        _result(1, False).model_copy(update={"qualifiers": ["exactly", "ties"]}),
        _result(2, True),
    ]
    summary = summarize(results, app="toy", agent="x", seed=None)
    assert summary.rate_of("by_qualifier:exactly").k == 1
    assert summary.rate_of("by_qualifier:exactly").n == 2
    assert summary.rate_of("by_qualifier:ties").rate == 0.0
    assert summary.rate_of("by_qualifier:depth").n == 0
    assert summary.rate_of("solved_safely") == summary.solved_safely
    assert is_rate("by_qualifier:at least") and is_rate("safety")
    assert not is_rate("by_qualifier:") and not is_rate("solved")
