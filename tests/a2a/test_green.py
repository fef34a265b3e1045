"""End to end over real HTTP on loopback: green server ↔ purple server."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from a2a.types import TaskState

from netarena.a2a_llm import purple_app
from netarena.common.core.agents import NullAgent
from netarena.common.serving.server import GreenOptions, green_app
from tests.a2a.conftest import APPS, evaluate, reference_agent
from tests.a2a.servers import gateway_records, serving, stream_03
from tests.helpers.toy import ToyApp

DONE = TaskState.TASK_STATE_COMPLETED
REJECTED = TaskState.TASK_STATE_REJECTED


def failures(out) -> str:
    """The queries scored wrong, one JSON line each: a string, so pytest shows it whole."""
    return "\n".join(json.dumps({k: v for k, v in q.items() if k != "config"})
                     for q in out.queries if not q["correct"])


async def test_card_lists_1x_and_03_interfaces() -> None:
    async with serving(lambda url: green_app(ToyApp, url)) as url:
        async with httpx.AsyncClient(timeout=10) as http:
            card = (await http.get(url + ".well-known/agent-card.json")).json()
    versions = {i["protocolVersion"] for i in card["supportedInterfaces"]}
    assert versions == {"1.0", "0.3"}
    assert all(i["url"] == url and i["protocolBinding"] == "JSONRPC"
               for i in card["supportedInterfaces"])
    assert card["url"] == url and card["protocolVersion"] == "0.3"  # what 0.3 clients read
    assert card["capabilities"]["streaming"] is True


@pytest.mark.parametrize("app_cls", APPS)
async def test_reference_purple_scores_one(app_cls) -> None:
    async with (
        serving(lambda url: green_app(app_cls, url)) as green,
        serving(lambda url: purple_app(reference_agent(app_cls), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"agent": purple},
                                     "config": {"num_queries": 6, "seed": 7, "concurrency": 3}})
    assert out.state == DONE, out.statuses
    assert out.first_event == "task"
    assert out.artifact_names == ["Result"]
    assert len(out.queries) == 6
    assert out.summary["correctness"]["rate"] == 1.0, failures(out)
    assert out.summary["queries"] == 6 and out.summary["seed"] == 7
    assert all(q["correct"] is True and q["error"] is None for q in out.queries)
    assert any(s.startswith("query 6/6 · correctness 1.00") for s in out.statuses)
    assert out.statuses[-1].startswith("done: 6 queries")


@pytest.mark.parametrize("app_cls", APPS)
async def test_null_purple_scores_zero(app_cls) -> None:
    async with (
        serving(lambda url: green_app(app_cls, url)) as green,
        serving(lambda url: purple_app(NullAgent(), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"agent": purple},
                                     "config": {"num_queries": 4, "max_turns": 2}})
    assert out.state == DONE
    assert out.summary["correctness"]["rate"] == 0.0
    assert isinstance(out.summary["seed"], int | float)  # fresh seed reported back
    assert any("fresh" in s for s in out.statuses)


async def test_raw_03_gateway_client_gets_full_result_set() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        events = await stream_03(green, {"participants": {"agent": purple},
                                         "config": {"num_queries": 5, "seed": 3}})
    assert events[0]["kind"] == "task"
    kinds = [e["kind"] for e in events]
    assert kinds[-1] == "status-update" and events[-1]["status"]["state"] == "completed"
    assert events[-1]["final"] is True
    assert "artifact-update" in kinds
    assert kinds.index("artifact-update") < len(kinds) - 1  # artifact before completion
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    assert artifact["name"] == "Result"
    parts = artifact["parts"]
    assert all(p["kind"] == "text" for p in parts)  # JSON text: integers stay integers
    records = gateway_records(parts)
    queries = [r for r in records if r["kind"] == "query"]
    assert len(queries) == 5 and records[-1]["kind"] == "summary"
    assert {"query_id", "app", "level", "label", "correct", "safe", "latency_s", "turns",
            "error"} <= set(queries[0])
    assert isinstance(queries[0]["correct"], bool)
    assert records[-1]["correctness"]["rate"] == 1.0
    working = [e["status"]["message"]["parts"][0]["text"] for e in events
               if e["kind"] == "status-update" and e["status"]["state"] == "working"]
    assert any(w.startswith("query 5/5") for w in working)


@pytest.mark.parametrize("app_cls", APPS)
async def test_leaderboard_malt_config_runs_per_label(app_cls) -> None:
    """The public leaderboard's malt request, verbatim, with role malt_operator."""
    config = {"prompt_type": "zeroshot_base", "complexity_level": ["level1", "level2"],
              "num_queries": 1, "output_dir": "/tmp/out", "output_file": "r.json",
              "benchmark_path": "/data/bench", "regenerate_query": True}
    async with (
        serving(lambda url: green_app(app_cls, url)) as green,
        serving(lambda url: purple_app(reference_agent(app_cls), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"malt_operator": purple}, "config": config})
    assert out.state == DONE, out.statuses
    original = set(app_cls.label_sets.get("original", ()))  # the dialect runs the original's
    want = {(lv, lb): 1 for lv, lbs in app_cls.labels.items() if lv in (1, 2) for lb in lbs
            if not original or lb in original}
    got: dict = {}
    for q in out.queries:
        got[(q["level"], q["label"])] = got.get((q["level"], q["label"]), 0) + 1
    assert got == want
    assert "ignored file-path keys: benchmark_path, output_dir, output_file, regenerate_query" \
        in out.statuses[0]
    assert "malt_operator" in out.statuses[0]
    assert out.summary["correctness"]["rate"] == 1.0, failures(out)


