"""The leaderboard queries: one row per configuration, run as the AgentBeats app runs them.

The results files are written from real A2A evaluations of the toy app by a live green
server (records as the gateway keeps them), so the settings the rows show are the ones the
server records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from netarena.a2a_llm import purple_app
from netarena.common.reporting.leaderboard import (
    PRELOAD,
    QUERIES,
    normalise_keys,
    queries_json,
    run_queries,
)
from netarena.common.serving.server import green_app
from tests.a2a.servers import gateway_records, serving, stream_03
from tests.helpers.toy import ToyApp

duckdb = pytest.importorskip("duckdb", reason="duckdb is in the dev extra")

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "leaderboard" / "queries"


def test_shipped_query_files_are_the_queries(tmp_path: Path) -> None:
    """leaderboard/queries is written from netarena.common.reporting.leaderboard and kept equal."""
    from netarena.common.reporting.leaderboard import write_queries

    written = {p.name: p.read_text() for p in write_queries(tmp_path)}
    assert written == {p.name: p.read_text() for p in SHIPPED.iterdir()}
    editor = json.loads((SHIPPED / "agentbeats.json").read_text())
    assert [q["name"] for q in editor] == list(QUERIES)
    assert json.loads(queries_json()) == editor


async def _evaluate(green: str, purple: str, config: dict[str, Any]) -> list[Any]:
    events = await stream_03(green, {"participants": {"toy_operator": purple},
                                     "config": {"seed": 7, "num_queries": 12, **config}})
    assert events[-1]["status"]["state"] == "completed", events[-1]
    artifact = next(e for e in events if e.get("kind") == "artifact-update")
    return gateway_records(artifact["artifact"]["parts"])


def _file(folder: Path, name: str, agent_id: str, records: list[Any],
          status: str | None = "completed") -> None:
    doc: dict[str, Any] = {"participants": {"netarena_toy": "green-id", "toy_operator": agent_id},
                           "results": records}
    if status is not None:
        doc["status"] = status
    (folder / name).write_text(json.dumps(doc))


@pytest.fixture(scope="module")
def board(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A leaderboard repository's results/ as the AgentBeats summary job would leave it."""
    import asyncio

    async def play() -> dict[str, list[Any]]:
        async with (
            serving(lambda url: green_app(ToyApp, url)) as green,
            serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
        ):
            return {
                "turns1": await _evaluate(green, purple, {"max_turns": 1}),
                "turns10": await _evaluate(green, purple, {"max_turns": 10}),
                "shard0": await _evaluate(green, purple, {"num_shards": 2, "shard_index": 0}),
                "shard1": await _evaluate(green, purple, {"num_shards": 2, "shard_index": 1}),
                "levels1": await _evaluate(green, purple, {"levels": [1]}),
            }

    runs = asyncio.run(play())
    root = tmp_path_factory.mktemp("leaderboard")
    results = root / "results"
    results.mkdir()
    # The same agent at max_turns 1 and 10 (file names sort the "better" one first and last).
    _file(results, "a-20260101.json", "id-a", runs["turns1"])
    _file(results, "a-20250101.json", "id-a", runs["turns10"])
    # One run in two shards, as two files: one configuration, pooled.
    _file(results, "b-shard0.json", "id-b", runs["shard0"])
    _file(results, "b-shard1.json", "id-b", runs["shard1"])
    # A failed run never ranks; a v1 file (no status) from before integers does.
    _file(results, "c-failed.json", "id-c", runs["turns10"], status="failed")
    old = [{k: float(v) if k in ("level", "turns", "format") and isinstance(v, int) else v
            for k, v in r.items() if k not in ("config", "netarena_version")}
           for r in runs["levels1"]]
    _file(results, "d-old.json", "id-d", old, status=None)
    return root


