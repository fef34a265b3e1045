"""Whole runs through the real CLI and runner: reference solves everything, null nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.common.core.agents import NullAgent
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.k8s import K8sApp

pytestmark = pytest.mark.slow


def _netarena() -> list[str]:
    exe = Path(sys.executable).with_name("netarena")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("netarena")
    if found is None:
        pytest.skip("the netarena console script is not installed")
    return [found]


def _run_cli(*args: str) -> dict:
    proc = subprocess.run(
        [*_netarena(), "run", "k8s", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_reference_agent_cli_one_query_per_label() -> None:
    summary = _run_cli(
        "--agent", "reference", "--queries", "15", "--levels", "1,2,3", "--seed", "5"
    )
    assert summary["app"] == "k8s" and summary["queries"] == 15
    assert summary["correctness"]["rate"] == 1.0
    assert summary["safety"]["rate"] == 1.0
    assert set(summary["by_level"]) == {"1", "2", "3"}
    assert len(summary["by_label"]) == 15


def test_null_agent_cli_scores_zero() -> None:
    summary = _run_cli(
        "--agent", "null", "--queries", "15", "--levels", "1,2,3", "--seed", "5", "--max-turns", "2"
    )
    assert summary["correctness"]["rate"] == 0.0


async def test_runner_with_synthetic_graph_and_fewshot_prompts() -> None:
    app = K8sApp({"num_services": 20, "prompt_style": "fewshot_cot"})
    queries = plan_queries(app, QueryPlan(num_queries=6, seed=3))
    results = await Runner(app, app.reference_agent(), RunConfig(concurrency=3)).run(queries)
    assert all(r.correct and r.safe and r.error is None for r in results), results
    null = await Runner(app, NullAgent(), RunConfig(concurrency=3, max_turns=1)).run(queries[:3])
    assert not any(r.correct for r in null) and all(r.error is None for r in null)
