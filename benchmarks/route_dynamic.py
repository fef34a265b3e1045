"""Dynamic-routing (OSPF on FRR) timings against brief §12 (medians; the machine is shared).

Measures, on 6-router OSPF networks (a host behind each router, 12 machines in the mesh):
``open()`` (build + FRR start + convergence + inject + verify in the steady state) with its
phases, the resident memory of each router's FRR daemons, and throughput with
``--parallel`` episodes always running (``--rounds`` each; counted only while every worker
is busy, so neither the ramp nor the drain is in it): whole reference-solver episodes, and
episodes with no agent turn (open, the final score, close: what the harness costs before
any agent acts).

Run as root:
``python benchmarks/route_dynamic.py [--repeat 5] [--parallel 8] [--rounds 3] [--protocol bgp]``
(``bgp``: 6-router multi-AS networks, OSPF inside each AS and BGP across, bgpd too).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from route_episode import play_reference  # a sibling script: benchmarks/ is on sys.path

from netarena.route import RouteApp
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.episode import dynamic_plan
from netarena.route.frr.network import FrrNetwork
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.settle import settle

T = TypeVar("T")
_LABELS = ("ospf-area", "ospf-cost", "ospf-auth", "ospf-redist", "ospf-mtu", "ospf-passive")
_BGP_LABELS = ("bgp-remote-as", "bgp-filter", "bgp-network", "bgp-nexthop", "bgp-maxprefix")


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def frr_memory_kib(net: FrrNetwork) -> list[int]:
    """Resident memory of each router's FRR daemons together, KiB."""
    out = []
    for router in net.ospf.routers:
        running = net.boxes[router].daemon_pids()
        out.append(sum(_rss_kib(pid) for name, pid in running.items() if name in net.ospf.daemons))
    return out


def open_once(app: RouteApp, seed: int) -> tuple[float, list[int]]:
    label = _LABELS[seed % len(_LABELS)]
    query = app.generate(seed, 1, label)
    started = time.perf_counter()
    episode = app.open(query)
    took = time.perf_counter() - started
    try:
        memory = frr_memory_kib(episode.net)
    finally:
        episode.close()
    return took, memory


def converge_once(app: RouteApp, seed: int) -> tuple[float, float]:
    """Build + FRR start, then convergence of the healthy network, seconds."""
    truth = app.generate(seed, 1, _LABELS[1]).truth
    plan = dynamic_plan(truth)
    started = time.perf_counter()
    net = FrrNetwork(plan)
    built = time.perf_counter() - started
    try:
        settle(net, quiet_s=0.3, complete=True)
        return built, time.perf_counter() - started - built
    finally:
        net.close()


def solve(app: RouteApp, seed: int) -> tuple[float, bool]:
    return play_reference(app, app.generate(seed, 1, _LABELS[seed % len(_LABELS)]))


def judge_only(app: RouteApp, seed: int) -> float:
    """An episode with no agent turn: open, the final score, close (the harness's floor)."""
    started = time.perf_counter()
    episode = app.open(app.generate(seed, 1, _LABELS[seed % len(_LABELS)]))
    try:
        episode.score()
    finally:
        episode.close()
    return time.perf_counter() - started


def app_daemons(protocol: str) -> tuple[str, ...]:
    """The daemons each router of ``protocol``'s networks runs."""
    return BgpPlan.daemons if protocol == "bgp" else OspfPlan.daemons


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=8)
    parser.add_argument(
        "--rounds", type=int, default=3, help="episodes per worker: throughput in a steady state"
    )
    parser.add_argument("--protocol", choices=("ospf", "bgp"), default="ospf")
    args = parser.parse_args()
    if args.protocol == "bgp":
        global _LABELS
        _LABELS = _BGP_LABELS
    app = RouteApp({"num_routers": 6})
    phases = [converge_once(app, 100 + i) for i in range(args.repeat)]
    print(f"6 routers: build + FRR start   median {statistics.median(p[0] for p in phases):.2f} s")
    print(f"6 routers: convergence         median {statistics.median(p[1] for p in phases):.2f} s")
    opened = [open_once(app, 200 + i) for i in range(args.repeat)]
    print(
        f"6 routers: open() (build, FRR, converge, inject, verify) median "
        f"{statistics.median(t for t, _ in opened):.2f} s (target <= 4 s)"
    )
    memory = [kib for _, per in opened for kib in per]
    print(
        f"FRR resident memory per router ({'+'.join(app_daemons(args.protocol))}): median "
        f"{statistics.median(memory) / 1024:.1f} MiB, max {max(memory) / 1024:.1f} MiB"
    )
    count = args.parallel * args.rounds
    runs, rate = in_parallel(lambda s: solve(app, s), range(300, 300 + count), args.parallel)
    solved = sum(ok for (_, ok), _ in runs)
    print(
        f"{count} reference episodes, {args.parallel} at a time: {rate:.2f} episodes/s while "
        f"all {args.parallel} ran (target >= 1), median episode "
        f"{statistics.median(t for (t, _), _ in runs):.1f} s, solved safely {solved}/{count}"
    )
    took, rate = in_parallel(lambda s: judge_only(app, s), range(400, 400 + count), args.parallel)
    print(
        f"{count} episodes with no agent turn (open, final score, close), {args.parallel} at "
        f"a time: {rate:.2f} episodes/s while all ran, median episode "
        f"{statistics.median(t for t, _ in took):.1f} s"
    )


def in_parallel(
    play: Callable[[int], T], seeds: range, parallel: int
) -> tuple[list[tuple[T, tuple[float, float]]], float]:
    """Each seed's result and ``(start, end)``, and episodes/s while ``parallel`` ran.

    The rate counts episodes ending between the moment every worker was busy and the last
    episode's start (after it the workers run out of work), so neither the ramp nor the
    drain of the pool is in it.
    """

    def timed(seed: int) -> tuple[T, tuple[float, float]]:
        started = time.perf_counter()
        result = play(seed)
        return result, (started, time.perf_counter())

    with ThreadPoolExecutor(parallel) as pool:
        runs = list(pool.map(timed, seeds))
    starts = sorted(start for _, (start, _) in runs)
    full, last = starts[min(parallel, len(starts)) - 1], starts[-1]
    ended = sum(full <= end <= last for _, (_, end) in runs)
    return runs, ended / (last - full) if last > full else float("nan")


if __name__ == "__main__":
    main()
