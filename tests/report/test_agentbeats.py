"""AgentBeats results files: shape, types, and the documented DuckDB queries ranking agents."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from netarena.common.core.errors import ConfigError
from netarena.common.reporting.report import agentbeats_results, write_agentbeats
from netarena.common.reporting.results import load_results
from netarena.common.reporting.summaries import run_summaries

ROOT = Path(__file__).resolve().parents[2]


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


def _write(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def _shard(records: list, index: int, shards: int) -> list:
    return [r for i, r in enumerate(records) if i % shards == index]


def _leaderboard_dir(toy_results: list[Path], tmp_path: Path) -> Path:
    """Results files as leaderboards store them, in every shape NetArena may meet there."""
    ref, half, null = (load_results([p]) for p in toy_results)
    out = tmp_path / "board"
    # v2, sharded: the summary job concatenates both shards' records (two summaries).
    shards = [agentbeats_results(_shard(ref, i, 2)) for i in range(2)]
    _write(out / "results" / "ref-v2.json", {
        "status": "completed",
        "participants": {"netarena_malt": "green-id", "malt_operator": "id-ref"},
        "results": [r for doc in shards for r in doc["results"]]})
    # The same participant resubmitted the same queries: they count once.
    _write(out / "results" / "ref-again.json", {
        "status": "completed", "participants": {"malt_operator": "id-ref"},
        "results": agentbeats_results(ref[:10])["results"]})
    # v1 (compose client): no status.
    _write(out / "results" / "half-v1.json", {
        "participants": {"malt_operator": "id-half"},
        "results": agentbeats_results(half)["results"]})
    # From before integers: numbers as floats, malt's old "Label".
    old = agentbeats_results(null)["results"]
    for record in old:
        for key in ("level", "turns", "format"):
            if key in record:
                record[key] = float(record[key])
        if record["kind"] == "query":
            record["Label"] = record.pop("label")
    _write(out / "results" / "null-old.json", {
        "status": "completed", "participants": {"malt_operator": "id-null"}, "results": old})
    # A failed run never ranks.
    _write(out / "results" / "broken.json", {
        "status": "failed", "participants": {"malt_operator": "id-broken"},
        "results": agentbeats_results(ref)["results"]})
    return out


def test_leaderboard_queries_pool_shards_and_read_v1_v2_and_old_files(
        toy_results: list[Path], tmp_path: Path) -> None:
    """Files without recorded settings pool per participant; the old ``Label`` file makes
    the app's preload fail (named), and ``netarena leaderboard`` still reads every run."""
    pytest.importorskip("duckdb", reason="duckdb is in the dev extra")
    from netarena.common.reporting.leaderboard import run_queries

    tables, problem = run_queries(_leaderboard_dir(toy_results, tmp_path))
    assert problem is not None and "null-old.json" in problem
    ranked, per_level, per_label, not_ranked = (t.rows for t in tables)
    assert [row[0] for row in ranked] == ["id-ref", "id-half", "id-null"]
    ref, half, null = ranked
    assert ref[1] == 1.0 and ref[8] == 120  # both shards pooled, the resubmission counted once
    assert null[1] == 0.0 and null[8] == 120 and 0.0 < half[1] < 1.0
    assert ref[2] > half[3]  # the reference's CI low clears the half agent's CI high
    assert ref[2] == pytest.approx(0.969, abs=0.001)  # Wilson, n = 120, k = 120
    assert len(per_level) == 9 and all(row[2] == 40 for row in per_level)
    assert {type(row[1]) for row in per_level} == {int}
    assert {row[1] for row in per_label} == {"small", "medium", "big", "huge"}
    assert {row[0] for row in per_label} == {"id-ref", "id-half", "id-null"}
    assert [(row[0], row[2]) for row in not_ranked] == [("id-broken", "run failed")]


def test_netarena_report_separates_participants(toy_results: list[Path], tmp_path: Path) -> None:
    """Every record's agent is the gateway's proxy URL; the participant ids tell them apart."""
    ref, null = load_results([toy_results[0]]), load_results([toy_results[2]])
    files = []
    for name, records in (("a", ref[:30]), ("b", null[:6])):
        doc = agentbeats_results(records)
        for record in doc["results"]:
            record.update(agent="http://127.0.0.1:8080/malt_operator",
                          participant_role="malt_operator",
                          participant_id="http://127.0.0.1:8080/malt_operator")
        doc["participants"] = {"netarena_malt": "green", "malt_operator": f"id-{name}"}
        files.append(tmp_path / f"{name}.json")
        _write(files[-1], doc)
    runs = run_summaries(load_results(files))["toy"]
    assert [(r.agent, r.queries, r.correctness.rate) for r in runs] == [
        ("id-a", 30, 1.0), ("id-b", 6, 0.0)]


@pytest.mark.parametrize("app", ["malt", "route", "k8s"])
def test_scenario_is_a_valid_local_run(app: str) -> None:
    from netarena.common.core.app import load_app
    from netarena.common.serving.request import EvalRequest, parse_request

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
    assert "seed" not in scenario["config"]  # a fresh seed per run, reported back
    assert any("fresh" in note for note in parsed.notes) and isinstance(parsed.plan.seed, int)


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


def test_netarena_report_leaves_failed_runs_out_and_reads_old_files(
        toy_results: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A failed run never ranks; malt's old ``Label`` reads back; another format is skipped."""
    board = _leaderboard_dir(toy_results, tmp_path) / "results"
    _write(board / "reference-impl.json", {  # the reference implementation's own files
        "participants": {"malt_operator": "id-ref-impl"},
        "results": [{"Query": "q", "Label": "capacity planning, level-1, add",
                     "Result-Correctness": "Pass", "Result-Safety": "Pass", "Error": "x"},
                    {"avg_correctness": 1.0}]})
    with caplog.at_level("WARNING"):
        runs = run_summaries(load_results(sorted(board.glob("*.json"))))["toy"]
    by_agent = {r.agent: r for r in runs}
    assert set(by_agent) == {"id-ref", "id-half", "id-null"}  # not id-broken, not id-ref-impl
    assert by_agent["id-null"].queries == 120  # the old file, "Label" and floats
    assert {"small", "medium", "big", "huge"} <= set(by_agent["id-null"].by_label)
    assert "run failed, left out" in caplog.text
    assert "2 records are not NetArena query records" in caplog.text
    with pytest.raises(ConfigError, match="no query records to report"):
        load_results([board / "broken.json"])


def test_report_cli_on_a_leaderboard_folder_has_no_traceback(
        toy_results: list[Path], tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from netarena.common.cli.root import cli

    board = _leaderboard_dir(toy_results, tmp_path) / "results"
    result = CliRunner().invoke(cli, ["report", *map(str, sorted(board.glob("*.json"))),
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and "id-broken" not in result.output
    assert "id-null" in result.output
    only_failed = CliRunner().invoke(cli, ["report", str(board / "broken.json"),
                                           "--out", str(tmp_path / "out2")])
    assert only_failed.exit_code == 2 and "Traceback" not in only_failed.output


def test_records_whose_role_is_not_a_name_are_left_out_with_a_warning(
        toy_results: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    doc = agentbeats_results(load_results([toy_results[0]]))
    for i, record in enumerate(doc["results"]):
        if record["kind"] == "query":
            record["participant_role"] = 'toy_operator""' if i % 2 else "toy_operator"
    path = tmp_path / "results" / "mixed.json"
    _write(path, doc)
    with caplog.at_level("WARNING"):
        records = load_results([path])
    assert len(records) == 60  # the 60 records with a role that is a name
    assert "60 records whose participant role is not a name; skipped" in caplog.text
