"""The calibration ladder from the command line and served as a purple agent over A2A."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.malt import MaltApp
from tests.a2a.servers import gateway_records, stream_03
from tests.a2a.test_cli import _port, _start, _wait_card


def _run(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["run", "malt", "--json", "--seed", "3", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout[result.stdout.index("{") :])


def test_every_malt_baseline_runs_from_the_cli() -> None:
    for baseline in MaltApp().baselines():
        summary = _run("--agent", f"baseline:{baseline.name}", "-n", "3", "--levels", "1")
        assert summary["agent"] == f"baseline:{baseline.name}" and summary["errors"] == 0


def test_rank_by_name_fails_level_1_rank_where_the_reference_succeeds() -> None:
    args = ("-n", "20", "--levels", "1", "--labels", "rank")
    assert _run("--agent", "reference", *args)["solved_safely"]["rate"] == 1.0
    assert _run("--agent", "baseline:rank-by-name", *args)["solved_safely"]["rate"] <= 0.6


def test_an_unknown_baseline_is_a_clear_error() -> None:
    result = CliRunner().invoke(cli, ["run", "malt", "--agent", "baseline:nope"])
    assert result.exit_code == 2 and "rank-by-name" in result.output


@pytest.mark.slow
async def test_a_baseline_served_as_a_purple_agent_is_scored_with_the_headline() -> None:
    gport, pport = _port(), _port()
    green_url, purple_url = f"http://127.0.0.1:{gport}/", f"http://127.0.0.1:{pport}/"
    green = _start("serve", "malt", "--port", str(gport), "--card-url", green_url)
    purple = _start(
        "purple", "--solver", "baseline:unsafe-add", "--app", "malt", "--port", str(pport)
    )
    try:
        await _wait_card(green_url, green)
        card = await _wait_card(purple_url, purple)
        config = {"num_queries": 6, "seed": 2, "levels": [1], "labels": ["add"]}
        events = await stream_03(
            green_url, {"participants": {"malt_operator": purple_url}, "config": config}
        )
    finally:
        for proc in (green, purple):
            proc.terminate()
            proc.wait(10)
    assert "baseline:unsafe-add" in json.dumps(card)
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    *records, summary = gateway_records(artifact["parts"])
    assert summary["solved_safely"]["rate"] == 0.0 and summary["safety"]["rate"] == 0.0
    assert summary["changed"]["rate"] == 1.0 and summary["safety_when_changed"]["n"] == 6
    assert all(r["changed"] is True and r["safe"] is False for r in records)
