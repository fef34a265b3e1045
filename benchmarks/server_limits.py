"""Benchmark of the green server's limits: what refusing, planning and junk requests cost.

Figures behind the defaults of ``ServerLimits`` (docs/agentbeats.md, "Server limits"):
time to refuse an oversized topology; planning cost per query per app; resident memory of
a server after many junk requests (the task store is bounded) and after one 1 MiB request;
and legitimate requests during a slowloris attack of 300 reopening connections, against
``netarena serve`` and, for comparison, uvicorn with its own limit alone (the server before
connection fairness). Run from the repository root (it borrows the tests' slowloris client):
``python -m benchmarks.server_limits [--junk N]
[--attack-s S]``. Prints medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from netarena.common.core.app import load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.serving.server import green_app
from tests.helpers.slowloris import legitimate

ROOT = Path(__file__).resolve().parents[1]
_UVICORN_ALONE = """
import sys, uvicorn
from netarena.common.core.app import load_app
from netarena.common.serving.a2a import listen_socket
from netarena.common.serving.server import green_app
port = int(sys.argv[1])
app = green_app(type(load_app("malt")), f"http://127.0.0.1:{port}/")
config = uvicorn.Config(app, log_level="critical", lifespan="off", timeout_keep_alive=5,
                        limit_concurrency=256)
uvicorn.Server(config).run(sockets=[listen_socket("127.0.0.1", port)])
"""
"""The server before connection fairness: uvicorn's global limit of 256, nothing else."""


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _body(text: str, i: int) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "message/send", "params": {"message": {
        "kind": "message", "role": "user", "messageId": f"m{i}",
        "parts": [{"kind": "text", "text": text}]}}}


async def _refusals(repeats: int) -> list[float]:
    app = green_app(type(load_app("malt")), "http://green/")
    huge = json.dumps({"participants": {"a": "http://127.0.0.1:9/"}, "config": {
        "superblocks": 64, "aggs_per_superblock": 64, "spineblocks": 64,
        "switches_per_stage": 64, "ports_per_switch": 256}})
    times = []
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://green") as http:
        for i in range(repeats):
            started = time.perf_counter()
            reply = (await http.post("/", json=_body(huge, i))).json()["result"]
            times.append(time.perf_counter() - started)
            assert reply["status"]["state"] == "rejected"
    return times


async def _junk(count: int) -> tuple[float, float, float, int]:
    app = green_app(type(load_app("malt")), "http://green/")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://green") as http:
        before = _rss_mb()
        for i in range(count):
            await http.post("/", json=_body("junk " * 200, i))
        after_small = _rss_mb()
        await http.post("/", json=_body("x" * 1_000_000, -1))
        after_big = _rss_mb()
        return before, after_small, after_big, len(app.state.task_store)


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _under_attack(server: list[str], port: int, sources: int, attack_s: float
                        ) -> tuple[list[float], int, dict[str, int]]:
    """Legitimate latencies (``inf`` when not 200 in 2 s) while 300 connections attack."""
    url = f"http://127.0.0.1:{port}/"
    proc = subprocess.Popen(server, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "NETARENA_LIMITS": "{}"})
    attack = None
    try:
        async with httpx.AsyncClient(timeout=1, trust_env=False) as http:
            for _ in range(300):
                try:
                    if (await http.get(url + "healthz")).status_code == 200:
                        break
                except httpx.HTTPError:
                    await asyncio.sleep(0.1)
        attack = subprocess.Popen([sys.executable, "-m", "tests.helpers.slowloris", str(port),
                                   "300", "127.0.0.10", str(sources)], cwd=ROOT,
                                  stdout=subprocess.PIPE, text=True)
        assert attack.stdout is not None
        attack.stdout.readline()
        await asyncio.sleep(3)
        answers = await legitimate(url, attack_s)
        attack.terminate()
        counts = json.loads(attack.communicate(timeout=30)[0])
    finally:
        for p in (attack, proc):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
    times = [a.seconds if a.status == 200 and a.seconds <= 2 else float("inf") for a in answers]
    return times, len(answers), counts


def _attack_figures(attack_s: float) -> None:
    serve = [str(Path(sys.executable).parent / "netarena"), "serve", "malt", "--port"]
    alone = [sys.executable, "-c", _UVICORN_ALONE]
    for name, command, sources in (("netarena serve", serve, 1),
                                   ("netarena serve", serve, 30),
                                   ("uvicorn alone (before)", alone, 1)):
        port = _port()
        times, total, counts = asyncio.run(_under_attack([*command, str(port)], port, sources,
                                                         attack_s))
        ok = [t for t in times if t != float("inf")]
        median = f"median {statistics.median(ok) * 1000:.0f} ms, max {max(ok) * 1000:.0f} ms" \
            if ok else "none answered"
        print(f"slowloris, 300 reopening connections from {sources} address(es), {name}: "
              f"{len(ok)}/{total} legitimate requests 200 within 2 s "
              f"({len(ok) / total:.0%}; {median}); attacker opened {counts['opened']}, "
              f"reset before open {counts['failed']}")


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--junk", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--attack-s", type=float, default=10.0,
                    help="seconds of legitimate requests during each slowloris attack")
    args = ap.parse_args()
    _attack_figures(args.attack_s)
    refusals = asyncio.run(_refusals(args.repeats))
    print(f"oversized malt topology refused: median {statistics.median(refusals) * 1000:.1f} ms "
          f"(max {max(refusals) * 1000:.1f} ms, {len(refusals)} requests)")
    for name in ("malt", "route", "k8s"):
        app = load_app(name)
        started = time.perf_counter()
        queries = plan_queries(app, QueryPlan(num_queries=300, seed=1))
        per = (time.perf_counter() - started) / len(queries)
        print(f"planning {name}: {per * 1000:.2f} ms per query "
              f"(1,000 queries: {per * 1000:.1f} s)")
    before, small, big, stored = asyncio.run(_junk(args.junk))
    print(f"junk requests: RSS {before:.0f} MB before, {small:.0f} MB after {args.junk} "
          f"({(small - before) * 1024 / args.junk:.1f} KB per request), {big:.0f} MB after one "
          f"1 MB request; {stored} tasks stored")


if __name__ == "__main__":
    main()
