"""End to end through the real CLI and runner, plus the fine-tuning export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.malt import MaltApp, extract_code

RUN = ["run", "malt", "--queries", "60", "--levels", "1,2,3", "--seed", "7", "--json"]


def _run(agent: str) -> dict:
    result = CliRunner().invoke(cli, [*RUN, "--agent", agent])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def _verdicts(summary: dict) -> dict:
    return {
        label: (m["queries"], m["correctness"], m["safety"], m["errors"])
        for label, m in summary["by_label"].items()
    }


@pytest.mark.slow
def test_reference_scores_one_on_every_level_and_is_repeatable() -> None:
    first = _run("reference")
    assert first["queries"] == 60
    assert first["correctness"]["rate"] == 1.0 and first["safety"]["rate"] == 1.0
    assert sorted(first["by_level"]) == ["1", "2", "3"]
    assert len(first["by_label"]) == 21
    assert _verdicts(_run("reference")) == _verdicts(first)


def test_null_agent_scores_about_zero() -> None:
    summary = _run("null")
    assert summary["correctness"]["rate"] <= 0.1


def test_export_sft_writes_chat_records(tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    args = [
        "malt",
        "export-sft",
        "--n",
        "12",
        "--levels",
        "1,2,3",
        "--seed",
        "3",
        "--out",
        str(out),
    ]
    main = "from netarena.common.cli.root import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", main, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "wrote 12 records" in done.stdout
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 12 and {r["metadata"]["level"] for r in records} == {1, 2, 3}
    app = MaltApp()
    for record in records[:4]:
        user, assistant = record["messages"]
        assert user["role"] == "user" and assistant["role"] == "assistant"
        query = app.generate(
            record["metadata"]["seed"], record["metadata"]["level"], record["metadata"]["label"]
        )
        assert user["content"] == query.prompt
        with app.open(query) as episode:
            episode.step(assistant["content"])
            assert episode.score().correct
        assert extract_code(assistant["content"])


def test_audit_prints_the_metamorphic_table_as_json_and_passes() -> None:
    """``netarena audit malt``: no object kinds (nothing is injected), one check per
    qualifier and per bound misreading, every one caught, exit 0."""
    result = CliRunner().invoke(cli, ["audit", "malt", "--queries", "60", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["passed"] and report["kinds"] == [] and report["failed_checks"] == []
    names = {c["name"] for c in report["checks"]}
    assert {"qualifier:depth", "bound:exactly->at least", "bound:ties->reversed"} <= names
    assert report["queries"] == 60
