"""Recorded LLM runs: every call is recorded; a replay with the server stopped gives the same
results, with usage and cost in the summary."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.agents import LiteLLMAgent, Observation
from netarena.common.core.app import load_app
from netarena.common.core.errors import AgentError, ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.replay import CALLS_FILE, LLMCall, Tape
from netarena.common.core.runner import RunConfig, Runner
from tests.helpers.fake_llm import fake_llm_server

MODEL = "openai/gpt-4o-mini"  # priced by LiteLLM's local cost map; served by the fake
TIMING = {"latency_s", "agent_latency_s"}


def _records(folder: Path) -> list[dict]:
    lines = (folder / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        for key in TIMING:
            r.pop(key)
        for key in ("eval_s", "sandbox_s", "code_s"):  # malt's own timings
            r["details"].pop(key, None)
    return sorted(records, key=lambda r: r["query_id"])


def _cli(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("app", ["k8s", "malt"])
def test_a_replay_with_the_server_stopped_gives_identical_results(
    app: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded, replayed = tmp_path / "recorded", tmp_path / "replayed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake-key-never-recorded")
    with fake_llm_server(load_app(app).reference_agent()) as (api_base, fake):
        monkeypatch.setenv("OPENAI_API_BASE", api_base)
        first = _cli("run", app, "--agent", f"litellm:{MODEL}", "-n", "8", "--seed", "21",
                     "--out", str(recorded), "--concurrency", "3")
    served = fake.requests
    calls = (recorded / CALLS_FILE).read_text()
    assert len(calls.splitlines()) == served > 0
    assert "sk-fake-key-never-recorded" not in calls
    outcomes = {(r["correct"], r["error"] is not None) for r in _records(recorded)}
    assert len(outcomes) >= 2, "the fake should mix solved, failed and errored queries"

    second = _cli("run", app, "--replay", str(recorded), "--out", str(replayed))
    assert fake.requests == served  # nothing reached a model
    assert _records(replayed) == _records(recorded)
    # k8s output carries wall-clock creation timestamps, so later prompts differ in text
    # (counted as drift) while the recorded decisions, and so the results, are the same.
    assert second["replay"]["from"] == str(recorded)
    assert second["replay"]["drift"] == 0 if app == "malt" else second["replay"]["drift"] >= 0
    for key in ("correctness", "safety", "by_level", "by_label", "usage", "errors"):
        if key in ("by_level", "by_label"):
            assert {k: v["correctness"] for k, v in second[key].items()} == {
                k: v["correctness"] for k, v in first[key].items()}
        else:
            assert second[key] == first[key]
    usage = first["usage"]
    assert usage["llm_calls"] == served and usage["prompt_tokens"] > 0 and usage["cost_usd"] > 0
    report = CliRunner().invoke(cli, ["report", str(recorded), "--out", str(tmp_path / "r")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "r" / "summary.txt").read_text()
    assert "-- LLM usage --" in text and f"{usage['cost_usd']:.6f}" in text
    assert f"{usage['cost_usd']:.6f}" in (tmp_path / "r" / "index.html").read_text()


def test_the_python_api_records_through_api_base_and_replays(tmp_path: Path) -> None:
    app = load_app("malt")
    queries = plan_queries(app, QueryPlan(num_queries=6, seed=4))
    with fake_llm_server(app.reference_agent()) as (api_base, _):
        agent = LiteLLMAgent(MODEL, api_base=api_base, api_key="sk-test")
        agent.tape = Tape(sink=tmp_path / CALLS_FILE)
        first = asyncio.run(Runner(app, agent, RunConfig(concurrency=3)).run(queries))
    replayer = LiteLLMAgent(MODEL, api_base=api_base, api_key="sk-test")
    replayer.tape = Tape.from_file(tmp_path)
    second = asyncio.run(Runner(app, replayer, RunConfig(concurrency=2)).run(queries))
    strip = lambda rs: [  # noqa: E731
        {**r.model_dump(exclude=TIMING), "details": {k: v for k, v in r.details.items()
                                                      if not k.endswith("_s")}} for r in rs]
    assert strip(second) == strip(first)
    assert any(r.details.get("llm_calls") for r in first)


async def test_replay_reports_misses_drift_and_recorded_failures(tmp_path: Path) -> None:
    tape = Tape(sink=tmp_path / CALLS_FILE)
    request = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "api_key": "k"}
    crashed = {"choices": [{"message": {"content": "from a run that crashed"}}]}
    tape.record("q1", "q1-old", 0, request, response=crashed)  # an episode lost to a crash
    tape.episode_usage("q1")
    tape.record("q1", "q1-new", 0, {**request, "extra_headers": {"Authorization": "Bearer s"}},
                response={"choices": [{"message": {"content": "hello"}}],
                          "usage": {"prompt_tokens": 3}}, cost_usd=0.5)
    tape.record("q1", "q1-new", 1, request, error="litellm:x: BadRequestError: refused")
    assert tape.episode_usage("q1") == {"llm_calls": 2, "llm_prompt_tokens": 3,
                                        "llm_completion_tokens": 0, "llm_cost_usd": 0.5}
    recorded = (tmp_path / CALLS_FILE).read_text()
    assert '"k"' not in recorded and "Bearer" not in recorded  # no secret is ever written
    with (tmp_path / CALLS_FILE).open("a") as f:
        f.write('{"query_id": "q1", "se')  # a torn last line from a crash
    replay = Tape.from_file(tmp_path)  # replays the last episode of q1 only
    assert replay.replay("q1", request).reply() == "hello"
    with pytest.raises(AgentError, match="refused"):
        replay.replay("q1", {**request, "messages": []}).reply()
    assert replay.drift == 1
    with pytest.raises(AgentError, match="no further LLM call for q1"):
        replay.replay("q1", request)

    agent = LiteLLMAgent(MODEL)
    agent.tape = Tape(recording=[])
    with pytest.raises(AgentError, match="no further LLM call"):
        await agent.act(Observation("task", "ctx", 0, "q9"))
    with pytest.raises(ConfigError, match="no LLM recording"):
        Tape.from_file(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / CALLS_FILE).write_text("not json\n{}\n")
    with pytest.raises(ConfigError, match="not a recorded call"):
        Tape.from_file(tmp_path / "bad")
    assert isinstance(LLMCall.model_validate_json(
        (tmp_path / CALLS_FILE).read_text().splitlines()[0]), LLMCall)


def test_replay_refuses_a_folder_without_a_run_and_another_app(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "malt", "--replay", str(tmp_path)])
    assert result.exit_code == 2 and "run.json" in " ".join(result.output.split())
    ran = CliRunner().invoke(cli, ["run", "malt", "-n", "1", "--seed", "1", "--out", str(tmp_path)])
    assert ran.exit_code == 0, ran.output
    other = CliRunner().invoke(cli, ["run", "k8s", "--replay", str(tmp_path)])
    assert other.exit_code == 2 and "is a malt run" in " ".join(other.output.split())
    same = CliRunner().invoke(cli, ["run", "malt", "--replay", str(tmp_path),
                                    "--out", str(tmp_path)])
    assert same.exit_code == 2 and "must differ" in " ".join(same.output.split())
