"""Episodes per second: the built-in runner vs Ray on a local cluster (reference agents).

For each app, the same queries are played REPEATS times by the built-in runner and by a
``RayRunner`` on one local cluster; prints the median episodes/s of each and their ratio,
plus Ray's one-off costs (cluster start, actors warming up). Run on a quiet machine if
possible; on a loaded one compare the ratio, not the absolute figures.

    .venv/bin/python benchmarks/executors.py [--apps malt,k8s] [--n 60] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from netarena.common.core.app import load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.training.executors import RayRunner, start_ray


def _rate(runner: Runner, queries: list) -> float:
    started = time.perf_counter()
    results = asyncio.run(runner.run(queries))
    elapsed = time.perf_counter() - started
    assert all(r.correct for r in results), "the reference solver must solve every query"
    return len(queries) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--apps", default="malt,k8s")
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    import ray

    t0 = time.perf_counter()
    start_ray(num_cpus=None)
    print(f"ray: local cluster started in {time.perf_counter() - t0:.1f} s "
          f"({int(ray.cluster_resources().get('CPU', 0))} CPUs)")
    config = RunConfig(concurrency=args.concurrency)
    for name in args.apps.split(","):
        app = load_app(name)
        queries = plan_queries(app, QueryPlan(num_queries=args.n, seed=1))
        local = Runner(app, app.reference_agent(), config)
        _rate(local, queries[: args.concurrency])  # warm-up (sandboxes, kubectl, caches)
        local_rates = [_rate(local, queries) for _ in range(args.repeats)]
        with RayRunner(name, {}, "reference", config) as remote:
            t0 = time.perf_counter()
            _rate(remote, queries[: args.concurrency])  # actors start and warm up
            warm = time.perf_counter() - t0
            ray_rates = [_rate(remote, queries) for _ in range(args.repeats)]
        lo, rr = statistics.median(local_rates), statistics.median(ray_rates)
        print(f"{name}: built-in {lo:.1f} episodes/s, ray local {rr:.1f} episodes/s "
              f"(ray/built-in {rr / lo:.2f}); actors warm-up {warm:.1f} s; "
              f"{args.n} episodes x {args.repeats}, concurrency {args.concurrency}")
    ray.shutdown()


if __name__ == "__main__":
    main()
