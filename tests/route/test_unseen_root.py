"""The judge's measurement leaves the agent's ``ip neigh`` and ``conntrack -L`` as they were.

The agent pings its gateway and an address nobody holds (a resolved and an unresolved
neighbour entry) on a host whose rules track connections; the step is judged (the judge
flushes the caches and probes every pair from that host); the agent's next look shows the
same entries, and none of the judge's (``unseen.py``). Before, it showed the other hosts
of its subnet learned, lost the unresolved entry, and listed the judge's ICMP, TCP and UDP
flows.
"""

from __future__ import annotations

import ipaddress
import re

import pytest

from netarena.route import RouteApp

from .conftest import NEEDS_ROOT, first_query, on_a_host, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]

_NEIGH = re.compile(r"^(\S+) dev \S+(?: lladdr (\S+))?.* ([A-Z]+)\s*$")
_RESOLVED = {"REACHABLE", "STALE", "DELAY", "PROBE"}


def _neighbours(text: str) -> set[tuple[str, str, bool]]:
    """``(address, lladdr, resolved)`` of each ``ip neigh`` line (states age, this stays)."""
    found = set()
    for line in text.splitlines():
        if m := _NEIGH.match(line.strip()):
            found.add((m[1], m[2] or "", m[3] in _RESOLVED))
    return found


def _flows(text: str) -> set[str]:
    """Each ``conntrack -L`` entry's tuples (timeouts and flags left out)."""
    return {
        " ".join(re.findall(r"\b(?:src|dst|type|code|id|sport|dport)=\S+", line))
        for line in text.splitlines()
        if "src=" in line
    }


def test_the_agents_neighbours_and_conntrack_survive_the_judge(small_app: RouteApp) -> None:
    with small_app.open(first_query(small_app, "DI", on_a_host, start=31)) as episode:
        plan = episode.plan
        src = next(  # a host that reaches another subnet through its gateway
            s for s, d in sorted(episode.matrix.ok)
            if "r0" not in (s, d) and plan.host(s).subnet != plan.host(d).subnet
        )
        subnet = plan.subnet(plan.host(src).subnet)
        # No pair is watched during a command (``Watch``): a look while the watch's round
        # is under way may catch its entries (deleted after each round), and leaving out
        # only the pairs that name ``src`` is not enough: a host may hold an out-of-service
        # machine's address (``twins._held``), and the watch probes that machine there.
        episode.blocked = frozenset()
        episode.blocked_services = frozenset()
        taken = {plan.address(n) for n in plan.nodes} | {subnet.gateway}
        unused = next(
            str(a) for a in reversed(list(ipaddress.IPv4Network(subnet.network).hosts()))
            if str(a) not in taken
        )
        rule = "iptables -A OUTPUT -m conntrack --ctstate NEW,ESTABLISHED,RELATED -j ACCEPT"
        assert episode.step(reply(src, rule)) and episode.history[-1].exit_code == 0
        look = "ip neigh; echo ===; conntrack -L 2>/dev/null"
        probe = f"ping -c 1 -W 1 {subnet.gateway}; ping -c 1 -W 1 {unused}; {look}"
        mine = episode.step(reply(src, probe)).observation.split("===")
        assert subnet.gateway in mine[0] and unused in mine[0], mine[0]
        assert len(_flows(mine[1])) >= 2, mine[1]  # the judge measured after this
        seen = episode.step(reply(src, look)).observation.split("===")
        neighbours_kept = _neighbours(seen[0]) == _neighbours(mine[0])
        flows_kept = _flows(seen[1]) == _flows(mine[1])
        assert neighbours_kept and flows_kept, (neighbours_kept, flows_kept, mine, seen)
