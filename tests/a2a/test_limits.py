"""A green server on the open internet: every limit an unauthenticated requester meets."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from netarena.a2a_llm import purple_app
from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.outbound import OutboundPolicy
from netarena.common.serving.remote import RemoteAgent
from netarena.common.serving.server import GreenOptions, green_app
from tests.a2a.servers import (
    gateway_records,
    http_response,
    message_result,
    raw_server,
    serving,
    stream_03,
)
from tests.a2a.slow import SlowToyAgent
from tests.helpers.toy import ToyApp

ROOT = Path(__file__).resolve().parents[2]
PURPLE = "http://127.0.0.1:9/"


def _final(events: list[dict]) -> tuple[str, str]:
    status = events[-1]["status"]
    return status["state"], status["message"]["parts"][0]["text"]


@pytest.mark.serial
async def test_oversized_topology_is_refused_in_under_a_second() -> None:
    from netarena.malt import MaltApp
    from netarena.route import RouteApp

    huge = {"superblocks": 64, "aggs_per_superblock": 64, "spineblocks": 64,
            "switches_per_stage": 64, "ports_per_switch": 256, "sandbox_workers": 32}
    route = {"num_subnets": 12, "hosts_per_subnet": 2}  # within the app's own limits
    for app_cls, config in ((MaltApp, huge), (RouteApp, route)):
        async with serving(lambda url, a=app_cls: green_app(a, url)) as green:
            started = time.perf_counter()
            events = await stream_03(green, {"participants": {"a": PURPLE}, "config": config})
            took = time.perf_counter() - started
        state, text = _final(events)
        assert state == "rejected" and took < 1.0, (took, text)
        assert "over this server's limits" in text
        assert ("superblocks=64 (limit 8)" in text) if app_cls is MaltApp else (
            "num_subnets=12 (limit 8)" in text)


@pytest.mark.serial
@pytest.mark.parametrize(("config", "problem"), [
    ({"num_queries": 100_000}, "100000 queries in this shard (limit 1000)"),
    ({"num_queries": 50_000, "num_shards": 20, "shard_index": 3},
     "50000 planned queries over all shards (limit 20000)"),
    ({"concurrency": 64}, "concurrency 64 (limit 8)"),
    ({"max_turns": 200}, "max_turns 200 (limit 50)"),
    ({"turn_timeout_s": 7200}, "turn_timeout_s: Input should be less than or equal to 3600"),
    ({"turn_timeout_s": float("inf")}, "turn_timeout_s: Input should be a finite number"),
    ({"turn_timeout_s": 3000}, "turn_timeout_s 3000 (limit 600)"),
])
async def test_work_and_time_are_capped(config: dict, problem: str) -> None:
    async with serving(lambda url: green_app(ToyApp, url)) as green:
        started = time.perf_counter()
        events = await stream_03(green, {"participants": {"a": PURPLE}, "config": config})
    state, text = _final(events)
    assert state == "rejected" and problem in text, text
    assert time.perf_counter() - started < 1.0


async def test_authenticated_requesters_get_the_trusted_limits() -> None:
    token = "s3cret"
    request = {"participants": {"a": PURPLE}, "config": {"concurrency": 16, "num_queries": 2}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": "m1",
        "parts": [{"kind": "text", "text": json.dumps(request)}]}}}
    async with serving(lambda url: green_app(ToyApp, url, token=token)) as green:
        async with httpx.AsyncClient(timeout=30) as http:
            assert (await http.get(green + ".well-known/agent-card.json")).status_code == 200
            assert (await http.get(green + "healthz")).status_code == 200
            denied = await http.post(green, json=body)
            assert denied.status_code == 401 and "bearer token" in denied.text
            assert (await http.get(green)).status_code == 401
            wrong = await http.post(green, json=body, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401
            ok = await http.post(green, json=body, headers={"Authorization": f"Bearer {token}"})
    task = ok.json()["result"]
    # concurrency 16 is over the unauthenticated cap (8) but allowed with the token; the
    # task then fails only because nothing listens at the purple URL.
    text = task["status"]["message"]["parts"][0]["text"]
    assert "limit" not in text and task["artifacts"]


@pytest.mark.parametrize("url", [
    "http://169.254.169.254/latest/meta-data/", "http://169.254.1.1:9019/",
    "http://[fe80::1]:9019/", "http://[::ffff:169.254.169.254]/", "http://0.0.0.0:9019/",
])
async def test_link_local_and_metadata_purple_urls_are_refused(url: str) -> None:
    async with serving(lambda u: green_app(ToyApp, u)) as green:
        events = await stream_03(green, {"participants": {"malt_operator": url},
                                         "config": {"num_queries": 1}})
    state, text = _final(events)
    assert state == "rejected" and "refused" in text and "outbound policy" in text, text


@pytest.mark.serial
async def test_allowlist_is_enforced_at_connect_time_without_retries() -> None:
    async with serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple:
        agent = RemoteAgent(purple, timeout_s=5, policy=OutboundPolicy.parse("10.0.0.0/8"),
                            backoff_s=5)
        started = time.perf_counter()
        with pytest.raises(AgentError, match="not in this server's purple allowlist"):
            await agent.act(Observation("reach 3 value=0", "c", 0))
        assert time.perf_counter() - started < 2  # refused, not retried with backoff
        await agent.aclose()
        allowed = RemoteAgent(purple, timeout_s=5, policy=OutboundPolicy.parse("127.0.0.0/8"))
        assert await allowed.act(Observation("reach 3 value=0", "c", 0)) == "add 3"
        await allowed.aclose()


async def test_a_card_cannot_move_the_conversation_to_another_host() -> None:
    seen: list[str] = []

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        seen.append(rpc["method"])
        writer.write(http_response(200, message_result(rpc["id"], "ok")))

    # The card claims the agent lives elsewhere (a closed loopback port stands in for any
    # other host): the conversation stays at the participant URL.
    async with raw_server(on_post, card_url="http://127.0.0.2:1/") as url:
        agent = RemoteAgent(url, timeout_s=5, retries=0)
        assert await agent.act(Observation("hi", "c", 0)) == "ok"
        await agent.aclose()
    assert seen == ["message/send"]


async def test_disconnect_cancels_the_evaluation() -> None:
    slow = SlowToyAgent(0.2)
    apps: list = []

    def build(url: str):
        apps.append(green_app(ToyApp, url))
        return apps[-1]

    async with serving(build) as green, serving(lambda url: purple_app(slow, url)) as purple:
        request = {"participants": {"a": purple}, "config": {"num_queries": 40, "seed": 1,
                                                              "concurrency": 1}}
        body = {"jsonrpc": "2.0", "id": "x", "method": "message/stream", "params": {"message": {
            "kind": "message", "role": "user", "messageId": "m",
            "parts": [{"kind": "text", "text": json.dumps(request)}]}}}
        async with httpx.AsyncClient(timeout=30) as http:
            async with http.stream("POST", green, json=body) as resp:
                async for line in resp.aiter_lines():
                    if "query 1/" in line:
                        break  # leave while the evaluation is running
        board = apps[0].state.board
        for _ in range(50):
            (entry,) = board.entries.values()
            if entry.ended is not None:
                break
            await asyncio.sleep(0.1)
        calls = slow.calls
        await asyncio.sleep(1.0)
    assert entry.state == "canceled" and "requester disconnected" in entry.reason
    assert entry.done < 40 and slow.calls <= calls + 1  # no more work after the cancel


async def test_task_store_stays_bounded_after_1000_junk_requests() -> None:
    limits = ServerLimits(max_tasks=64)
    app = green_app(ToyApp, "http://green/", GreenOptions(limits=limits))
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://green") as http:
        ids = []
        for i in range(1000):
            body = {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {"message": {
                "kind": "message", "role": "user", "messageId": f"m{i}",
                "parts": [{"kind": "text", "text": "junk " * 50}]}}}
            reply = (await http.post("/", json=body)).json()["result"]
            assert reply["status"]["state"] == "rejected"
            ids.append(reply["id"])
        store = app.state.task_store
        assert len(store) == 64
        newest = await http.post("/", json={"jsonrpc": "2.0", "id": "g", "method": "tasks/get",
                                            "params": {"id": ids[-1]}})
        oldest = await http.post("/", json={"jsonrpc": "2.0", "id": "g", "method": "tasks/get",
                                            "params": {"id": ids[0]}})
        too_big = await http.post("/", content=b"{" + b" " * (2 << 20) + b"}",
                                  headers={"content-type": "application/json"})
    assert newest.json()["result"]["id"] == ids[-1]
    assert "error" in oldest.json()  # evicted: "task not found"
    assert too_big.status_code == 413


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start_green(port: int, limits: dict | None = None,
                 *flags: str) -> subprocess.Popen[str]:
    env = {**os.environ, "NETARENA_LIMITS": json.dumps(limits or {})}
    return subprocess.Popen([sys.executable, "-m", "tests.a2a.slow", "--port", str(port),
                             *flags], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)


async def _wait_up(url: str) -> None:
    async with httpx.AsyncClient(timeout=2) as http:
        for _ in range(150):
            try:
                if (await http.get(url + "healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                await asyncio.sleep(0.1)
    pytest.fail("green server did not start")


@pytest.mark.serial
@pytest.mark.parametrize("flags", [(), ("--slow-close",)], ids=["toy", "slow-close"])
async def test_sigterm_ends_running_evaluations_and_exits_cleanly(flags: tuple) -> None:
    """Clients get their final state even when episodes take a while to close (route's
    namespaces): the server drains before it stops streaming."""
    port = _port()
    green_url = f"http://127.0.0.1:{port}/"
    proc = _start_green(port, None, *flags)
    try:
        await _wait_up(green_url)
        async with serving(lambda url: purple_app(SlowToyAgent(0.2), url)) as purple:
            request = {"participants": {"a": purple},
                       "config": {"num_queries": 40, "seed": 2, "concurrency": 1}}
            events: list[dict] = []

            async def client() -> None:
                events.extend(await stream_03(green_url, request, timeout_s=60))

            running = asyncio.create_task(client())
            async with httpx.AsyncClient(timeout=5) as http:
                for _ in range(100):
                    board = (await http.get(green_url + "evaluations")).json()
                    if board and board[0]["done"] >= 1:
                        break
                    await asyncio.sleep(0.1)
            started = time.perf_counter()
            proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(running, 15)
            code = await asyncio.to_thread(proc.wait, 15)
            took = time.perf_counter() - started
    finally:
        if proc.poll() is None:
            proc.kill()
    state, text = _final(events)
    assert state == "failed" and "server stopping after" in text and "resume" in text
    assert code == 0 and took < 10, (code, took)
    # Checkpoint: the queries finished before the signal come back as a partial Result.
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    records = gateway_records(artifact["parts"])
    assert records[-1]["kind"] == "summary" and 1 <= records[-1]["queries"] < 40
    assert len(records) == records[-1]["queries"] + 1
    assert "SIGTERM: stopping; 1 running evaluation(s) cancelled" in proc.stderr.read()


@pytest.mark.serial
async def test_slow_headers_and_bodies_are_cut_off() -> None:
    port = _port()
    proc = _start_green(port, {"header_timeout_s": 1, "body_timeout_s": 1})
    try:
        await _wait_up(f"http://127.0.0.1:{port}/")
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        await writer.drain()
        started = time.perf_counter()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        assert 0.5 < time.perf_counter() - started < 8  # 1 s deadline; slack for a loaded machine
        writer.close()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"a\"")
        await writer.drain()
        reply = await asyncio.wait_for(reader.read(), 5)
        assert reply.startswith(b"HTTP/1.1 408") and b"not received within 1s" in reply
        writer.close()
    finally:
        proc.terminate()
        proc.wait(10)


async def test_metrics_and_health() -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        await stream_03(green, {"participants": {"a": purple},
                                "config": {"num_queries": 3, "seed": 4}})
        async with httpx.AsyncClient(timeout=10) as http:
            metrics = (await http.get(green + "metrics")).text
            ready = (await http.get(green + "readyz")).json()
            listing = (await http.get(green + "evaluations")).json()
            report = (await http.get(green + f"evaluations/{listing[0]['id']}/report")).text
    assert 'netarena_queries_total{app="toy",outcome="correct"} 3.0' in metrics
    assert "netarena_evaluations_running 0.0" in metrics
    assert 'netarena_episode_latency_seconds_count{app="toy"} 3.0' in metrics
    assert ready == {"ready": True, "running": 0}
    assert listing[0]["state"] == "completed" and listing[0]["done"] == 3
    assert "correctness" in report and "Effective config" in report


class SlowPlanningApp(ToyApp):
    name = "slowplan"
    generated = 0

    def generate(self, seed: int, level: int, label: str | None = None):
        type(self).generated += 1
        time.sleep(0.02)
        return super().generate(seed, level, label)


@pytest.mark.serial
async def test_planning_work_is_bounded_in_time_and_stops() -> None:
    options = GreenOptions(limits=ServerLimits(planning_timeout_s=0.5, max_running=1))
    async with serving(lambda url: green_app(SlowPlanningApp, url, options)) as green:
        started = time.perf_counter()
        events = await stream_03(green, {"participants": {"a": PURPLE},
                                         "config": {"num_queries": 900}})
        took = time.perf_counter() - started
        generated = SlowPlanningApp.generated
        await asyncio.sleep(0.5)
        async with httpx.AsyncClient(timeout=5) as http:
            ready = (await http.get(green + "readyz")).json()
            (entry,) = (await http.get(green + "evaluations")).json()
    state, text = _final(events)
    assert state == "rejected" and "planning the queries took over 0.5s" in text
    assert ready == {"ready": True, "running": 0}  # the refused evaluation holds no slot
    assert entry["state"] == "rejected" and "planning" in entry["reason"]
    assert took < 2.0
    assert SlowPlanningApp.generated <= generated + 1  # the planning thread stopped
    assert generated < 900
