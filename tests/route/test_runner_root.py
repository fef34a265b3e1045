"""The real runner and CLI on the route app: reference solves all within the original
dialect's ten turns, null solves none, a user's own Mininet topology works."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.common.core.runner import Runner
from netarena.route.generator import RouteApp
from netarena.route.linux import namespaces
from netarena.route.linux.namespaces import list_prefixes
from netarena.route.static.repairs import ROUTER_DIAGNOSTIC

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]
NETARENA = str(Path(sys.executable).parent / "netarena")

USER_TOPO = '''
from mininet.topo import Topo
from netarena.route.emulator.topology import LinuxRouter


class Campus(Topo):
    """Three subnets of unequal size, addressed by hand."""

    def build(self):
        router = self.addNode("r0", cls=LinuxRouter, ip="10.20.1.254/24")
        sizes = {1: 1, 2: 3, 3: 2}
        k = 0
        for i, size in sizes.items():
            switch = self.addSwitch(f"s{i}")
            self.addLink(switch, router, intfName2=f"r0-eth{i}",
                         params2={"ip": f"10.20.{i}.254/24"})
            for j in range(size):
                k += 1
                host = self.addHost(f"h{k}", ip=f"10.20.{i}.{10 + j}/24",
                                    defaultRoute=f"via 10.20.{i}.254")
                self.addLink(host, switch)
'''


def run_cli(*args: str) -> dict:
    proc = subprocess.run(
        [NETARENA, "run", "route", *args, "--json"], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def leaked_since(before: set[str]) -> set[str]:
    """New prefixes whose owner is gone: ours, left behind (another process's live
    episodes, e.g. a parallel run on the same machine, are not leaks)."""
    return {p for p in list_prefixes() - before if not namespaces._owner_alive(p)}


@pytest.mark.slow
def test_reference_solves_everything_in_ten_turns(tmp_path: Path) -> None:
    before = list_prefixes()
    summary = run_cli(
        "--agent", "reference", "--queries", "15", "--levels", "1,2,3", "--seed", "3",
        "--concurrency", "4", "--max-turns", "10", "--out", str(tmp_path),
    )
    assert summary["queries"] == 15
    assert summary["correctness"]["rate"] == 1.0 and summary["safety"]["rate"] == 1.0
    results = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {r["level"] for r in results} == {1, 2, 3}
    assert all(r["error"] is None and r["turns"] <= 10 for r in results)
    assert leaked_since(before) == set()


def test_a_long_router_reading_reaches_the_agent_whole() -> None:
    """A four-subnet router's whole reading runs past 3000 characters; the history once cut
    it there, and the reference, finding its filter rules cut, failed the query."""
    app = RouteApp()
    query = app.generate(629399767, 2, "DR+WR")
    with app.open(query) as episode:
        episode.step(json.dumps({"machine": "r0", "command": ROUTER_DIAGNOSTIC}))
        reading = episode.history[-1].output
        assert len(reading) > 3000  # what this test is about (redraw the seed if it fails)
        assert reading.rstrip() in episode.observe()
    [result] = asyncio.run(Runner(app, app.reference_agent()).run([query]))
    assert result.correct and result.safe, result


@pytest.mark.slow
def test_the_reference_reads_a_twelve_subnet_router_in_pages() -> None:
    """Past the output cap (twelve subnets' filter rules alone are), the reference reads the
    rest in pages; reading only the first page, it set the FORWARD policy to ACCEPT. One host
    a subnet: the router's reading is as long, and the episode 2.5 CPU s, not 25."""
    app = RouteApp({"num_subnets": 12, "hosts_per_subnet": 1})
    query = app.generate(2012145144, 1, "DI")
    runner = Runner(app, app.reference_agent())
    runner.trajectories = {}
    [result] = asyncio.run(runner.run([query]))
    assert result.correct and result.safe, result
    commands = [turn.action for turn in runner.trajectories[query.id]]
    assert any("| tail -n +" in command for command in commands)


def test_null_agent_scores_zero() -> None:
    summary = run_cli("--agent", "null", "--queries", "3", "--levels", "1,2,3", "--seed", "3")
    assert summary["correctness"]["rate"] == 0.0


def test_a_users_topology_class_runs(tmp_path: Path) -> None:
    topo = tmp_path / "campus.py"
    topo.write_text(USER_TOPO)
    summary = run_cli(
        "--agent", "reference", "--queries", "3", "--levels", "1,2,3", "--seed", "8",
        "--max-turns", "10", "--param", f"topo={topo}:Campus",
    )
    assert summary["correctness"]["rate"] == 1.0 and summary["safety"]["rate"] == 1.0


def test_route_shell_opens_mininets_cli_on_the_faulted_network() -> None:
    proc = subprocess.run(
        [NETARENA, "route", "shell", "--seed", "3", "--level", "1", "--label", "DR",
         "-p", "num_subnets=2", "-p", "hosts_per_subnet=1"],
        input="h1 ip -br addr\nnet\nexit\n", stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=300,
    )
    out = proc.stdout  # Mininet's CLI writes command output to stderr
    assert proc.returncode == 0, out[-2000:]
    assert "## Current connectivity" in out and "mininet>" in out
    assert "h1-eth0@if" in out and "s1-eth1:r0-eth1" in out
    assert "The injected faults were: disable_routing" in out
