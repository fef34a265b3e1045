"""``netarena assess`` against a live green agent on loopback, as the AgentBeats gateway."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.a2a_llm import purple_app
from netarena.common.cli.root import cli
from netarena.common.reporting.results import load_results
from netarena.common.serving.assess import assess, write_assessment
from netarena.common.serving.server import green_app
from tests.a2a.servers import serving
from tests.helpers.toy import ToyApp


@pytest.mark.parametrize("protocol", ["0.3", "1.0"])
async def test_assess_follows_an_evaluation_and_keeps_its_records(
        protocol: str, tmp_path: Path) -> None:
    progress: list[tuple[str, str]] = []
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        run = await assess(green, {"toy_operator": purple}, {"num_queries": 12, "seed": 3},
                           protocol=protocol,
                           on_status=lambda state, text: progress.append((state, text)))
    assert run.state == "completed", run.messages
    assert len(run.queries) == 12 and all(r["correct"] for r in run.queries)
    assert all(isinstance(r["level"], int) for r in run.queries)  # ints, either protocol
    assert run.summary is not None and run.summary.correctness.rate == 1.0
    assert progress[0][0] == "working" and "12 queries for toy_operator" in progress[0][1]
    assert any("query 12/12" in text for _, text in progress)
    assert progress[-1][0] == "completed" and "done: 12 queries" in progress[-1][1]
    written = write_assessment(run, tmp_path)
    assert [p.name for p in written] == ["results.jsonl", "summary.json", "agentbeats.json"]
    records = load_results([tmp_path])  # what netarena report reads
    assert len(records) == 12 and {r.query_id for r in records} == {
        r["query_id"] for r in run.queries}
    doc = json.loads((tmp_path / "agentbeats.json").read_text())
    assert doc["status"] == "completed" and doc["participants"] == {"toy_operator": purple}
    (received,) = [r for r in run.records if isinstance(r, dict) and r.get("kind") == "summary"]
    assert json.loads((tmp_path / "summary.json").read_text()) == received  # as sent


async def test_assess_cli_streams_progress_writes_files_and_fails_on_rejection(
        tmp_path: Path) -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        runner = CliRunner()
        ok = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", f"toy_operator={purple}",
            "--config", '{"num_queries": 6, "seed": 5, "max_turns": 10}',
            "--out", str(tmp_path / "run")])
        rejected = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", f"toy_operator={purple}",
            "--config", '{"num_queris": 6}'])
        malformed = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", "toy_operator"])
    assert ok.exit_code == 0, ok.output
    assert "working: query 6/6" in ok.output and "correctness" in ok.output
    assert (tmp_path / "run" / "results.jsonl").read_text().count("\n") == 6
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["run"]["max_turns"] == 10 and summary["queries"] == 6
    assert rejected.exit_code == 1 and "rejected" in rejected.output
    assert "num_queris" in rejected.output
    assert malformed.exit_code == 2 and "ROLE=URL" in malformed.output


async def test_assess_reports_an_unreachable_green_agent() -> None:
    from netarena.common.core.errors import AgentError

    async with serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple:
        dead = purple.rsplit(":", 1)[0] + ":9/"  # discard port on loopback: refused
        with pytest.raises(AgentError, match="green agent at"):
            await assess(dead, {"toy_operator": purple}, {})
