"""AgentBeats results files: shape, types, and the documented DuckDB queries ranking agents."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from netarena.common.errors import ConfigError
from netarena.common.report import agentbeats_results, load_results, write_agentbeats

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "agentbeats.md"


def _doc_sql(name: str) -> str:
    """The SQL block of docs/agentbeats.md whose first line is ``-- <name>``."""
    blocks = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.S)
    (sql,) = [b for b in blocks if b.startswith(f"-- {name}\n")]
    return sql


def test_results_file_shape_and_types(toy_results: list[Path]) -> None:
    records = load_results([toy_results[0]])
    doc = agentbeats_results(records)
    assert set(doc) == {"status", "participants", "results"}
    assert doc["status"] == "completed"
    assert doc["participants"] == {"toy_operator": "toy-reference"}
    *queries, summary = doc["results"]
    assert len(queries) == 120 and summary["kind"] == "summary"
    for q in queries:
        assert q["kind"] == "query"
        assert isinstance(q["correct"], bool) and isinstance(q["safe"], bool)
        assert isinstance(q["level"], int) and isinstance(q["turns"], int)
        assert isinstance(q["latency_s"], float)
        assert "details" not in q and isinstance(q["value"], int)  # app details are flat
    assert summary["correctness"]["rate"] == 1.0
    json.dumps(doc)  # serialisable as is


def test_one_file_per_assessment(toy_results: list[Path], tmp_path: Path) -> None:
    records = load_results(toy_results)
    with pytest.raises(ConfigError, match="one app and one agent"):
        agentbeats_results(records)
    files = write_agentbeats(records, tmp_path)
    assert [f.name for f in files] == ["toy-null.json", "toy-toy-half.json",
                                       "toy-toy-reference.json"]


def _results_dir(toy_results: list[Path], tmp_path: Path) -> Path:
    """Results files as the leaderboard stores them, one per assessment, role malt_operator."""
    out = tmp_path / "results"
    out.mkdir()
    for path in toy_results:
        records = load_results([path])
        agent = records[0].agent
        doc = agentbeats_results(records, participants={"malt_operator": f"id-{agent}"})
        (out / f"{agent}.json").write_text(json.dumps(doc))
    return out


def test_documented_duckdb_queries_rank_agents(toy_results: list[Path], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the dev extra")
    results = _results_dir(toy_results, tmp_path)
    monkeypatch.chdir(results.parent)
    con = duckdb.connect()
    ranked = con.execute(_doc_sql("rank-by-summary")).fetchall()
    assert [row[0] for row in ranked] == ["id-toy-reference", "id-toy-half", "id-null"]
    ref, half, null = ranked
    assert ref[1] == 1.0 and null[1] == 0.0 and 0.0 < half[1] < 1.0
    assert ref[2] > half[3]  # the reference's CI low clears the half agent's CI high
    assert ref[5] == 120
    per_level = con.execute(_doc_sql("per-level")).fetchall()
    assert len(per_level) == 9  # 3 agents x 3 levels
    level1 = [row for row in per_level if row[1] == 1]
    assert level1[0][0] == "id-toy-reference" and level1[0][3] == 1.0
    assert all(row[2] == 40 for row in per_level)


@pytest.mark.parametrize("app", ["malt", "route", "k8s"])
def test_scenario_is_a_valid_local_run(app: str) -> None:
    from netarena.common.app import load_app
    from netarena.common.request import EvalRequest, parse_request

    scenario = tomllib.loads((ROOT / "scenarios" / f"{app}.toml").read_text())
    green, (purple,) = scenario["green_agent"], scenario["participants"]
    assert purple["role"] == f"{app}_operator"
    assert f"netarena serve {app} " in green["cmd"]
    assert f"--solver reference --app {app} " in purple["cmd"]
    for agent in (green, purple):
        port = agent["endpoint"].rsplit(":", 1)[1]
        assert f"--port {port}" in agent["cmd"] and f":{port}/" in agent["cmd"]
    try:
        app_cls = type(load_app(app))
    except Exception as exc:  # noqa: BLE001 - an app still being built is skipped below
        pytest.skip(f"app {app} not loadable here: {exc}")
    request = EvalRequest(participants={purple["role"]: purple["endpoint"]},
                          config=scenario["config"])
    parsed = parse_request(request, app_cls)
    assert parsed.plan.seed == scenario["config"]["seed"]


def test_results_files_read_back_as_reported_runs(toy_results: list[Path], tmp_path: Path) -> None:
    """A results file, numbers turned to floats as A2A's Struct does, reads back exactly."""
    original = load_results([toy_results[1]])
    doc = agentbeats_results(original)
    for record in doc["results"]:
        for key, value in record.items():
            if isinstance(value, int) and not isinstance(value, bool):
                record[key] = float(value)
    path = tmp_path / "half.json"
    path.write_text(json.dumps(doc))
    back = load_results([path])
    assert [r.query_id for r in back] == [r.query_id for r in original]
    for got, want in zip(back, original, strict=True):
        assert got.level == want.level and isinstance(got.level, int)
        assert (got.correct, got.safe, got.turns) == (want.correct, want.safe, want.turns)
        assert got.details["value"] == want.details["value"]
    renamed = {**doc, "participants": {"toy_operator": "agentbeats-id-42"}}
    path.write_text(json.dumps(renamed))
    assert {r.agent for r in load_results([path])} == {"agentbeats-id-42"}
    path.write_text(json.dumps({"status": "completed"}))
    with pytest.raises(ConfigError, match="no \"results\" list"):
        load_results([path])
