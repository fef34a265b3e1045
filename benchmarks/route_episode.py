"""Route app timings against brief §12 (medians; the machine is shared, so expect noise).

Measures, on a 4x4 network (17 machines, 272 ordered pairs): building the network,
building + injecting + verifying the faults (what ``open()`` does), one pingmesh of a
healthy and of a broken network (with a false-result count), whole reference-solver
episodes, and throughput with parallel episodes.

Run as root: ``python benchmarks/route_episode.py [--repeat 7] [--parallel 8]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from netarena.common.agents import Observation
from netarena.route import Network, RouteApp, TopologySpec, pingmesh
from netarena.route.solver import ReferenceRouteAgent


def median_s(samples: list[float]) -> str:
    return f"{statistics.median(samples):.4f} s"


def solve(app: RouteApp, seed: int, level: int) -> tuple[float, bool]:
    started = time.perf_counter()
    episode = app.open(app.generate(seed, level))
    agent = ReferenceRouteAgent()
    try:
        for turn in range(app.default_max_turns):
            reply = asyncio.run(agent.act(Observation(episode.observe(), "b", turn)))
            if episode.step(reply).done:
                break
        score = episode.score()
    finally:
        episode.close()
    return time.perf_counter() - started, score.correct and score.safe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--parallel", type=int, default=8)
    args = parser.parse_args()
    spec = TopologySpec(4, 4)
    app = RouteApp({"num_subnets": 4, "hosts_per_subnet": 4})

    build, close, healthy, broken, false_results = [], [], [], [], 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        net = Network(spec)
        build.append(time.perf_counter() - t)
        pingmesh(net)  # first probe also warms ARP; later ones must agree
        for _ in range(5):
            t = time.perf_counter()
            m = pingmesh(net)
            healthy.append(time.perf_counter() - t)
            false_results += len(m.pairs) - m.received
        net.exec("r0", ["ip", "link", "set", "r0-eth2", "down"])
        t = time.perf_counter()
        m = pingmesh(net)
        broken.append(time.perf_counter() - t)
        expected_ok = 272 - 2 * 4 * 13 + 0  # subnet 2 cut off from 12 hosts and r0
        false_results += abs(m.received - expected_ok)
        t = time.perf_counter()
        net.close()
        close.append(time.perf_counter() - t)

    opened = []
    for level, label in [(1, "DR"), (1, "RI"), (2, "DR+WR"), (3, "DI+DT"), (3, "DI+RI")] * 2:
        q = app.generate(len(opened) + 1, level, label)
        t = time.perf_counter()
        ep = app.open(q)
        opened.append(time.perf_counter() - t)
        ep.close()

    episodes = [solve(app, 500 + i, 1 + i % 3) for i in range(args.repeat)]
    t = time.perf_counter()
    n = args.parallel * 2
    with ThreadPoolExecutor(args.parallel) as pool:
        par = list(pool.map(lambda i: solve(app, 900 + i, 1 + i % 3), range(n)))
    wall = time.perf_counter() - t

    print("route benchmark, 4x4 network (17 machines, 272 ordered pairs)")
    print(f"  network build                       {median_s(build)}")
    print(f"  network close                       {median_s(close)}")
    print(f"  open: build+inject+verify+probe     {median_s(opened)}   (target <= 1.5 s)")
    print(f"  pingmesh, healthy                   {median_s(healthy)}   (target <= 0.1 s)")
    print(f"  pingmesh, broken (waits timeouts)   {median_s(broken)}")
    print(f"  pingmesh false results              {false_results}   (target 0)")
    print(
        f"  whole reference episode             {median_s([e[0] for e in episodes])}"
        f"   solved {sum(e[1] for e in episodes)}/{len(episodes)}"
    )
    print(
        f"  {args.parallel} episodes in parallel: {n} episodes in {wall:.2f} s = "
        f"{n / wall:.2f} episodes/s, solved {sum(p[1] for p in par)}/{n}"
    )


if __name__ == "__main__":
    main()