def _preloaded(root: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A DuckDB connection after exactly the app's preload, run in the repository."""
    monkeypatch.chdir(root)
    con = duckdb.connect()
    con.execute(PRELOAD.format(glob="results/*.json"))
    return con


def _rows(con: Any, name: str) -> list[dict[str, Any]]:
    query = next(q["query"] for q in json.loads((SHIPPED / "agentbeats.json").read_text())
                 if q["name"] == name)
    cursor = con.execute(query)
    columns = [d[0] for d in cursor.description]
    return [dict(zip(columns, row, strict=True)) for row in cursor.fetchall()]


def test_one_row_per_configuration_in_the_apps_preload(
        board: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    con = _preloaded(board, monkeypatch)
    rows = _rows(con, "leaderboard")
    assert list(rows[0])[0] == "id"  # the app requires the participant id first
    by = {(r["id"], r["Max turns"], r["Levels"]): r for r in rows}
    assert set(by) == {("id-a", "1", "[1,2,3]"), ("id-a", "10", "[1,2,3]"),
                       ("id-b", "10", "[1,2,3]"), ("id-d", "not recorded", "not recorded")}
    short, full = by[("id-a", "1", "[1,2,3]")], by[("id-a", "10", "[1,2,3]")]
    assert full["Solved safely"] == 1.0 and full["Queries"] == 12
    assert short["Solved safely"] < 0.5 and short["Queries"] == 12
    for row in (short, full):
        assert row["Prompt"] == "zeroshot_base" and row["Labels"] == "all"
        assert row["Turn timeout s"] == "120.0" and row["NetArena"] not in ("", "not recorded")
        assert row["App params"].startswith("{") and "max_target" in row["App params"]
    shards = by[("id-b", "10", "[1,2,3]")]
    assert shards["Queries"] == 12 and shards["Solved safely"] == 1.0  # both shards, pooled
    assert by[("id-d", "not recorded", "not recorded")]["Queries"] == 12  # floats, no status
    assert [r["id"] for r in rows].index("id-a") < len(rows) - 1  # ranked by CI low
    assert rows[-1]["id"] == "id-a" and rows[-1]["Max turns"] == "1"
    assert "id-c" not in {r["id"] for r in rows}
    not_ranked = _rows(con, "runs-not-ranked")
    assert [(r["id"], r["Why"], r["Runs"]) for r in not_ranked] == [("id-c", "run failed", 1)]
    levels = _rows(con, "by-level")
    assert {(r["id"], r["Max turns"], r["Level"]) for r in levels} >= {
        ("id-a", "1", 3), ("id-a", "10", 3), ("id-d", "not recorded", 1)}
    labels = _rows(con, "by-label")
    assert {r["Label"] for r in labels} == {"small", "medium", "big", "huge"}


def test_no_file_name_decides_and_a_resubmission_cannot_cherry_pick(
        board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same files under other names rank the same; a query answered twice under one
    configuration counts once, solved only if every answer solved it."""
    renamed = tmp_path / "renamed" / "results"
    renamed.mkdir(parents=True)
    for i, path in enumerate(sorted((board / "results").iterdir(), reverse=True)):
        (renamed / f"{i:02d}.json").write_text(path.read_text())
    first = _rows(_preloaded(board, monkeypatch), "leaderboard")
    assert _rows(_preloaded(renamed.parent, monkeypatch), "leaderboard") == first
    # id-b resubmits shard 0 with every answer turned wrong: those 6 queries now fail.
    shard = json.loads((renamed / next(
        p.name for p in renamed.iterdir() if "id-b" in p.read_text()
        and json.loads(p.read_text())["results"][0]["config"]["plan"]["shard_index"] == 0
    )).read_text())
    for record in shard["results"]:
        if record["kind"] == "query":
            record["correct"] = False
    (renamed / "99.json").write_text(json.dumps(shard))
    row = next(r for r in _rows(_preloaded(renamed.parent, monkeypatch), "leaderboard")
               if r["id"] == "id-b")
    assert row["Queries"] == 12 and row["Solved safely"] == 0.5


def test_netarena_leaderboard_prints_the_table(board: Path) -> None:
    from typer.testing import CliRunner

    from netarena.common.cli.root import cli

    result = CliRunner().invoke(cli, ["leaderboard", str(board)], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    for text in ("leaderboard:", "by-level:", "by-label:", "runs-not-ranked:", "id-a", "id-b",
                 "Max turns", "run failed"):
        assert text in result.output, text
    tables, problem = run_queries(board / "results", ["leaderboard"])
    assert problem is None and len(tables[0].rows) == 4


def test_a_file_the_apps_preload_cannot_read_is_named_and_still_shown(
        board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """malt's old ``Label`` next to ``label``: DuckDB's own preload refuses the folder
    (keys that differ only in case); netarena leaderboard says so, names the file, and
    still shows every run from the records as JSON."""
    folder = _with_old_label_file(board, tmp_path)
    monkeypatch.chdir(folder.parent)
    with pytest.raises(duckdb.Error, match="Duplicate name"):
        duckdb.connect().execute(PRELOAD.format(glob="results/*.json"))
    tables, problem = run_queries(folder)
    assert problem is not None and "d-old.json" in problem and "Label" in problem
    rows = {(r[0], r[9]): r for r in tables[0].rows}
    assert rows[("id-d", "not recorded")][8] == 12
    labels = {r[1] for r in tables[2].rows if r[0] == "id-d"}
    assert labels == {"small"}


def test_normalised_old_label_file_loads_in_the_apps_own_preload(
        board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both files present (old ``Label``, new ``label``): after ``--normalise`` the app's
    own preload loads the folder, every run ranks as before, and the new files (already in
    NetArena's spelling) are untouched."""
    folder = _with_old_label_file(board, tmp_path)
    old = json.loads((folder / "d-old.json").read_text())
    old["results"][0]["LABEL"] = "a third spelling"
    (folder / "d-old.json").write_text(json.dumps(old))
    before = {p.name: p.read_text() for p in folder.iterdir()}
    monkeypatch.chdir(folder.parent)
    with pytest.raises(duckdb.Error, match="Duplicate name"):
        duckdb.connect().execute(PRELOAD.format(glob="results/*.json"))

    assert normalise_keys(folder, write=False) == {
        folder / "d-old.json": ["LABEL -> label", "Label -> label"]}
    assert {p.name: p.read_text() for p in folder.iterdir()} == before  # a dry run
    changed = normalise_keys(folder.parent)
    assert list(changed) == [folder / "d-old.json"]
    for name, text in before.items():
        if name != "d-old.json":
            assert (folder / name).read_text() == text
    fixed = json.loads((folder / "d-old.json").read_text())
    assert fixed["results"][0]["label"] == "small"
    assert fixed["results"][0]["legacy_LABEL"] == "a third spelling"
    assert [r.get("label") for r in fixed["results"]] == [r.get("Label") for r in old["results"]]
    assert normalise_keys(folder) == {}  # idempotent

    con = _preloaded(folder.parent, monkeypatch)  # the app's own preload, both files there
    rows = _rows(con, "leaderboard")
    assert {r["id"] for r in rows} == {"id-a", "id-b", "id-d"}
    assert next(r for r in rows if r["id"] == "id-d")["Queries"] == 12
    assert {r["Label"] for r in _rows(con, "by-label") if r["id"] == "id-d"} == {"small"}
    tables, problem = run_queries(folder)
    assert problem is None


def test_results_records_have_no_keys_differing_only_in_case(board: Path) -> None:
    for path in (board / "results").iterdir():
        for record in json.loads(path.read_text())["results"]:
            keys = [k.lower() for k in record]
            assert len(keys) == len(set(keys)), (path.name, sorted(record))


def test_query_record_renames_details_that_differ_only_in_case() -> None:
    from netarena.common.core.types import QueryResult, query_record

    result = QueryResult(query_id="q", app="malt", level=1, label="add", agent="a",
                         correct=True, safe=True, latency_s=1.0, agent_latency_s=0.5, turns=1,
                         details={"Label": "capacity planning, level-1, add", "Error": "x"})
    record = query_record(result)
    assert record["label"] == "add" and record["details_Label"].startswith("capacity")
    assert "Label" not in record and "Error" not in record and record["details_Error"] == "x"


def _with_old_label_file(board: Path, tmp_path: Path) -> Path:
    """A copy of the board's results where d-old.json spells malt's ``label`` as ``Label``."""
    folder = tmp_path / "mixed" / "results"
    folder.mkdir(parents=True)
    for path in (board / "results").iterdir():
        (folder / path.name).write_text(path.read_text())
    old = json.loads((folder / "d-old.json").read_text())
    for record in old["results"]:
        if record.get("kind") == "query":
            record["Label"] = record.pop("label")
    (folder / "d-old.json").write_text(json.dumps(old))
    return folder


def test_netarena_leaderboard_json_has_every_query_and_row(board: Path) -> None:
    from typer.testing import CliRunner

    from netarena.common.cli.root import cli

    result = CliRunner().invoke(cli, ["leaderboard", str(board), "--json"])
    assert result.exit_code == 0, result.output
    tables = {t["query"]: t for t in json.loads(result.stdout)}
    assert list(tables) == list(QUERIES)
    rows = tables["leaderboard"]["rows"]
    assert len(rows) == 4 and {row["id"] for row in rows} == {"id-a", "id-b", "id-d"}
    assert all("Max turns" in row for row in rows)


_HOSTILE_ROLES = ['toy_operator""', '"', "$[", "/x", "'; DROP TABLE results; --",
                  "toy_operator\"]'", "x" * 5000]


def test_a_hostile_role_cannot_break_the_board(
        board: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written before servers refused such roles (the role in every record and as a
    ``participants`` key): the app's own preload loads the folder, every other row is as
    before, the files are listed as not ranked, and ``netarena leaderboard`` warns."""
    from typer.testing import CliRunner

    from netarena.common.cli.root import cli

    expected = {name: _rows(_preloaded(board, monkeypatch), name)
                for name in ("leaderboard", "by-level", "by-label")}
    folder = tmp_path / "hostile" / "results"
    folder.mkdir(parents=True)
    for path in (board / "results").iterdir():
        (folder / path.name).write_text(path.read_text())
    records = json.loads((board / "results" / "a-20250101.json").read_text())["results"]
    for count in (1, len(_HOSTILE_ROLES)):  # the role alone, then all of them
        for i, role in enumerate(_HOSTILE_ROLES[:count]):
            (folder / f"evil{i}.json").write_text(json.dumps({
                "status": "completed", "participants": {"netarena_toy": "g", role: f"id-e{i}"},
                "results": [{**r, "participant_role": role} for r in records]}))
        con = _preloaded(folder.parent, monkeypatch)  # exactly the app's preload
        for name, rows in expected.items():
            assert _rows(con, name) == rows, name
        not_ranked = {r["id"]: r["Why"] for r in _rows(con, "runs-not-ranked")}
        assert {k for k, why in not_ranked.items() if "role is not a name" in why} == {
            f"id-e{i}" for i in range(count)}
        result = CliRunner().invoke(cli, ["leaderboard", str(folder.parent)],
                                    env={"COLUMNS": "250"})
        assert result.exit_code == 0 and "Traceback" not in result.output, result.output
        warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
        assert len(warnings) == count and all("role is not a name" in w for w in warnings)
        tables, problem = run_queries(folder, ["leaderboard"])
        assert problem is None and len(tables[0].rows) == len(expected["leaderboard"])
