"""``--json`` on every command that prints a table, and reports that keep runs apart."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from tests.helpers.toy import ToyApp
from tests.report.conftest import HalfAgent, play


def _json(args: list[str], code: int = 0) -> Any:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


@pytest.mark.slow  # renders the report's plots
def test_report_json_is_every_run_summary(toy_results: list[Path], tmp_path: Path) -> None:
    doc = _json(["report", *map(str, toy_results), "--out", str(tmp_path), "--json"])
    runs = {run["agent"]: run for run in doc["runs"]}
    assert set(runs) == {"toy-reference", "toy-half", "null"}
    assert runs["toy-reference"]["solved_safely"]["n"] == 120
    assert doc == json.loads((tmp_path / "summary.json").read_text())


@pytest.mark.slow
def test_report_keeps_two_runs_of_one_agent_name_apart(tmp_path: Path) -> None:
    """Two runs named the same (other settings, another day) are two rows, not one pool."""
    app = ToyApp()
    first = play(app, app.reference_agent(), 12, tmp_path / "monday" / "results.jsonl")
    half = HalfAgent()
    half.name = app.reference_agent().name  # the same name, another agent
    second = play(app, half, 12, tmp_path / "tuesday" / "results.jsonl")
    doc = _json(["report", str(first.parent), str(second.parent), "--out",
                 str(tmp_path / "r"), "--json"])
    rates = {run["agent"]: run["solved_safely"]["rate"] for run in doc["runs"]}
    assert set(rates) == {"toy-reference (monday)", "toy-reference (tuesday)"}
    assert rates["toy-reference (monday)"] == 1.0 > rates["toy-reference (tuesday)"]
    # One run given twice, or a lone run, keeps its plain name.
    again = _json(["report", str(first.parent), str(first), "--out", str(tmp_path / "r2"),
                   "--json"])
    assert [run["agent"] for run in again["runs"]] == ["toy-reference"]
    assert again["runs"][0]["solved_safely"]["n"] == 12


def test_power_json_compares_neighbours(tmp_path: Path) -> None:
    doc = _json(["power", "--rates", "0.5,0.62,0.9", "--plot", str(tmp_path / "p.png"),
                 "--json"])
    assert doc["metric"] == "solved_safely" and len(doc["comparisons"]) == 2
    first = doc["comparisons"][0]
    assert (first["a"], first["b"]) == ("p=0.5", "p=0.62") and first["wilson_n"] > 100


def test_power_from_two_runs_of_one_name_compares_them(toy_results: list[Path],
                                                       tmp_path: Path) -> None:
    copy = tmp_path / "reference" / "results.jsonl"  # the same directory name, elsewhere
    copy.parent.mkdir()
    shutil.copy(toy_results[0], copy)
    doc = _json(["power", str(toy_results[0]), str(copy), "--plot", str(tmp_path / "p.png"),
                 "--json"])
    (pair,) = doc["comparisons"]
    assert {pair["a"], pair["b"]} == {f"toy-reference ({toy_results[0].parts[-3]}/reference)",
                                      f"toy-reference ({tmp_path.name}/reference)"}
    assert pair["wilson_n"] is None  # equal rates never separate


def test_calibrate_json(tmp_path: Path) -> None:
    doc = _json(["calibrate", "malt", "-n", "6", "--agents", "null", "--json"])
    assert doc["app"] == "malt" and doc["passed"] is True
    (null,) = doc["agents"]
    assert null["agent"] == "null" and null["ok"] and null["summary"]["solved_safely"]["k"] == 0
    assert null["expected"] == {"solved_safely": [0.0, 0.0]}


def test_ladder_json_lists_every_rung() -> None:
    rows = _json(["ladder", "malt", "--json"])
    agents = [row["agent"] for row in rows]
    assert agents[:2] == ["malt-reference", "null"] and "baseline:crash" in agents
    assert all(row["app"] == "malt" and row["description"] for row in rows)
