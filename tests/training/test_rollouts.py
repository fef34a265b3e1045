"""Rollout files load with ``datasets`` and carry what a GRPO trainer needs; the GRPO recipe's
dataset and environment reward work on real episodes (the trainer itself is not imported)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.training.rollouts import EnvReward, grpo_rows, read_rollouts

PARAMS = {"malt": [], "k8s": [], "route": ["--param", "num_subnets=2", "--param",
                                           "hosts_per_subnet=2"]}
GRPO_FIELDS = {"prompt", "messages", "actions", "rewards", "return", "correct", "safe", "turns",
               "query_id", "app", "seed", "level", "label", "params"}


@pytest.fixture(autouse=True)
def _offline_datasets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))


def _rollouts(app: str, n: int, out: Path, *extra: str) -> None:
    args = ["rollouts", app, "--agent", "reference", "--n", str(n), "--seed", "8",
            "--out", str(out), "--concurrency", "4", *PARAMS[app], *extra]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output


def _apps() -> list[pytest.param]:
    return [pytest.param(a, marks=[pytest.mark.root, pytest.mark.slow] if a == "route" else [])
            for a in ("malt", "k8s", "route")]


EPISODES = {"malt": 20, "k8s": 6, "route": 6}
"""Episodes a rollout file holds: 20 of malt (a fraction of a second each); k8s and route
episodes each start an API server or build a network (20 were 33 CPU s of the full run)."""


@pytest.mark.parametrize("app", _apps())
def test_a_rollout_file_loads_with_datasets(app: str, tmp_path: Path) -> None:
    import datasets

    out, n = tmp_path / f"{app}.jsonl", EPISODES[app]
    _rollouts(app, n, out)
    ds = datasets.load_dataset("json", data_files=str(out), split="train",
                               cache_dir=str(tmp_path / "cache"))
    assert len(ds) == n and GRPO_FIELDS <= set(ds.column_names)
    for row in ds:
        assert row["app"] == app and row["correct"] and row["safe"]
        assert row["prompt"] == row["messages"][:1] and row["prompt"][0]["role"] == "user"
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["user", "assistant"] * row["turns"]
        assert len(row["actions"]) == len(row["rewards"]) == row["turns"] >= 1
        assert row["return"] == pytest.approx(sum(row["rewards"]))
    _rollouts(app, n, out)  # re-running resumes: nothing is played twice
    assert len(read_rollouts(out)) == n


@pytest.mark.parametrize("app", ["k8s", "malt"])
def test_the_grpo_recipe_dataset_and_environment_reward(app: str, tmp_path: Path) -> None:
    import datasets

    out = tmp_path / "four.jsonl"
    _rollouts(app, 4, out, "--levels", "1,2")
    records = read_rollouts(out)
    ds = datasets.Dataset.from_list(list(grpo_rows(records)))
    assert len(ds) == sum(len(r["actions"]) for r in records)
    assert {"prompt", "prefix_actions", "app", "seed", "level", "label", "params"} <= set(
        ds.column_names)
    assert all(row["prompt"][-1]["role"] == "user" for row in ds)

    reward = EnvReward()
    batch = ds[:]  # the columns, as GRPOTrainer hands them to reward functions
    columns = {k: v for k, v in batch.items() if k != "prompt"}
    recorded = [r for rec in records for r in rec["rewards"]]
    replayed = reward(prompts=batch["prompt"],
                      completions=[[{"role": "assistant", "content": a}]
                                   for rec in records for a in rec["actions"]], **columns)
    assert replayed == recorded  # the environment gives the reference its recorded rewards
    garbage = reward(prompts=batch["prompt"], completions=["no idea"] * len(ds), **columns)
    assert set(garbage) == {-1.0 if app == "malt" else -10.0}
    assert "trl" not in sys.modules
    assert json.loads(records[0]["params"]) == {}


def test_a_planted_fifo_or_symlink_is_refused_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    result = CliRunner().invoke(cli, ["rollouts", "malt", "--n", "1", "--out", str(fifo)])
    assert result.exit_code == 2 and "FIFO" in result.output
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    result = CliRunner().invoke(cli, ["rollouts", "malt", "--n", "1", "--out", str(link)])
    assert result.exit_code == 2 and "symlink" in result.output
    assert not (tmp_path / "elsewhere.jsonl").exists()
