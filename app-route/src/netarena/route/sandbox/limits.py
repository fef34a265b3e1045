"""Size limits of the route app, from measurements (``benchmarks/route_limits.py``).

On the 2-core reference machine, loaded by other work, the judged pingmesh reported 0
false results for: one network of up to 101 machines (10x10; 65 machines, 8x8, without
even needing its confirmation rounds), 8 networks of 26 machines at once, 4 of 37, 2 of
65; but 687 false results for 8 networks of 37 machines at once (10,656 pairs probed
together). So a network may have up to ``MAX_MACHINES`` machines, a run up to
``MAX_CONCURRENT_EPISODES`` episodes, and the episodes live at once in one process share
a budget of ``PAIR_BUDGET`` probed pairs: a large network waits for room instead of
being judged on noise. Requests above the first two limits get a ``ConfigError``.

A node may hold at most ``OBJECT_BUDGET`` kernel objects of each kind: the running guard
counts them (``count_node``) while a command runs and stops the command as soon as one
kind is over budget, before a listing of the node could grow past what the judge reads in
time (two commands adding 300,000 nftables set elements made ``nft list ruleset`` take
more than ten seconds).
"""

from __future__ import annotations

import subprocess
import threading

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.namespaces import enter
from netarena.route.linux.nfnetlink import NFT_KINDS, count_conntrack, count_nftables
from netarena.route.linux.rtnetlink import OBJECT_DUMPS, count_objects, count_tc
from netarena.route.linux.xfrm_objects import count_xfrm

__all__ = [
    "MAX_MACHINES",
    "MAX_CONCURRENT_EPISODES",
    "PAIR_BUDGET",
    "OBJECT_BUDGET",
    "CONFIG_LINES",
    "LiveNetworks",
    "count_node",
    "over_budget",
    "ICMP_RATE_PER_S",
    "ICMP_BURST",
    "limit_icmp",
]

MAX_MACHINES = 65
"""Most machines (hosts plus the router) in one network (8 subnets of 8 hosts)."""
MAX_CONCURRENT_EPISODES = 8
"""Most live route networks at once in one process."""
PAIR_BUDGET = 5400
"""Most ordered pairs probed by the live networks of one process together."""
ICMP_RATE_PER_S = 1000
"""ICMP packets per second each node may send into the switch fabric (``ping -f`` sends
24,000-33,000 per second; a pingmesh round of the largest network, about 1,400 through the
router's busiest port, fits in ``ICMP_BURST``)."""
ICMP_BURST = 4000
"""ICMP packets a node may send at once before ``ICMP_RATE_PER_S`` applies."""
_LIMITED_PROTOCOLS = ("icmp", "ipv6-icmp", "gre", "ipencap", "ipv6")
"""ICMP, and the tunnels that could carry it past the limit (GRE, IP-in-IP, 6in4)."""
CONFIG_LINES = "frr configuration lines"
"""The kind of object a router's FRR configuration lines are (``OBJECT_BUDGET``)."""
OBJECT_BUDGET = {
    "links": 64,
    "addresses": 512,
    "routes": 4096,
    "rules": 512,
    "neighbours": 512,
    "nexthops": 512,
    "filter rules": 4096,
    "filter objects": 1024,
    "set elements": 4096,
    "tc objects": 1024,
    "conntrack entries": 131072,
    "xfrm objects": 256,
    "frr configuration lines": 4096,
}
"""Most kernel objects of each kind a node may hold: far above any repair's needs, far
below what holds host memory (a veth pair costs about 100 KB of kernel memory), fills a
table every namespace shares (the kernel's ARP table holds 1,024 learned entries in all,
its connection-tracking table 262,144 here) or makes the node's listing too long to read.
"Filter objects" are nftables tables, chains, sets, stateful objects and flowtables;
"xfrm objects" IPsec policies and states together;
"set elements" count the elements of every set and map, anonymous ones included;
"frr configuration lines" the lines of a router's running configuration in each of its
FRR daemons (``frr/network.py``; a prefix-list line every daemon keeps counts once in each:
60,000 of them took zebra and ospfd to 750 MB each).
Connection-tracking entries get half the host's table: the judge's own probes leave about
18,000 on the router of the largest network (8x8) after two turns, for 30 s each."""


