"""The judge's probes leave the gateways' ICMP error budget to the agent (``errorbudget.py``).

A host whose gateway lacks the route to a subnet must see the gateway's "Destination Net
Unreachable" (``!N`` in traceroute) at hop 1, right after the judge probed the same pairs,
and after the judge probed them again and again: without ``judge_quiet`` it saw ``* * *``.
"""

from __future__ import annotations

import re

import pytest

from netarena.route import RouteApp
from netarena.route.errorbudget import ERROR_COST, judge_quiet
from netarena.route.namespaces import read_sysctl

from .conftest import NEEDS_ROOT, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def _hop_one(observation: str) -> str:
    return next((line for line in observation.splitlines() if re.match(r"^\s*1\s", line)), "")


@pytest.mark.slow
def test_traceroute_shows_the_gateways_net_unreachable_after_the_judge(
    small_app: RouteApp,
) -> None:
    query = small_app.generate(31, 1, "DI")
    with small_app.open(query) as episode:
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
        for turn in range(4):  # the judge again and again, then the agent's own probes
            if turn:
                episode.step(reply(src, "true"))
            step = episode.step(reply(src, f"traceroute -n -w 1 -m 1 {target}"))
            hop = _hop_one(step.observation)
            assert "!N" in hop, f"turn {turn}: {step.observation[:600]}"
        step = episode.step(reply(src, f"ping -c 1 -W 1 {target}"))
        assert "Destination Net Unreachable" in step.observation, step.observation[:600]


def test_judge_quiet_puts_every_limit_back(small_app: RouteApp) -> None:
    """Inside: ratemask 0 on every node, error_cost 0; after: both as they were."""
    with small_app.open(small_app.generate(32, 1, "DI")) as episode:
        net = episode.net
        spaces = [net.netns(n) for n in episode.plan.nodes]
        cost = ERROR_COST.read_text()
        with judge_quiet(spaces):
            assert {read_sysctl(ns, "net.ipv4.icmp_ratemask") for ns in spaces} == {"0"}
            assert ERROR_COST.read_text().strip() == "0"
            with judge_quiet(spaces[:1]):  # nested (another episode's judge): still held
                pass
            assert ERROR_COST.read_text().strip() == "0"
        assert {read_sysctl(ns, "net.ipv4.icmp_ratemask") for ns in spaces} == {"6168"}
        assert ERROR_COST.read_text() == cost
