from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from netarena.common.core.agents import NullAgent, Observation
from netarena.common.core.errors import AgentError, ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner, read_results
from netarena.common.core.stats import summarize
from tests.helpers.toy import ToyApp, ToyEpisode


def run(app, agent, queries, **kw):
    out = kw.pop("out", None)
    return asyncio.run(Runner(app, agent, RunConfig(**kw)).run(queries, out=out))


def test_plan_is_deterministic_and_cycles_levels() -> None:
    app = ToyApp()
    a = plan_queries(app, QueryPlan(num_queries=9, seed=5))
    b = plan_queries(app, QueryPlan(num_queries=9, seed=5))
    assert a == b
    assert [q.level for q in a] == [1, 2, 3] * 3
    assert {q.label for q in a if q.level == 3} == {"big", "huge"}
    assert len({q.id for q in a}) == 9
    assert plan_queries(app, QueryPlan(num_queries=9, seed=6)) != a


def test_plan_is_identical_in_another_process() -> None:
    code = (
        "import json; from tests.helpers.toy import ToyApp; "
        "from netarena.common.core.plan import QueryPlan, plan_queries; "
        "plan = QueryPlan(num_queries=5, seed=11); "
        "print(json.dumps([q.model_dump() for q in plan_queries(ToyApp(), plan)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).parents[2],
        env={"PYTHONHASHSEED": "123"},
    )
    here = [q.model_dump() for q in plan_queries(ToyApp(), QueryPlan(num_queries=5, seed=11))]
    assert json.loads(out.stdout) == here


def test_per_label_plan_and_label_filter() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=2, levels=(1, 3), per_label=True, seed=1))
    assert sorted(q.label for q in qs) == ["big", "big", "huge", "huge", "small", "small"]
    qs = plan_queries(app, QueryPlan(num_queries=4, labels=("huge",), seed=1))
    assert {q.label for q in qs} == {"huge"}
    with pytest.raises(ConfigError, match="nope"):
        plan_queries(app, QueryPlan(num_queries=1, labels=("nope",)))


def test_shards_partition_the_plan() -> None:
    app = ToyApp()
    whole = {q.id for q in plan_queries(app, QueryPlan(num_queries=20, seed=2))}
    parts = [
        {
            q.id
            for q in plan_queries(
                app, QueryPlan(num_queries=20, seed=2, shard_index=i, num_shards=3)
            )
        }
        for i in range(3)
    ]
    assert set().union(*parts) == whole and sum(map(len, parts)) == 20


def test_reference_solves_and_null_fails() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=12, seed=3))
    ref = run(app, app.reference_agent(), qs)
    assert all(r.correct and r.safe and r.error is None for r in ref)
    null = run(app, NullAgent(), qs)
    assert not any(r.correct for r in null)
    assert all(r.turns == app.default_max_turns for r in null)


def test_turn_limit_is_enforced() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=3, levels=(3,), seed=4))
    res = run(app, app.reference_agent(), qs, max_turns=1)
    assert all(r.turns == 1 for r in res)


class _Scripted:
    """Replies from a script; raises or hangs on request."""

    def __init__(self, script: dict[int, object], name: str = "scripted") -> None:
        self.script, self.name, self.calls = script, name, 0

    async def act(self, observation: Observation) -> str:
        self.calls += 1
        step = self.script.get(observation.turn, "add 1")
        if step == "hang":
            await asyncio.sleep(60)
        if isinstance(step, Exception):
            raise step
        return str(step)


def test_agent_failures_cost_only_their_query() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=4, levels=(3,), seed=8))

    class Flaky:
        name = "flaky"

        async def act(self, observation: Observation) -> str:
            tag = observation.query_id
            if tag.startswith(qs[0].id):
                await asyncio.sleep(60)
            if tag.startswith(qs[1].id):
                raise AgentError("HTTP 500 from agent")
            return await app.reference_agent().act(observation)

    res = run(app, Flaky(), qs, turn_timeout_s=0.2)
    assert "no answer within" in res[0].error and not res[0].correct
    assert "HTTP 500" in res[1].error and not res[1].correct
    assert res[2].correct and res[3].correct and res[2].error is None


def test_invalid_actions_cost_turns_not_the_run() -> None:
    app = ToyApp()
    q = plan_queries(app, QueryPlan(num_queries=1, levels=(1,), seed=9))
    agent = _Scripted({0: "rm -rf /", 1: "x" * 1_000_000})
    (res,) = run(app, agent, q, max_turns=2)
    assert res.turns == 2 and res.error is None and not res.correct and res.details["reward"] == -2


def test_emulator_errors_are_recorded_and_left_unscored() -> None:
    app = ToyApp({"fail_open": True})
    qs = plan_queries(app, QueryPlan(num_queries=2, seed=1))
    res = run(app, app.reference_agent(), qs)
    assert all("refused to start" in r.error and not r.correct for r in res)
    assert not any(r.scored for r in res)  # the agent never acted: not its failure
    summary = summarize(res, app="toy", agent="ref", seed=1)
    assert summary.unscored == 2 and summary.errors == 2
    assert summary.correctness.n == 0 and summary.safety.n == 0


def test_unscored_results_are_retried_on_resume(tmp_path: Path) -> None:
    qs = plan_queries(ToyApp(), QueryPlan(num_queries=3, seed=5))
    out = tmp_path / "r.jsonl"
    broken = ToyApp({"fail_open": True})
    run(broken, broken.reference_agent(), qs, out=out)
    app = ToyApp()
    seen: list[tuple[str, int, int]] = []
    again = asyncio.run(
        Runner(app, app.reference_agent()).run(
            qs, out=out, on_result=lambda r, done, total: seen.append((r.query_id, done, total))
        )
    )
    assert all(r.scored and r.correct for r in again)
    records = read_results(out)  # the retried records replace the unscored ones
    assert sorted(r.query_id for r in records) == sorted(q.id for q in qs)
    assert all(r.scored for r in records)
    assert [d for _, d, _ in seen] == [1, 2, 3] and {t for _, _, t in seen} == {3}


