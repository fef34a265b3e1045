"""How large a route network the pingmesh judges without false results (sets limits.py).

For each size it builds a healthy network (no intent rules), then runs the episode's
steady-state measurement (neighbour caches flushed, one round, confirmation rounds for
pairs that did not answer) ``--repeat`` times, counting pairs reported lost on the healthy
network: false results. It also counts first-round misses (before confirmation), the
margin the confirmation buys. Sizes are NxM: N subnets of M hosts (N*M+1 machines).

``--parallel P`` measures P networks of each size at once (P episodes sharing the CPUs).

Run as root: ``python benchmarks/route_limits.py [--sizes 4x4,8x8] [--parallel 8]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from netarena.route import Network, RouterTopo, draw_plan, pingmesh
from netarena.route.emulator.intent import Intent
from netarena.route.judge.measure import ProbeTiming, measure


def one_size(subnets: int, hosts: int, repeat: int) -> dict:
    plan = draw_plan(random.Random(subnets * 100 + hosts), [hosts] * subnets)
    intent = Intent(None, False, False, (), None)
    started = time.perf_counter()
    net = Network(plan, intent, RouterTopo(plan))
    build_s = time.perf_counter() - started
    everything = frozenset((s, d) for s in plan.nodes for d in plan.nodes if s != d)
    try:
        measure(net, ProbeTiming(confirm_rounds=4, confirm_floor_s=0.5), everything)  # settle
        false, first_round_misses, times = 0, 0, []
        for _ in range(repeat):
            net.flush_neighbours()
            first = pingmesh(net, expect=everything, confirm_rounds=0)
            first_round_misses += len(everything - first.ok)
            started = time.perf_counter()
            judged = measure(net, ProbeTiming(), everything)
            times.append(time.perf_counter() - started)
            false += len(everything - judged.ok)
    finally:
        net.close()
    return {
        "machines": len(plan.nodes),
        "pairs": len(everything),
        "build_s": build_s,
        "mesh_s": statistics.median(times),
        "first_round_misses": first_round_misses,
        "false": false,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="2x2,4x4,5x5,6x6,8x5,8x8,10x10")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    print(f"{args.parallel} network(s) at once, {args.repeat} judged pingmeshes each")
    print("size    machines  pairs  build s  mesh s (median)  1st-round misses  false results")
    for size in args.sizes.split(","):
        subnets, hosts = (int(x) for x in size.split("x"))
        with ThreadPoolExecutor(args.parallel) as pool:
            jobs = [
                pool.submit(one_size, subnets, hosts, args.repeat) for _ in range(args.parallel)
            ]
            runs = [job.result() for job in jobs]
        r = {
            **runs[0],
            "build_s": statistics.median(x["build_s"] for x in runs),
            "mesh_s": statistics.median(x["mesh_s"] for x in runs),
            "first_round_misses": sum(x["first_round_misses"] for x in runs),
            "false": sum(x["false"] for x in runs),
        }
        print(
            f"{size:<7} {r['machines']:>8} {r['pairs']:>6} {r['build_s']:>8.2f} "
            f"{r['mesh_s']:>16.3f} {r['first_round_misses']:>17} {r['false']:>14}"
        )


if __name__ == "__main__":
    main()
