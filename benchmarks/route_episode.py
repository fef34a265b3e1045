"""Route app timings against brief §12 (medians; the machine is shared, so expect noise).

Measures, on a 4x4 network (17 machines, 272 ordered pairs, each judged on ICMP, TCP and
UDP: 816 flows, plus the undisclosed services' flows) built with Mininet inside a private
namespace, with a drawn undisclosed configuration and the design's own blocks: building the
network, ``open()`` (build + intent + undisclosed state + blocks + inject + verify in the
steady state), one pingmesh of a healthy and of a broken network (with a false-result
count over every flow), the final score's probe of ports drawn at score time
(``hidden.py``: listeners opened on two TCP and two UDP ports, every pair probed, closed),
the collateral diff (every node's state read and compared with the healthy one:
unchanged, and after a rule added on the router), one agent command in the sandbox, whole
reference-solver episodes, and throughput with parallel episodes.

Run as root: ``python benchmarks/route_episode.py [--repeat 7] [--parallel 8]``.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from netarena.common.core.agents import Observation
from netarena.common.core.types import Query
from netarena.route import Network, RouteApp, RouterTopo, draw_plan, pingmesh
from netarena.route.agents.reference import ReferenceRouteAgent
from netarena.route.emulator.intent import Intent
from netarena.route.emulator.services import expected_flows
from netarena.route.emulator.undisclosed import draw_undisclosed
from netarena.route.judge.collateral import Footprint, collateral
from netarena.route.judge.hidden import probe_hidden
from netarena.route.judge.pingall import PROTOCOLS


def median_s(samples: list[float]) -> str:
    return f"{statistics.median(samples):.4f} s"


def solve(app: RouteApp, seed: int, level: int) -> tuple[float, bool]:
    return play_reference(app, app.generate(seed, level))


def play_reference(app: RouteApp, query: Query) -> tuple[float, bool]:
    """Open ``query`` and let the reference play it: seconds taken, solved safely."""
    started = time.perf_counter()
    episode = app.open(query)
    agent = ReferenceRouteAgent()
    try:
        for turn in range(10):
            reply = asyncio.run(agent.act(Observation(episode.observe(), "b", turn)))
            if episode.step(reply).done:
                break
        score = episode.score()
    finally:
        episode.close()
    return time.perf_counter() - started, score.correct and score.safe


def _flows(pairs: frozenset[tuple[str, str]]) -> frozenset[tuple[str, str, str]]:
    return frozenset((p, s, d) for p in PROTOCOLS for s, d in pairs)


def mesh_timings(repeat: int) -> dict[str, list[float]]:
    plan = draw_plan(random.Random(44), [4, 4, 4, 4])
    intent = Intent(None, False, False, (), None)
    local = draw_undisclosed(random.Random(45), plan, intent)
    everything = frozenset((s, d) for s in plan.nodes for d in plan.nodes if s != d)
    served = expected_flows(plan, intent, local)  # the undisclosed services' flows that answer
    times: dict[str, list[float]] = {"build": [], "close": [], "healthy": [], "broken": []}
    times["false"] = [0.0]
    times |= {"shell": [], "diff": [], "diff_changed": [], "icmp": [], "hidden": []}
    for _ in range(repeat):
        t = time.perf_counter()
        net = Network(plan, intent, RouterTopo(plan), local=local)
        times["build"].append(time.perf_counter() - t)
        pingmesh(net, expect=everything, expect_services=served)  # also warms ARP
        for _ in range(5):
            t = time.perf_counter()
            m = pingmesh(net, expect=everything, expect_services=served)
            times["healthy"].append(time.perf_counter() - t)
            times["false"][0] += len(_flows(everything) - m.flows)
            times["false"][0] += len((m.services or frozenset()) ^ served)
        for _ in range(5):
            t = time.perf_counter()
            m = pingmesh(net, expect=everything, protocols=("icmp",))
            times["icmp"].append(time.perf_counter() - t)
            times["false"][0] += len(everything - m.ok)
        for _ in range(3):
            t = time.perf_counter()
            verdict = probe_hidden(net, everything, net.healthy, net.healthy, set())
            times["hidden"].append(time.perf_counter() - t)
            times["false"][0] += len(verdict.wrong)
        for _ in range(5):
            t = time.perf_counter()
            found = collateral(net.healthy, net.read_states(), Footprint())
            times["diff"].append(time.perf_counter() - t)
            times["false"][0] += len(found)
        t = time.perf_counter()
        net.shell("h1", "ip route | grep default")
        times["shell"].append(time.perf_counter() - t)
        net.exec("r0", ["iptables", "-A", "INPUT", "-p", "tcp", "--dport", "1", "-j", "DROP"])
        t = time.perf_counter()
        found = collateral(net.healthy, net.read_states(), Footprint())
        times["diff_changed"].append(time.perf_counter() - t)
        times["false"][0] += len(found) != 1
        net.exec("r0", ["ip", "link", "set", plan.subnets[1].router_intf, "down"])
        t = time.perf_counter()
        m = pingmesh(net, expect=m.ok, expect_services=frozenset())
        times["broken"].append(time.perf_counter() - t)
        cut = set(h.name for h in plan.hosts_in(2))
        expected_ok = {(s, d) for s, d in everything if (s in cut) == (d in cut)}
        times["false"][0] += len(m.flows ^ _flows(frozenset(expected_ok)))
        t = time.perf_counter()
        net.close()
        times["close"].append(time.perf_counter() - t)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--parallel", type=int, default=8)
    args = parser.parse_args()
    app = RouteApp({"num_subnets": 4, "hosts_per_subnet": 4})
    times = mesh_timings(args.repeat)

    opened = []
    for level, label in [(1, "DR"), (1, "RI"), (2, "DR+WR"), (3, "DI+DT"), (3, "DI+RI")] * 2:
        query = app.generate(len(opened) + 1, level, label)
        t = time.perf_counter()
        episode = app.open(query)
        opened.append(time.perf_counter() - t)
        episode.close()

    episodes = [solve(app, 500 + i, 1 + i % 3) for i in range(args.repeat)]
    t = time.perf_counter()
    n = args.parallel * 2
    with ThreadPoolExecutor(args.parallel) as pool:
        par = list(pool.map(lambda i: solve(app, 900 + i, 1 + i % 3), range(n)))
    wall = time.perf_counter() - t

    print("route benchmark, 4x4 network (17 machines, 272 ordered pairs x ICMP/TCP/UDP), Mininet")
    print(f"  network build (Mininet, private ns)  {median_s(times['build'])}")
    print(f"  network close                        {median_s(times['close'])}")
    print(f"  open: build+intent+inject+verify     {median_s(opened)}   (target <= 1.5 s)")
    healthy = median_s(times["healthy"])
    print(f"  pingmesh, healthy, all protocols     {healthy}   (target <= 0.1 s)")
    print(f"  pingmesh, healthy, ICMP only         {median_s(times['icmp'])}   (for comparison)")
    print(f"  ports drawn at score time (2+2)      {median_s(times['hidden'])}   (final score)")
    print(f"  pingmesh, broken (confirms losses)   {median_s(times['broken'])}")
    print(f"  collateral diff, unchanged           {median_s(times['diff'])}   (target <= 0.05 s)")
    print(f"  collateral diff, router rule added   {median_s(times['diff_changed'])}")
    print(f"  false results (flows and diffs)      {int(times['false'][0])}   (target 0)")
    print(f"  one agent command in the sandbox     {median_s(times['shell'])}")
    print(
        f"  whole reference episode              {median_s([e[0] for e in episodes])}"
        f"   solved {sum(e[1] for e in episodes)}/{len(episodes)}"
    )
    print(
        f"  {args.parallel} episodes in parallel: {n} episodes in {wall:.2f} s = "
        f"{n / wall:.2f} episodes/s, solved {sum(p[1] for p in par)}/{n}"
    )


if __name__ == "__main__":
    main()
