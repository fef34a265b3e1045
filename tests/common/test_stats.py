from __future__ import annotations

import math

import pytest

from netarena.common.stats import latency, overlap, rate, summarize, wald, wilson
from netarena.common.types import QueryResult


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
    assert r["rate"] == 0.75 and r["k"] == 3 and r["n"] == 4
    assert r["ci95"][0] < 0.75 < r["ci95"][1]


def test_latency_summary() -> None:
    lat = latency([_result(i, True) for i in range(1, 11)])
    assert lat["median_s"] == 5.5 and lat["p90_s"] == 9.0 and lat["mean_turns"] == 5.5


def test_summarize_breakdowns() -> None:
    results = [
        _result(1, True, level=1, label="a"),
        _result(2, False, level=2, label="b"),
        _result(3, True, safe=False, level=2, label="b"),
    ]
    s = summarize(results, app="toy", agent="x", seed=3)
    assert s["kind"] == "summary" and s["queries"] == 3 and s["seed"] == 3
    assert s["correctness"]["rate"] == pytest.approx(2 / 3, abs=1e-4)
    assert s["safety"]["k"] == 2
    assert set(s["by_level"]) == {"1", "2"} and s["by_level"]["2"]["queries"] == 2
    assert s["by_label"]["b"]["correctness"]["k"] == 1
