"""``netarena run --verify`` checks the run's own plan with the reference first (ABC T.8).

Before: solvability was verified on sampled plans only (the conformance suite, calibration
runs); nothing checked the queries a given run was about to score.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.agents import NullAgent
from netarena.malt import MaltApp

ARGS = ["run", "malt", "-n", "3", "--seed", "5", "--verify", "--json"]


def test_a_plan_the_reference_solves_is_scored(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, [*ARGS, "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "the reference solver solves all 3 queries" in " ".join(result.output.split())
    assert json.loads((tmp_path / "summary.json").read_text())["queries"] == 3


def test_an_unsolved_plan_is_refused_before_the_agent_plays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(MaltApp, "reference_agent", lambda self: NullAgent())
    result = CliRunner().invoke(cli, [*ARGS, "--out", str(tmp_path)])
    assert result.exit_code == 3, result.output
    assert "does not solve 3 of the run's 3 queries" in " ".join(result.output.split())
    assert not (tmp_path / "results.jsonl").exists()