def test_progress_counts_resumed_results_first(tmp_path: Path) -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=4, seed=6))
    out = tmp_path / "r.jsonl"
    run(app, app.reference_agent(), qs[:2], out=out)
    seen: list[int] = []
    asyncio.run(
        Runner(app, app.reference_agent()).run(
            qs, out=out, on_result=lambda r, done, total: seen.append(done)
        )
    )
    assert seen == [1, 2, 3, 4]


def test_a_failing_progress_callback_costs_nothing(tmp_path: Path) -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=6, seed=7))
    out = tmp_path / "r.jsonl"

    def flaky(result: object, done: int, total: int) -> None:
        if done % 2:
            raise RuntimeError("progress update failed")

    res = asyncio.run(
        Runner(app, app.reference_agent(), RunConfig(concurrency=4)).run(
            qs, out=out, on_result=flaky
        )
    )
    assert all(r.correct for r in res) and len(read_results(out)) == 6


def test_plans_are_bounded() -> None:
    with pytest.raises(ValueError):
        QueryPlan(num_queries=100_001)
    with pytest.raises(ConfigError, match="at most"):
        plan_queries(ToyApp(), QueryPlan(num_queries=40_000, per_label=True))


def test_unsafe_paths_are_flagged() -> None:
    app = ToyApp()
    q = plan_queries(app, QueryPlan(num_queries=1, levels=(1,), seed=9))
    target = q[0].truth["target"]
    (res,) = run(app, _Scripted({0: f"add {target + 1}", 1: "add -1"}), q)
    assert res.correct and not res.safe


def test_results_are_flushed_and_resumed(tmp_path: Path) -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=6, seed=12))
    out = tmp_path / "r.jsonl"
    first = run(app, app.reference_agent(), qs[:4], out=out)
    assert sorted(r.query_id for r in read_results(out)) == sorted(r.query_id for r in first)
    with out.open("a") as fh:  # a crash mid-write leaves a torn line
        fh.write('{"kind": "query", "query_id": "torn')
    agent = _Scripted({}, name="toy-reference")
    again = run(app, agent, qs, out=out)
    assert [r.query_id for r in again] == [q.id for q in qs]
    assert again[:4] == first  # not replayed
    assert agent.calls > 0 and len(read_results(out)) == 6


def test_results_are_json_typed(tmp_path: Path) -> None:
    app = ToyApp()
    out = tmp_path / "r.jsonl"
    run(app, app.reference_agent(), plan_queries(app, QueryPlan(num_queries=2, seed=1)), out=out)
    rec = json.loads(out.read_text().splitlines()[0])
    assert rec["kind"] == "query" and rec["correct"] is True and isinstance(rec["latency_s"], float)
    assert isinstance(rec["turns"], int) and rec["error"] is None


def test_concurrency_is_bounded() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=12, seed=3))
    live = peak = 0

    class Counting:
        name = "counting"

        async def act(self, observation: Observation) -> str:
            nonlocal live, peak
            live += 1
            peak = max(peak, live)
            await asyncio.sleep(0.01)
            live -= 1
            return await app.reference_agent().act(observation)

    run(app, Counting(), qs, concurrency=3)
    assert 1 < peak <= 3


def test_episode_timeout_ends_a_slow_episode() -> None:
    app = ToyApp()
    qs = plan_queries(app, QueryPlan(num_queries=1, levels=(3,), seed=4))

    class Slow:
        name = "slow"

        async def act(self, observation: Observation) -> str:
            await asyncio.sleep(0.05)
            return "add 1"

    (res,) = run(app, Slow(), qs, episode_timeout_s=0.12)
    assert "episode timeout" in res.error and res.scored and not res.correct
    assert 1 <= res.turns < app.default_max_turns


def test_the_conversation_id_tells_the_agent_nothing_about_the_query() -> None:
    """The query id names the label (the injected fault); the context id must not carry it."""
    seen: list[Observation] = []

    class Spy:
        name = "spy"

        async def act(self, observation: Observation) -> str:
            seen.append(observation)
            return "add 1"

    app = ToyApp()
    queries = plan_queries(app, QueryPlan(num_queries=4, seed=3))
    run(app, Spy(), queries)
    contexts = {o.context_id for o in seen}
    assert len(contexts) == len(queries)
    for context in contexts:
        assert all(q.id not in context and q.label not in context for q in queries), context


def test_a_close_waiting_for_a_thread_survives_the_runs_cancellation() -> None:
    """A query that ends while every runner thread is busy queues its episode's close; a
    cancellation arriving then (a requester leaving) must not withdraw it: that leaked the
    episode (for route, up to 73 network namespaces)."""
    app = ToyApp()
    (query,) = plan_queries(app, QueryPlan(num_queries=1, seed=3))
    episode = ToyEpisode(query)
    runner = Runner(app, NullAgent(), RunConfig(concurrency=1))
    gate = threading.Event()

    async def cancel_while_queued() -> None:
        for _ in range(8):  # more than the runner's threads: every one blocked, the rest queued
            runner._executor.submit(gate.wait)
        closing = asyncio.create_task(runner._close(episode))
        await asyncio.sleep(0.05)
        closing.cancel()
        with pytest.raises(asyncio.CancelledError):
            await closing
        assert episode.closes == 0  # still waiting for a thread
        gate.set()
        deadline = time.monotonic() + 5
        while episode.closes == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    asyncio.run(cancel_while_queued())
    assert episode.closes == 1
