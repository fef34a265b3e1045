"""MALT evaluation throughput: generate queries, answer them with the reference agent, time it.

Prints the median milliseconds for the full evaluation of one answer (sandboxed run of the
agent's program, correctness and safety checks, scoring), the resulting queries per second,
the median generation time, and the queries/s of a real ``Runner`` run with concurrency,
with the sandbox layers every answer ran under. The target is <= 25 ms per answer in both
modes; the reference NetArena took 5.4 s here.

Usage: ``python benchmarks/malt_throughput.py [--queries 120] [--seed 1] [--uid 10001]
[--topology google-example]`` (``--uid``, as root: run the same benchmark as that uid, like the
official images, through ``setpriv``; without it the benchmark runs as the current user;
``--topology``: the default ``datacenter`` fabric or Google's example).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time

from netarena.common.core.agents import Observation
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.malt import MaltApp, base_topology


def main() -> None:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--uid", type=int, help="as root: rerun as this uid (and gid)")
    parser.add_argument("--topology", default="datacenter", help="datacenter or google-example")
    args = parser.parse_args()
    if args.uid is not None and os.geteuid() != args.uid:
        rest = [a for a in sys.argv[1:] if a != "--uid" and a != str(args.uid)]
        who = [f"--reuid={args.uid}", f"--regid={args.uid}", "--clear-groups"]
        raise SystemExit(subprocess.call(["setpriv", *who, sys.executable, __file__, *rest]))

    app = MaltApp({"topology": args.topology})
    agent = app.reference_agent()
    app.generate(0, 1)  # build the topology once, outside the timings
    pool = app.sandbox()
    pool.run(b"def process_graph(g):\n    return {'type': 'text', 'data': 0}\n")  # warm workers

    gen_s: list[float] = []
    plan = QueryPlan(num_queries=args.queries, seed=args.seed)
    queries = []
    for query in plan_queries(app, plan):
        t0 = time.perf_counter()
        queries.append(app.generate(query.seed, query.level, query.label))
        gen_s.append(time.perf_counter() - t0)

    eval_s: list[float] = []
    correct = 0
    for query in queries:
        reply = asyncio.run(agent.act(Observation(query.prompt, query.id)))
        t0 = time.perf_counter()
        with app.open(query) as episode:
            episode.step(reply)
            score = episode.score()
        eval_s.append(time.perf_counter() - t0)
        correct += score.correct and score.safe

    runner = Runner(app, agent, RunConfig(concurrency=args.concurrency))
    t0 = time.perf_counter()
    results = asyncio.run(runner.run(queries))
    wall = time.perf_counter() - t0

    median = statistics.median(eval_s)
    size = base_topology(app.config.topology_params()).number_of_nodes()
    print(f"topology:                      {args.topology} ({size} nodes)")
    print(f"user:                          uid {os.geteuid()}, Python {sys.version.split()[0]}")
    print(f"sandbox layers:                {', '.join(pool.layers)}")
    print(f"queries:                       {len(queries)} (levels 1-3, every label)")
    print(f"reference correct and safe:    {correct}/{len(queries)}")
    print(
        f"median evaluation per answer:  {median * 1000:.1f} ms "
        f"(p90 {sorted(eval_s)[int(0.9 * len(eval_s))] * 1000:.1f} ms)"
    )
    print(f"sequential answers per second: {1 / median:.1f}")
    print(f"median generation per query:   {statistics.median(gen_s) * 1000:.1f} ms")
    print(
        f"runner, concurrency {args.concurrency}:         {len(results) / wall:.1f} queries/s "
        f"({sum(r.correct for r in results)}/{len(results)} correct)"
    )


if __name__ == "__main__":
    main()
