"""Benchmark of the green server's limits: what refusing, planning and junk requests cost.

Figures behind the defaults of ``ServerLimits`` (docs/agentbeats.md, "Server limits"):
time to refuse an oversized topology; planning cost per query per app; resident memory of
a server after many junk requests (the task store is bounded) and after one 1 MiB request.
Run: ``python benchmarks/server_limits.py [--junk N]``. Prints medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import statistics
import time

import httpx

from netarena.common.core.app import load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.serving.server import green_app


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
            assert reply["status"]["state"] == "failed"
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


def main() -> None:
    """Print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--junk", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
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
