"""The judge's probes leave the gateways' ICMP error budget to the agent (``errorbudget.py``).

A host whose gateway lacks the route to a subnet must see the gateway's "Destination Net
Unreachable" (``!N`` in traceroute) at hop 1, right after the judge probed the same pairs,
and after the judge probed them again and again, while the judge watches the pairs that
must stay blocked during the agent's command: without ``judge_quiet`` it saw ``* * *``.
"""

from __future__ import annotations

import re
import time

import pytest

from netarena.route import RouteApp
from netarena.route.judge.errorbudget import ERROR_COST, HOLDERS, judge_quiet
from netarena.route.linux.namespaces import read_sysctl

from .conftest import NEEDS_ROOT, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


REFILL_S = 5.5
"""A gateway's error bucket for one source is full again this long after it was spent."""


def _hop_one(observation: str) -> str:
    return next((line for line in observation.splitlines() if re.match(r"^\s*1\s", line)), "")


CASES = {
    "2x2": (RouteApp({"num_subnets": 2, "hosts_per_subnet": 2}), 31, "DI"),
    # The source host has pairs that must stay blocked, refused by r0 with ICMP errors:
    # the probes watching them during the agent's command emptied r0's bucket too.
    "watched-603": (RouteApp(), 603, None),
    "watched-608": (RouteApp(), 608, None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_traceroute_shows_the_gateways_net_unreachable_after_the_judge(case: str) -> None:
    app, seed, label = CASES[case]
    with app.open(app.generate(seed, 1, label)) as episode:
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
