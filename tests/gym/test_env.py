"""The Gymnasium environments: Gymnasium's own checker, registration, and the same scores
through ``gymnasium`` as through ``netarena run``."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import gymnasium
import pytest
from gymnasium.utils.env_checker import check_env
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.app import app_names, load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.training.gym import NetArenaEnv, OutcomeReward, env_id, play, register_envs
from tests.helpers.agents import RandomTextAgent
from tests.helpers.toy import ToyApp, ToyEpisode

# Small route networks keep the route cases quick; they need root (network namespaces).
PARAMS = {"malt": {}, "k8s": {}, "route": {"num_subnets": 2, "hosts_per_subnet": 2}}


def _apps() -> list[pytest.param]:
    return [
        pytest.param(name, marks=[pytest.mark.root, pytest.mark.slow] if name == "route" else [])
        for name in ("malt", "k8s", "route")
    ]


def test_every_installed_app_is_registered_with_its_turn_budget() -> None:
    assert register_envs() == [env_id(name) for name in app_names()]
    for name in app_names():
        spec = gymnasium.spec(env_id(name))
        assert spec.entry_point == "netarena.common.training.gym:NetArenaEnv"
        assert spec.max_episode_steps == load_app(name).default_max_turns


@pytest.mark.parametrize("name", _apps())
def test_gymnasium_env_checker_passes(name: str) -> None:
    env = gymnasium.make(env_id(name), seed=3, params=PARAMS[name])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker reports most findings as warnings
        check_env(env.unwrapped)
    env.close()


def _cli_results(name: str, agent: str, n: int, seed: int, out: Path) -> list[dict]:
    args = ["run", name, "--agent", agent, "-n", str(n), "--seed", str(seed), "--out", str(out),
            "--json", "--concurrency", "2"]
    for key, value in PARAMS[name].items():
        args += ["--param", f"{key}={value}"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _same(gym_outcome: tuple[list[float], dict], record: dict, path: bool = True) -> None:
    """Same scores; with ``path``, also the same number of turns and the same rewards."""
    rewards, info = gym_outcome
    assert info["query_id"] == record["query_id"]
    assert (info["correct"], info["safe"]) == (record["correct"], record["safe"])
    if path:
        assert info["turns"] == record["turns"]
        assert sum(rewards) == pytest.approx(record["details"]["reward"])


@pytest.mark.parametrize("name", _apps())
def test_reference_solver_scores_the_same_through_gymnasium_and_netarena_run(
    name: str, tmp_path: Path
) -> None:
    seed, n = 11, 4
    records = _cli_results(name, "reference", n, seed, tmp_path)
    env = gymnasium.make(env_id(name), params=PARAMS[name])
    app = env.unwrapped.app
    by_id = {r["query_id"]: r for r in records}
    for query in plan_queries(app, QueryPlan(num_queries=n, seed=seed)):
        outcome = play(env, app.reference_agent(), options={"query": query})
        # route's pingmesh can see a late echo as lost on a loaded machine, and the solver then
        # spends a turn re-checking: the scores match, the number of turns may not.
        _same(outcome, by_id[query.id], path=name != "route")
        assert outcome[1]["correct"] and outcome[1]["safe"]
    env.close()


@pytest.mark.parametrize("name", _apps())
def test_random_text_scores_the_same_through_gymnasium_and_the_runner(name: str) -> None:
    env = gymnasium.make(env_id(name), params=PARAMS[name])
    app = env.unwrapped.app
    queries = plan_queries(app, QueryPlan(num_queries=3, seed=5))
    config = RunConfig(concurrency=3, max_turns=env.spec.max_episode_steps)
    records = asyncio.run(Runner(app, RandomTextAgent(), config).run(queries))
    for query, record in zip(queries, records, strict=True):
        outcome = play(env, RandomTextAgent(), options={"query": query})
        _same(outcome, record.model_dump())
        assert not outcome[1]["correct"]
    env.close()


def test_reset_is_seeded_and_can_name_the_query() -> None:
    env = gymnasium.make(env_id("malt"), level=2, seed=9)
    first, info = env.reset()
    assert info["level"] == 2
    again, info_again = env.reset(seed=9)
    assert (first, info) == (again, info_again)
    query = load_app("malt").generate(77, 3, None)
    observation, info = env.reset(options={"query": query})
    assert info["query_id"] == query.id and observation == query.prompt
    _, info = env.reset(options={"query_seed": 77, "level": 3})
    assert info["query_id"] == query.id
    with pytest.raises(ValueError, match="unknown reset options"):
        env.reset(options={"levle": 1})
    with pytest.raises(ValueError, match="not for this environment"):
        env.reset(options={"query": load_app("k8s").generate(1, 1)})
    with pytest.raises(ValueError, match="no label"):
        gymnasium.make(env_id("malt"), label="no-such-label")
    env.close()


def test_rewards_come_from_the_configurable_reactive_table() -> None:
    table = {"reward_invalid": -3.0, "reward_valid": 0.5, "reward_fix": 7.0}
    env = gymnasium.make(env_id("k8s"), seed=1, level=1, params=table)
    env.reset()
    _, reward, terminated, truncated, info = env.step("this is not a command")
    assert (reward, terminated, truncated, info["valid"]) == (-3.0, False, False, False)
    _, reward, *_ = env.step("```\nkubectl get networkpolicy\n```")
    assert reward == 0.5
    env.close()


def test_the_turn_budget_truncates_and_the_outcome_wrapper_pays_once() -> None:
    env = OutcomeReward(gymnasium.make(env_id("k8s"), seed=2, max_episode_steps=2), unsafe=-5)
    env.reset()
    _, r1, term, trunc, _ = env.step("nonsense")
    assert (r1, term, trunc) == (0.0, False, False)
    _, r2, term, trunc, info = env.step("nonsense")
    assert (term, trunc) == (False, True) and r2 == 0.0 and not info["correct"] and info["safe"]
    env.close()


class _Broken(ToyEpisode):
    def _execute(self, command):
        raise RuntimeError("emulator crashed")


class _BrokenApp(ToyApp):
    def open(self, query):
        self.episode = _Broken(query, self.config)
        return self.episode


def test_the_episode_is_closed_on_termination_on_errors_on_reset_and_on_close() -> None:
    app = _BrokenApp()
    env = NetArenaEnv(app, seed=1)
    env.reset()
    first = app.episode
    env.reset()
    assert first.closes == 1  # a reset closes the previous episode
    with pytest.raises(RuntimeError, match="emulator crashed"):
        env.step("add 1")
    assert app.episode.closes == 1  # closed after the error
    with pytest.raises(gymnasium.error.ResetNeeded):
        env.step("add 1")
    env.reset()
    with pytest.raises(TypeError, match="actions are text"):
        env.step(3)
    env.close()
    env.close()
    assert app.episode.closes == 1

    solved = NetArenaEnv(ToyApp(), seed=1)
    obs, _ = solved.reset()
    target = int(obs.split("reach ")[1].split()[0])
    *_, terminated, _, info = solved.step(f"add {target}")
    assert terminated and info["correct"] and info["safe"]
    with pytest.raises(gymnasium.error.ResetNeeded):
        solved.step("add 1")


@pytest.mark.root
@pytest.mark.slow
def test_route_namespaces_are_freed_on_close_and_after_errors() -> None:
    from netarena.route.linux.namespaces import list_prefixes

    env = gymnasium.make(env_id("route"), seed=4, params=PARAMS["route"])
    env.reset()
    prefix = env.unwrapped._held[0].prefix
    assert prefix in list_prefixes()
    env.close()
    assert prefix not in list_prefixes()

    env.reset()
    episode = env.unwrapped._held[0]
    episode._execute = lambda command: (_ for _ in ()).throw(RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        env.step('{"machine": "r0", "command": "ip route"}')
    assert episode.prefix not in list_prefixes()
    env.close()
