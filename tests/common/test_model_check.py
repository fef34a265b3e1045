"""Fail fast, resume right: a model that cannot be used stops a run before its first query,
and infrastructure failures mid-run are unscored and played again on resume.

Every model is a fake OpenAI-compatible server on loopback (``tests/helpers/fake_llm.py``)
or LiteLLM's ``mock_response``: no test reaches the internet.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.agents import LiteLLMAgent, Observation
from netarena.common.core.app import load_app
from netarena.common.core.errors import AgentError, AgentUnavailable
from netarena.common.core.model_errors import infrastructure_failure
from netarena.common.core.runner import Runner, read_results
from netarena.common.core.types import Query
from tests.helpers.fake_llm import fake_llm_server
from tests.helpers.toy import ToyApp

MODEL = "openai/fake-model"
KEYS = ("OPENAI_API_KEY", "OPENAI_API_BASE", "MODEL_API_BASE", "MODEL_NAME")


@pytest.fixture(autouse=True)
def _no_provider_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


def _run(*args: str) -> tuple[int, str, float]:
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["run", *args])
    return result.exit_code, result.output, time.perf_counter() - started


@pytest.mark.slow  # importing LiteLLM and loading malt: ~9 s
def test_a_missing_key_exits_2_before_any_query(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_llm_server(ToyApp().reference_agent()) as (api_base, fake):
        monkeypatch.setenv("MODEL_API_BASE", api_base)  # even a call that went out stays here
        code, output, took = _run("malt", "--agent", f"litellm:{MODEL}", "-n", "20",
                                  "--out", str(tmp_path))
    print(f"missing key: exit {code} after {took:.1f}s (20 queries planned)")
    assert code == 2, output
    assert "no credentials" in output and "OPENAI_API_KEY" in output
    assert fake.requests == 0 and not (tmp_path / "results.jsonl").exists()


def test_a_refused_key_or_unknown_model_exits_2(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong")
    with fake_llm_server(ToyApp().reference_agent()) as (api_base, fake):
        monkeypatch.setenv("MODEL_API_BASE", api_base)
        fake.refuse_checks = 401
        code, output, _ = _run("malt", "--agent", f"litellm:{MODEL}", "-n", "5",
                               "--out", str(tmp_path))
        assert code == 2 and "refused the credentials" in output, output
        fake.refuse_checks = 404
        code, output, _ = _run("malt", "--agent", f"litellm:{MODEL}", "-n", "5")
        assert code == 2 and "does not know this model" in output, output
    assert fake.requests == 0 and fake.checks == 2
    assert not (tmp_path / "results.jsonl").exists()


@pytest.mark.slow
def test_a_resumed_run_replays_unscored_infrastructure_errors(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
    args = ("malt", "--agent", f"litellm:{MODEL}", "-n", "6", "--seed", "5", "--out",
            str(tmp_path), "--json")
    with fake_llm_server(load_app("malt").reference_agent()) as (api_base, fake):
        monkeypatch.setenv("MODEL_API_BASE", api_base)
        fake.refuse = 401  # the check passes, then the key is revoked
        code, output, _ = _run(*args)
        first = read_results(tmp_path / "results.jsonl")
        assert code == 1 and "unscored" in output, output
        assert len(first) == 6 and not any(r.scored for r in first)
        assert all(r.error and r.error.startswith("agent unavailable:") for r in first)
        fake.refuse = None  # the key works again: the same command plays all six again
        asked = fake.requests
        code, output, _ = _run(*args)
    assert code in (0, 1), output
    assert fake.requests - asked == 6
    second = read_results(tmp_path / "results.jsonl")
    assert len(second) == 6 and all(r.scored for r in second)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["unscored"] == 0 and summary["queries"] == 6


class _Outage:
    """A local agent whose model is down for the first ``down`` calls."""

    name = "outage"

    def __init__(self, down: int) -> None:
        self.down, self.calls = down, 0
        self.asked: set[str] = set()
        self.solver = ToyApp().reference_agent()

    async def act(self, observation: Observation) -> str:
        self.calls += 1
        self.asked.add(observation.query_id)
        if self.calls <= self.down:
            raise AgentUnavailable("rate limited by the provider, still after retries")
        return await self.solver.act(observation)


def test_runner_leaves_infrastructure_failures_unscored_and_resume_plays_them(
        tmp_path: Path) -> None:
    app = ToyApp()
    queries: list[Query] = [app.generate(seed, 1) for seed in range(4)]
    out = tmp_path / "results.jsonl"
    agent = _Outage(down=2)
    first = asyncio.run(Runner(app, agent).run(queries, out=out))
    unscored = {r.query_id for r in first if not r.scored}
    assert len(unscored) == 2 and all(r.correct for r in first if r.scored)
    assert all(r.error and "rate limited" in r.error for r in first if not r.scored)
    agent.asked.clear()
    second = asyncio.run(Runner(app, agent).run(queries, out=out))
    assert agent.asked == unscored  # only the unscored queries were played again
    assert all(r.scored and r.correct for r in second)


async def test_only_infrastructure_failures_are_unavailable() -> None:
    with fake_llm_server(ToyApp().reference_agent()) as (api_base, fake):
        agent = LiteLLMAgent(MODEL, api_base=api_base, api_key="sk-fake")
        observation = Observation("reach 3 from value=0", "c")
        for status, unavailable in ((401, True), (404, True), (400, False)):
            fake.refuse = status
            with pytest.raises(AgentError) as caught:
                await agent.act(observation)
            assert isinstance(caught.value, AgentUnavailable) is unavailable, status
        fake.refuse = 400  # a malformed request still proves credentials and model: passes
        await agent.check()
    mocked = LiteLLMAgent(MODEL, mock_response="add 3")
    await mocked.check()
    assert await mocked.act(observation) == "add 3"
    assert infrastructure_failure(TimeoutError("slow")) is None