async def test_gateway_message_send_then_tasks_get() -> None:
    """Non-streaming 0.3 ``message/send`` blocks until done; ``tasks/get`` returns artifacts."""
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        request = {"participants": {"agent": purple}, "config": {"num_queries": 3, "seed": 9}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m1",
            "parts": [{"kind": "text", "text": json.dumps(request)}]}}}
        async with httpx.AsyncClient(timeout=60) as http:
            task = (await http.post(green, json=body)).json()["result"]
            again = (await http.post(green, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                                  "params": {"id": task["id"]}})).json()["result"]
    for t in (task, again):
        assert t["kind"] == "task" and t["status"]["state"] == "completed"
        (artifact,) = t["artifacts"]
        kinds = [r["kind"] for r in gateway_records(artifact["parts"])]
        assert kinds == ["query"] * 3 + ["summary"]


async def test_concurrent_requests_are_isolated() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        big, small, bad = await asyncio.gather(
            evaluate(green, {"participants": {"a": purple},
                             "config": {"num_queries": 6, "seed": 1, "biggest": 30,
                                        "max_turns": 40}}),
            evaluate(green, {"participants": {"a": purple},
                             "config": {"num_queries": 3, "seed": 1, "levels": [1]}}),
            evaluate(green, {"participants": {"a": purple}, "config": {"nope": 1}}),
        )
    assert (big.state, small.state, bad.state) == (DONE, DONE, REJECTED)
    assert len(big.queries) == 6 and len(small.queries) == 3
    assert {q["level"] for q in small.queries} == {1}
    assert all(q["query_id"].endswith(tuple("0123456789abcdef")) for q in big.queries)
    assert not {q["query_id"] for q in big.queries} & {q["query_id"] for q in small.queries}
    assert big.summary["correctness"]["rate"] == small.summary["correctness"]["rate"] == 1.0


async def test_results_dir_lets_a_restarted_server_resume(tmp_path) -> None:
    """The same request in the same A2A context resumes (a client chooses its context id;
    the interrupted task's own is the natural choice)."""
    request = {"participants": {"a": "PURPLE"}, "config": {"num_queries": 4, "seed": 21}}
    options = GreenOptions(results_dir=tmp_path)
    async with serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple:
        request["participants"]["a"] = purple
        async with serving(lambda url: green_app(ToyApp, url, options)) as green:
            first = await evaluate(green, request, context_id="run-7f3e")
        (results,) = tmp_path.glob("toy-*.jsonl")
        lines = results.read_text().splitlines()
        async with serving(lambda url: green_app(ToyApp, url, options)) as green:  # "restart"
            second = await evaluate(green, request, context_id="run-7f3e")
    assert len(lines) == 4 and results.read_text().splitlines() == lines  # nothing replayed
    assert [q["query_id"] for q in first.queries] == [q["query_id"] for q in second.queries]
    assert second.summary["correctness"]["rate"] == 1.0


class Swappable:
    """One purple URL, different agents over time: what the AgentBeats gateway's proxy
    (``http://127.0.0.1:8080/<role>``, the same for every submission) looks like."""

    name = "swappable"

    def __init__(self, inner) -> None:
        self.inner = inner

    async def act(self, observation):
        return await self.inner.act(observation)


async def test_another_agent_behind_the_same_url_never_inherits_results(tmp_path) -> None:
    request = {"participants": {"a": "PURPLE"}, "config": {"num_queries": 4, "seed": 21}}
    options = GreenOptions(results_dir=tmp_path)
    agent = Swappable(ToyApp().reference_agent())
    async with serving(lambda url: purple_app(agent, url)) as purple, \
            serving(lambda url: green_app(ToyApp, url, options)) as green:
        request["participants"]["a"] = purple
        first = await evaluate(green, request)
        agent.inner = NullAgent()  # the next submission
        second = await evaluate(green, request)
    assert first.summary["correctness"]["rate"] == 1.0
    assert second.summary["correctness"]["rate"] == 0.0  # played, not replayed
