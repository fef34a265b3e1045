"""Results a leaderboard can trust: types on the wire, provenance, tooling keys, failures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.types import TaskState
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.routing import Mount

from netarena.a2a_llm import purple_app
from netarena.common.core.environment import environment
from netarena.common.serving.a2a import data_part
from netarena.common.serving.server import UNSCORED_FAIL_FRACTION, green_app, netarena_version
from tests.a2a.conftest import evaluate
from tests.a2a.servers import gateway_records, serving, stream_03
from tests.helpers.toy import ToyApp

FIXTURES = Path(__file__).parent / "fixtures"
INT_FIELDS = ("level", "turns", "format", "seed")


def _assert_integers(records: list[dict[str, Any]]) -> None:
    *queries, summary = records
    assert summary["kind"] == "summary" and queries
    for q in queries:
        for key in INT_FIELDS:
            assert type(q[key]) is int, (key, q[key])
        assert type(q["config"]["plan"]["num_queries"]) is int
    for key in ("queries", "errors", "unscored", "seed"):
        assert type(summary[key]) is int, (key, summary[key])
    assert type(summary["correctness"]["n"]) is int
    assert type(summary["by_level"]["1"]["queries"]) is int


async def test_integers_stay_integers_for_protobuf_and_json_clients() -> None:
    request = {"participants": {"toy_operator": "PURPLE"},
               "config": {"num_queries": 4, "seed": 12, "levels": [1, 2]}}
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        request["participants"]["toy_operator"] = purple
        protobuf = await evaluate(green, request)  # the a2a-sdk 1.3 client (protobuf types)
        events = await stream_03(green, request)  # plain JSON over 0.3, as the gateway reads
    _assert_integers(protobuf.records)
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    _assert_integers(gateway_records(artifact["parts"]))
    # Why records are JSON text parts: a DataPart is a protobuf Struct, every number a double.
    assert MessageToDict(data_part({"level": 1}).data) == {"level": 1.0}


async def test_each_record_carries_participant_config_version_and_seed() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"toy_operator": purple},
                                     "config": {"num_queries": 3, "seed": 5, "max_turns": 7,
                                                "max_target": 5}})
    assert out.state == TaskState.TASK_STATE_COMPLETED
    for record in out.records:
        assert record["participant_role"] == "toy_operator"
        assert record["participant_id"] == purple
        assert record["netarena_version"] == netarena_version() != "unknown"
        assert record["seed"] == 5
        config = record["config"]
        assert config["plan"]["num_queries"] == 3 and config["plan"]["seed"] == 5
        assert config["run"]["max_turns"] == 7 and config["run"]["concurrency"] == 4
        assert config["run"]["episode_timeout_s"] == 3600  # bounded even when not asked
        assert config["app"]["max_target"] == 5  # the app's full config, defaults included
        assert config["app"]["prompt_style"] == "zeroshot_base"


async def test_num_instances_is_accepted_with_a_note() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"toy_operator": purple}, "config": {
            "num_queries": 10, "num_instances": 4, "num_shards": 2, "shard_index": 1,
            "seed": 3}})
    assert out.state == TaskState.TASK_STATE_COMPLETED, out.statuses
    assert len(out.queries) == 2  # plan limited to 4 queries, then every second one
    assert "num_instances 4" in out.statuses[0]
    assert out.summary["config"]["plan"]["limit"] == 4


async def test_an_assessment_with_mostly_unscored_queries_fails_with_the_reason() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"toy_operator": purple},
                                     "config": {"num_queries": 4, "fail_open": True}})
    assert out.state == TaskState.TASK_STATE_FAILED
    reason = out.statuses[-1]
    assert reason.startswith("failed: 4 of 4 queries unscored (the emulator failed, not the agent)")
    assert "toy emulator refused to start" in reason
    assert out.summary["unscored"] == 4  # the records are still attached for diagnosis
    assert UNSCORED_FAIL_FRACTION == 0.5


def _fixture(name: str, purple: str) -> dict[str, Any]:
    message = json.loads((FIXTURES / name).read_text())["message"]
    message["parts"][0]["text"] = message["parts"][0]["text"].replace("PURPLE", purple)
    return message


async def _send_as_gateway(green: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": "gw", "method": "message/stream",
            "params": {"message": message}}
    events: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=60) as http:
        async with http.stream("POST", green, json=body) as resp:
            assert resp.status_code == 200
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    events.append(json.loads(line[5:])["result"])
    return events


@pytest.mark.parametrize(("fixture", "queries", "path"), [
    ("gateway_v1_compose.json", 2, ""),
    ("gateway_v2_shard.json", 6, "malt_operator"),
])
async def test_agentbeats_request_shapes(fixture: str, queries: int, path: str) -> None:
    """The exact requests AgentBeats' v1 client and v2 gateway send (see the fixtures)."""

    def build(url: str) -> Starlette:  # the v2 gateway serves each participant under /<role>
        inner = purple_app(ToyApp().reference_agent(), url + path + "/" if path else url)
        return Starlette(routes=[Mount(f"/{path}" if path else "", app=inner)])

    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(build) as purple,
    ):
        purple_url = f"{purple}{path}" if path else purple
        events = await _send_as_gateway(green, _fixture(fixture, purple_url))
    assert events[-1]["status"]["state"] == "completed", events[-1]
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    records = gateway_records(artifact["parts"])
    assert len(records) == queries + 1
    assert {r["participant_role"] for r in records} == {"malt_operator"}
    assert records[-1]["correctness"]["rate"] == 1.0
    if path:
        plan = records[-1]["config"]["plan"]
        assert (plan["shard_index"], plan["num_shards"], plan["limit"]) == (3, 5, 30)


async def test_duckdb_reads_levels_counts_and_seeds_as_integers(tmp_path: Path) -> None:
    """A results file stored from the wire (as the gateway stores it) types integers as such."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in the dev extra")
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        events = await stream_03(green, {"participants": {"malt_operator": purple},
                                         "config": {"num_queries": 3, "seed": 8}})
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"status": "completed", "participants": {"malt_operator": "x"},
                                "results": gateway_records(artifact["parts"])}))
    con = duckdb.connect()
    types = con.execute(
        "SELECT DISTINCT typeof(r.level), typeof(r.turns), typeof(r.seed) "
        f"FROM read_json_auto('{path}') AS t, UNNEST(t.results) AS u(r) WHERE r.kind = 'query'"
    ).fetchall()
    assert types == [("BIGINT", "BIGINT", "BIGINT")]
    summary = con.execute(
        "SELECT typeof(r.queries), typeof(r.seed), typeof(r.correctness.n) "
        f"FROM read_json_auto('{path}') AS t, UNNEST(t.results) AS u(r) WHERE r.kind = 'summary'"
    ).fetchall()
    assert summary == [("BIGINT", "BIGINT", "BIGINT")]


async def test_the_summary_names_the_software_it_was_scored_with() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        out = await evaluate(green, {"participants": {"toy_operator": purple},
                                     "config": {"num_queries": 2, "seed": 5}})
    assert out.state == TaskState.TASK_STATE_COMPLETED
    *queries, summary = out.records
    assert summary["environment"] == environment()
    assert all("environment" not in q for q in queries)  # once per run, not per record
