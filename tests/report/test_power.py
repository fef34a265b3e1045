"""``netarena power`` and ``netarena calibrate`` through the real CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common import NullAgent, QueryPlan, Runner, load_app, plan_queries
from netarena.common.cli.calibrate import Rung
from netarena.common.cli.root import cli
from netarena.common.core.app import find_baseline
from netarena.common.core.stats import rate, summarize
from netarena.common.core.types import QueryResult
from netarena.common.reporting.power import compare, curves, sizes


def test_power_from_assumed_rates_prints_the_needed_n_and_draws(tmp_path: Path) -> None:
    png = tmp_path / "power.png"
    result = CliRunner().invoke(cli, ["power", "--rates", "0.62,0.71", "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "428" in result.stdout and "419" in result.stdout  # Wilson and Wald, per agent
    assert png.stat().st_size > 10_000


def test_power_rejects_what_it_cannot_compare() -> None:
    assert CliRunner().invoke(cli, ["power", "--rates", "0.5"]).exit_code == 2
    assert CliRunner().invoke(cli, ["power"]).exit_code == 2
    assert CliRunner().invoke(cli, ["power", "--rates", "0.5,0.6", "--metric", "x"]).exit_code == 2


@pytest.mark.slow
def test_power_from_real_runs(tmp_path: Path) -> None:
    app = load_app("malt")
    queries = plan_queries(app, QueryPlan(num_queries=21, seed=8))
    dirs = []
    for agent in (app.reference_agent(), find_baseline(app, "rank-by-name").make(), NullAgent()):
        out = tmp_path / agent.name.replace(":", "_") / "results.jsonl"
        asyncio.run(Runner(app, agent).run(queries, out=out))
        dirs.append(str(out.parent))
    png = tmp_path / "p.png"
    result = CliRunner().invoke(cli, ["power", *dirs, "--plot", str(png)])
    assert result.exit_code == 0, result.output
    assert "null vs baseline:rank-by-name" in result.stdout.replace("\n", " ").replace("│", " ")
    assert "21 / 21" in result.stdout and png.exists()


def test_curves_from_real_outcomes_shrink_and_separate() -> None:
    good, bad = [True] * 90 + [False] * 10, [True] * 40 + [False] * 60
    data = curves({"good": good, "bad": bad})
    assert list(data.widths["good"]) == sizes(100)
    assert data.widths["bad"][10] > data.widths["bad"][100]
    ((pair, overlaps),) = data.overlaps.items()
    assert pair == "bad vs good" and overlaps[100] == 0.0 and overlaps[10] > 0.0
    c = compare("bad", "good", bad, good)
    assert c.n_a == 100 and c.overlap_now == 0.0 and c.wilson_n < 100


def _result(correct: bool) -> QueryResult:
    return QueryResult(query_id="q", app="toy", level=1, label="a", agent="a", correct=correct,
                       safe=True, latency_s=1.0, agent_latency_s=0.5, turns=1)


def test_a_rung_outside_its_range_is_reported() -> None:
    summary = summarize([_result(i < 90) for i in range(100)], app="toy", agent="a", seed=None)
    assert summary.solved_safely == rate([True] * 90 + [False] * 10)
    assert Rung("a", {"solved_safely": (0.85, 0.95)}, summary).ok
    off = Rung("b", {"solved_safely": (0.2, 0.3)}, summary)
    assert not off.ok and "outside [0.20, 0.30]" in off.misses[0]


def test_calibrate_runs_chosen_rungs_from_the_cli(tmp_path: Path) -> None:
    args = [
        "calibrate",
        "malt",
        "-n",
        "21",
        "--agents",
        "null,baseline:crash",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "baseline:crash" in result.stdout and "ok" in result.stdout
    lines = (tmp_path / "baseline_crash" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 21 and not json.loads(lines[0])["changed"]
