"""A report rendered from real MALT runs (reference and null agents through the core runner)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from netarena.common import NullAgent, QueryPlan, Runner, load_app, plan_queries
from netarena.common.reporting.report import write_report
from netarena.common.reporting.results import load_results


@pytest.mark.slow
def test_malt_report(tmp_path: Path) -> None:
    app = load_app("malt")
    queries = plan_queries(app, QueryPlan(num_queries=12, seed=11))
    files = []
    for agent in (app.reference_agent(), NullAgent()):
        out = tmp_path / agent.name / "results.jsonl"
        asyncio.run(Runner(app, agent).run(queries, out=out))
        files.append(out.parent)
    report = write_report(load_results(files), tmp_path / "report")
    names = {p.name for p in report.plots}
    assert names == {
        "rates.png",
        "malt-levels.png",
        "malt-labels.png",
        "malt-overlap.png",
        "malt-power.png",
    }
    text = report.text.read_text()
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():  # the first row per agent is its overall row
        if line.split()[:1] in (["malt-reference"], ["null"]):
            rows.setdefault(line.split()[0], line.split())
    assert rows["malt-reference"][1:3] == ["12", "1.000"]
    assert rows["null"][1:3] == ["12", "0.000"]
    for level in ("1", "2", "3"):
        assert f"\n{level} " in text  # every level has a breakdown row
    html = report.html.read_text()
    assert "malt-reference" in html and 'src="malt-overlap.png"' in html