def count_node(netns: str) -> dict[str, int]:
    """The kernel objects namespace ``netns`` holds, by kind of ``OBJECT_BUDGET``.

    Each kind is counted up to one past its budget (a node stuffed with a million routes
    is not read to the end), without listing anything.
    """
    ceilings = {kind: most + 1 for kind, most in OBJECT_BUDGET.items()}
    counts = count_objects(netns, max(ceilings[kind] for kind in OBJECT_DUMPS))
    counts.update(count_nftables(netns, {kind: ceilings[kind] for kind in NFT_KINDS}))
    counts["tc objects"] = count_tc(netns, ceilings["tc objects"])
    counts["conntrack entries"] = count_conntrack(netns)
    counts["xfrm objects"] = count_xfrm(netns, ceilings["xfrm objects"])
    return counts


def over_budget(counts: dict[str, int]) -> list[str]:
    """Kinds of object in ``counts`` above ``OBJECT_BUDGET``, described."""
    return [
        f"{counts[kind]}+ {kind} (at most {most})"
        for kind, most in OBJECT_BUDGET.items()
        if counts.get(kind, 0) > most
    ]


class LiveNetworks:
    """A gate on the live networks of this process: their count and their pairs."""

    def __init__(
        self, episodes: int = MAX_CONCURRENT_EPISODES, pairs: int = PAIR_BUDGET
    ) -> None:
        self._room = threading.Condition()
        self._episodes, self._pairs = episodes, pairs
        self._live: list[int] = []

    def acquire(self, pairs: int) -> None:
        """Wait until a network of ``pairs`` ordered pairs fits (alone, it always does)."""
        with self._room:
            self._room.wait_for(
                lambda: not self._live
                or (len(self._live) < self._episodes and sum(self._live) + pairs <= self._pairs)
            )
            self._live.append(pairs)

    def release(self, pairs: int) -> None:
        """A network of ``pairs`` pairs is gone."""
        with self._room:
            self._live.remove(pairs)
            self._room.notify_all()


def limit_icmp(fabric: str) -> None:
    """Rate-limit the ICMP each node sends, in the switch fabric (namespace ``fabric``).

    The limit is a bridge filter on the switches' ports, per port (so per node and, for
    the router, per subnet): the fabric belongs to the host's user namespace, so an agent
    administering its node cannot lift it. Packets over the limit are dropped. Tunnels
    that could carry ICMP past it (GRE, IP-in-IP) and VLAN-tagged frames (which the
    filter does not look into) are limited the same way; no repair needs them. A flood
    on a node's own loopback never reaches the fabric: the episode's CPU quota
    (``cgroups.py``) bounds it.

    Raises:
        EmulatorError: The fabric's filter could not be set.
    """
    limit = f"meta iif limit rate over {ICMP_RATE_PER_S}/second burst {ICMP_BURST} packets"
    senders = "type iface_index; size 4096; flags dynamic,timeout; timeout 60s;"
    rules = (
        "table bridge netarena_guard {\n"
        f"  set icmp_senders {{ {senders} }}\n  set tagged_senders {{ {senders} }}\n"
        "  chain forward { type filter hook forward priority -200; policy accept;\n"
        f"    meta l4proto {{ {', '.join(_LIMITED_PROTOCOLS)} }} "
        f"update @icmp_senders {{ {limit} }} counter drop\n"
        f"    ether type {{ 8021q, 8021ad }} update @tagged_senders {{ {limit} }} counter drop\n"
        "  }\n}\n"
    )
    with enter(fabric):
        proc = subprocess.run(
            ["nft", "-f", "-"], input=rules, capture_output=True, text=True, timeout=30
        )
    if proc.returncode != 0:
        raise EmulatorError(f"cannot rate-limit ICMP in the switch fabric: {proc.stderr.strip()}")
