"""The judge's probes leave the gateways' ICMP error budget to the agent (``errorbudget.py``).

A host whose gateway lacks the route to a subnet must see the gateway's "Destination Net
Unreachable" (``!N`` in traceroute) at hop 1, right after the judge probed the same pairs,
and after the judge probed them again and again, while the judge watches the pairs that
must stay blocked during the agent's command: without ``judge_quiet`` it saw ``* * *``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from netarena.common.core.types import Query
from netarena.route import RouteApp
from netarena.route.judge.errorbudget import ERROR_COST, HOLDERS, judge_quiet
from netarena.route.judge.measure import measure
from netarena.route.linux.namespaces import enter, read_sysctl

from .conftest import NEEDS_ROOT, first_query, on_a_host, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


REFILL_S = 5.5
"""A gateway's error bucket for one source is full again this long after it was spent."""


def _hop_one(observation: str) -> str:
    return next((line for line in observation.splitlines() if re.match(r"^\s*1\s", line)), "")


SMALL, FULL = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2}), RouteApp()
CASES: dict[str, tuple[RouteApp, Callable[[], Query]]] = {
    "2x2": (SMALL, lambda: first_query(SMALL, "DI", on_a_host, start=31)),
    # The source host has pairs that must stay blocked, refused by r0 with ICMP errors:
    # the probes watching them during the agent's command emptied r0's bucket too.
    "watched-603": (FULL, lambda: FULL.generate(603, 1)),
    "watched-608": (FULL, lambda: FULL.generate(608, 1)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_traceroute_shows_the_gateways_net_unreachable_after_the_judge(case: str) -> None:
    app, query = CASES[case]
    with app.open(query()) as episode:
        plan = episode.plan
        src, dst = next(  # a host that reaches a host of another subnet through r0
            (s, d) for s, d in sorted(episode.matrix.ok)
            if "r0" not in (s, d) and plan.host(s).subnet != plan.host(d).subnet
        )
        subnet = plan.subnet(plan.host(dst).subnet)
        target = plan.address(dst)
        # The gateway loses the route (the step is judged: the judge probes every pair,
        # src's probes into the missing route included).
        episode.step(reply("r0", f"ip route flush exact {subnet.network}"))
        assert episode.history[-1].exit_code == 0, episode.history[-1].output
        assert (src, dst) not in episode.matrix.ok
        last = 0.0  # when the agent last probed
        for turn in range(3):  # the judge again and again, then the agent's own probes
            if turn:  # the agent's own last probes spent the bucket: it refills meanwhile,
                episode.step(reply(src, "true"))  # while the judge probes again and again
                time.sleep(max(0.0, last + REFILL_S - time.monotonic()))
                episode.step(reply(src, "true"))  # the judge, right before the agent
            last = time.monotonic()
            step = episode.step(reply(src, f"traceroute -n -w 1 -m 1 {target}"))
            assert "!N" in _hop_one(step.observation), f"turn {turn}: {step.observation[:600]}"
        time.sleep(max(0.0, last + REFILL_S - time.monotonic()))
        episode.step(reply(src, "true"))
        step = episode.step(reply(src, f"ping -c 1 -W 1 {target}"))
        assert "Destination Net Unreachable" in step.observation, step.observation[:600]


def _held_back(netns: str) -> int:
    """The ICMP errors ``netns`` has held back at its per-destination limit."""
    with enter(netns), open("/proc/self/net/snmp") as f:
        head, values = [line.split() for line in f if line.startswith("Icmp:")][:2]
    counters = dict(zip(head, values, strict=True))
    if "OutRateLimitHost" not in counters:
        pytest.skip("this kernel does not count ICMP errors held back (Linux < 6.0)")
    return int(counters["OutRateLimitHost"])


@pytest.mark.slow
def test_a_measurement_spends_no_error_budget_on_an_address_nothing_answers() -> None:
    """Seed 608's fault takes h13's interface down: r0's neighbour entry for it stays
    unresolved, holding the judge's probes to h13. Deleting the entry after the
    measurement (or its resolution failing three seconds later) answers each probe with
    Host Unreachable; outside ``judge_quiet`` the gateway held 35 to 55 of them back per
    measurement, its budget for those sources spent (``unseen.py``)."""
    app = RouteApp()
    with app.open(app.generate(608, 1, None)) as episode:
        assert [f["method"] for f in episode.faults] == ["ifconfig_down"], episode.faults
        spaces = [episode.net.netns(node) for node in episode.plan.nodes]
        before = [_held_back(ns) for ns in spaces]
        measure(episode.net, episode.timing, None, None)
        time.sleep(3.5)  # an unresolved entry left behind has failed by now
        assert [_held_back(ns) for ns in spaces] == before


def test_judge_quiet_puts_every_limit_back(small_app: RouteApp) -> None:
    """Inside: ratemask 0 on every node, error_cost 0; after: both put back."""
    with small_app.open(small_app.generate(32, 1, "DI")) as episode:
        net = episode.net
        spaces = [net.netns(n) for n in episode.plan.nodes]
        with judge_quiet(spaces):
            assert {read_sysctl(ns, "net.ipv4.icmp_ratemask") for ns in spaces} == {"0"}
            assert ERROR_COST.read_text().strip() == "0"
            with judge_quiet(spaces[:1]):  # nested (another episode's judge): still held
                pass
            assert read_sysctl(spaces[0], "net.ipv4.icmp_ratemask") == "0"  # the outer's
            assert ERROR_COST.read_text().strip() == "0"
            assert read_sysctl(spaces[-1], "net.ipv4.conf.all.send_redirects") == "0"
        assert {read_sysctl(ns, "net.ipv4.icmp_ratemask") for ns in spaces} == {"6168"}
        assert read_sysctl(spaces[-1], "net.ipv4.conf.all.send_redirects") == "1"
        # Put back unless another process's judge holds it now (its pid is recorded).
        assert ERROR_COST.read_text().strip() != "0" or HOLDERS.exists()


def test_the_judges_probes_teach_no_host_a_redirect(small_app: RouteApp) -> None:
    """A route through a host of the source's own subnet makes the router send redirects;
    the judge's probes of it leave no route in any host's cache (its own traffic would)."""
    with small_app.open(small_app.generate(33, 1, "DI")) as episode:
        plan = episode.plan
        assert plan.nodes[-1] == "r0"
        source, via = plan.hosts_in(plan.subnets[0].index)[:2]
        far = plan.subnets[1]
        episode.step(reply("r0", f"ip route replace {far.network} via {via.ip}"))
        assert episode.history[-1].exit_code == 0, episode.history[-1].output
        cached = episode.net.exec(source.name, ["ip", "route", "show", "cache"]).output
        assert cached.strip() == "", cached
        target = plan.hosts_in(far.index)[0].ip
        own = episode.net.exec(source.name, ["ping", "-c", "2", "-i", "0.2", "-W", "1", target])
        assert "redirect" in own.output.lower() or episode.net.exec(
            source.name, ["ip", "route", "show", "cache"]).output.strip(), own.output


def test_the_app_judges_from_a_network_namespace_of_its_own() -> None:
    """As in a container on a network of its own (``netarena up``, the compose files): no
    ``error_cost`` is visible there, and every query was unscored (FileNotFoundError)."""
    name = f"natest{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
        run = subprocess.run(
            ["ip", "netns", "exec", name, str(Path(sys.executable).parent / "netarena"), "run",
             "route", "-n", "2", "--agent", "reference", "--seed", "1", "--json"],
            capture_output=True, text=True, timeout=300,
        )
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout)["solved_safely"]["k"] == 2, run.stderr[-2000:]
    assert "error_cost cannot be set here" in run.stderr
