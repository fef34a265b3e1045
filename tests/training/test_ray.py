"""``--executor ray``: a local Ray cluster plays the same episodes to the same results as the
built-in runner, for evaluations, rollouts and LLM recording and replay."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.agents import Agent, LiteLLMAgent
from netarena.common.core.app import App, load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.replay import CALLS_FILE, Tape
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.types import QueryResult
from netarena.common.training.executors import RayRunner, start_ray
from netarena.common.training.rollouts import collect, read_rollouts
from tests.helpers.agents import coinflip, crashes_on
from tests.helpers.fake_llm import fake_llm_server

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
TIMING = {"latency_s", "agent_latency_s"}
TURNS = {"malt": 1, "k8s": 3}
PARAMS = {"malt": {"timeout_s": 60.0}}
"""A generous limit on an agent program's run: results compared across runs must not depend
on the machine's load (MALT's default 5 s ran out in one run of a loaded CI machine)."""


@pytest.fixture(scope="module", autouse=True)
def ray_cluster():
    """One local loopback cluster for the module (Ray starts in seconds, not instantly)."""
    import ray

    started = start_ray(num_cpus=2, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    assert ray.nodes()[0]["NodeManagerAddress"] == "127.0.0.1"
    yield
    if started:
        ray.shutdown()


def _plain(results: list[QueryResult]) -> list[dict]:
    return sorted(({**r.model_dump(exclude=TIMING),
                    "details": {k: v for k, v in r.details.items() if not k.endswith("_s")}}
                   for r in results), key=lambda r: r["query_id"])


@pytest.mark.parametrize("app_name", ["malt"])
def test_a_ray_run_gives_the_same_results_as_the_builtin_runner(app_name: str) -> None:
    app = load_app(app_name, PARAMS.get(app_name))
    queries = plan_queries(app, QueryPlan(num_queries=10, seed=17))
    config = RunConfig(concurrency=4, max_turns=TURNS[app_name])  # short: some episodes fail
    local = asyncio.run(Runner(app, coinflip(app), config).run(queries))
    with RayRunner(app_name, PARAMS.get(app_name, {}), coinflip, config) as ray_runner:
        remote = asyncio.run(ray_runner.run(queries))
    assert _plain(remote) == _plain(local)
    assert {r.correct for r in local} == {True, False}  # a mixed run, not a trivial one


def test_the_cli_merges_ray_results_like_the_builtin_runner(tmp_path: Path) -> None:
    def run(executor: str) -> dict:
        out = tmp_path / executor
        # malt: the merge is the same for every app, and its episodes are cheap (k8s on
        # Ray is played by test_rollouts_on_ray_match_the_builtin_runner)
        args = ["run", "malt", "-n", "6", "--seed", "3", "--out", str(out), "--json",
                "--executor", executor, "-p", "timeout_s=60"]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    local, remote = run("local"), run("ray")
    lines = (tmp_path / "ray" / "results.jsonl").read_text().splitlines()
    # why a query failed, as a string (pytest shows a string message whole)
    why = "\n".join(json.dumps([r["query_id"], r.get("error"), r.get("reason")])
                    for r in map(json.loads, lines) if not r.get("correct"))
    for key in ("queries", "correctness", "safety", "by_label", "errors"):
        if key == "by_label":
            assert {k: v["correctness"] for k, v in remote[key].items()} == {
                k: v["correctness"] for k, v in local[key].items()}, why
        else:
            assert remote[key] == local[key], why
    assert len(lines) == 6


def test_rollouts_on_ray_match_the_builtin_runner(tmp_path: Path) -> None:
    app = load_app("k8s")
    queries = plan_queries(app, QueryPlan(num_queries=4, seed=9))
    asyncio.run(collect(Runner(app, coinflip(app)), queries, tmp_path / "local.jsonl"))
    with RayRunner("k8s", {}, coinflip, actors=1) as ray_runner:
        asyncio.run(collect(ray_runner, queries, tmp_path / "ray.jsonl"))

    def key(path: Path) -> list[tuple]:
        return sorted((r["query_id"], r["actions"], r["rewards"], r["correct"], r["safe"])
                      for r in read_rollouts(path))

    assert key(tmp_path / "ray.jsonl") == key(tmp_path / "local.jsonl")


def _llm(api_base: str, app: App) -> Agent:
    return LiteLLMAgent("openai/gpt-4o-mini", api_base=api_base, api_key="sk-test")


@pytest.mark.timeout(900)
def test_llm_calls_made_on_ray_are_recorded_and_replay_identically(tmp_path: Path) -> None:
    app = load_app("malt", PARAMS["malt"])
    queries = plan_queries(app, QueryPlan(num_queries=6, seed=12))
    # Both runs must answer every turn: on a loaded CI machine the recording's first call
    # outran the default 120 s turn limit and the tape held a timeout instead of a call.
    config = RunConfig(turn_timeout_s=600)
    with fake_llm_server(app.reference_agent()) as (api_base, fake):
        source = functools.partial(_llm, api_base)
        tape = Tape(sink=tmp_path / CALLS_FILE)
        with RayRunner("malt", PARAMS["malt"], source, config, actors=1, tape=tape) as ray_runner:
            recorded = asyncio.run(ray_runner.run(queries))
    assert len((tmp_path / CALLS_FILE).read_text().splitlines()) == fake.requests > 0
    replayer = _llm(api_base, app)
    replayer.tape = Tape.from_file(tmp_path)
    local = asyncio.run(Runner(app, replayer, config).run(queries))
    assert _plain(local) == _plain(recorded)
    replay = Tape.from_file(tmp_path)
    with RayRunner("malt", PARAMS["malt"], source, config, actors=1,
                   tape=replay) as ray_runner:
        remote = asyncio.run(ray_runner.run(queries))
    assert _plain(remote) == _plain(recorded)


def test_an_actor_that_dies_costs_its_episodes_only_and_a_resume_replays_them(
    tmp_path: Path,
) -> None:
    app = load_app("malt")
    queries = plan_queries(app, QueryPlan(num_queries=6, seed=5))
    out = tmp_path / "results.jsonl"
    crash = functools.partial(crashes_on, queries[2].id)
    with RayRunner("malt", {}, crash, RunConfig(concurrency=2), actors=1) as ray_runner:
        first = asyncio.run(ray_runner.run(queries, out=out))
    lost = [r for r in first if not r.scored]  # the episodes in flight on the dead actor
    assert queries[2].id in {r.query_id for r in lost} and len(lost) <= 2
    assert all(r.error.startswith("executor: ") for r in lost)
    assert all(r.correct for r in first if r.scored) and len(first) == 6  # a fresh actor went on
    with RayRunner("malt", {}, "reference", actors=1) as ray_runner:
        resumed = asyncio.run(ray_runner.run(queries, out=out))
    assert all(r.correct and r.scored for r in resumed)
