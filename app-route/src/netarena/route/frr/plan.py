"""A dynamic-routing network as its owners designed it: routers, links, stubs (pure data).

An ``OspfPlan`` is the design an operator's runbook states: routers ``r1..rN`` in one
OSPF area (a ring, a partial mesh or a dual-hub hub-and-spoke: ``shapes.py``), every
transit link a point-to-point /30 with its cost and MD5 key, fast hellos (dead interval
1 s), one host ``h<i>`` on a stub /24 behind router
``r<i>``, announced either as a passive OSPF interface or by ``redistribute connected``.
It is drawn from a seed (sizes, chords, addresses, costs, keys, stub modes and the
undisclosed rest of each router's configuration all vary) and round-trips through JSON
inside ``Query.truth``. ``render`` turns it into each router's FRR configuration.
"""

from __future__ import annotations

import heapq
import random
import string
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import cached_property
from typing import Any, ClassVar

from netarena.route.frr.shapes import SHAPES, draw_pairs
from netarena.route.plan import natural_key

__all__ = [
    "TransitLink",
    "Stub",
    "OspfPlan",
    "draw_ospf_plan",
    "render",
    "header_lines",
    "draw_links",
    "draw_stubs",
    "draw_extras",
    "unique_costs",
    "transit_lines",
    "HELLO_MULTIPLIER",
    "TIMERS_IN_WORDS",
    "DEAD_S",
]

DEAD_S = 1
"""OSPF dead interval on every interface, seconds (``minimal``: fast hellos)."""
HELLO_MULTIPLIER = 4
"""OSPF hellos per dead interval (sub-second hellos, so adjacencies form in a fraction of
a second)."""
TIMERS_IN_WORDS = f"dead interval minimal ({DEAD_S} s) with hello multiplier {HELLO_MULTIPLIER}"
"""How the design states the timers (the reference solver reads it back)."""


@dataclass(frozen=True)
class TransitLink:
    """A point-to-point /30 between two routers."""

    a: str
    """The first router (lower name)."""
    b: str
    """The second router."""
    a_intf: str
    """``a``'s interface (``r1-eth2``)."""
    b_intf: str
    """``b``'s interface."""
    network: str
    """The /30 (``10.41.3.0/30``)."""
    a_ip: str
    """``a``'s address (first usable)."""
    b_ip: str
    """``b``'s address."""
    cost: int
    """OSPF cost at both ends."""
    key: str
    """MD5 key (key id 1) at both ends."""

    def end(self, router: str) -> tuple[str, str]:
        """``(interface, address)`` of ``router`` on this link."""
        return (self.a_intf, self.a_ip) if router == self.a else (self.b_intf, self.b_ip)

    def peer(self, router: str) -> str:
        """The router at the other end."""
        return self.b if router == self.a else self.a


@dataclass(frozen=True)
class Stub:
    """A stub /24 behind a router with one host on it."""

    router: str
    """The router (``r2``)."""
    host: str
    """The host (``h2``)."""
    router_intf: str
    """The router's interface on it (``r2-eth0``)."""
    network: str
    """The /24."""
    gateway: str
    """The router's address on it."""
    host_ip: str
    """The host's address."""
    mode: str
    """How it is announced: ``passive`` (an OSPF interface) or ``redistribute``."""


@dataclass(frozen=True)
class OspfPlan:
    """The intended design of one OSPF network."""

    routers: tuple[str, ...]
    """Router names in natural order."""
    links: tuple[TransitLink, ...]
    """Transit links."""
    stubs: tuple[Stub, ...]
    """One stub per router, in router order."""
    loopbacks: dict[str, str]
    """Router → its loopback address (also its router id)."""
    extras: dict[str, list[str]]
    """Router → undisclosed configuration lines (the rest of its config)."""

    @cached_property
    def hosts(self) -> tuple[str, ...]:
        """Host names in natural order."""
        return tuple(sorted((s.host for s in self.stubs), key=natural_key))

    @cached_property
    def nodes(self) -> tuple[str, ...]:
        """Every machine the pingmesh probes: hosts, then routers, in natural order."""
        return (*self.hosts, *self.routers)

    def address(self, node: str) -> str:
        """The address other machines ping to reach ``node`` (a router's loopback)."""
        if node in self.loopbacks:
            return self.loopbacks[node]
        return next(s.host_ip for s in self.stubs if s.host == node)

    def stub_of(self, router: str) -> Stub:
        """The stub behind ``router``."""
        return next(s for s in self.stubs if s.router == router)

    def stub_of_host(self, host: str) -> Stub:
        """The stub ``host`` sits on."""
        return next(s for s in self.stubs if s.host == host)

    def links_of(self, router: str) -> list[TransitLink]:
        """Transit links at ``router``."""
        return [link for link in self.links if router in (link.a, link.b)]

    def link(self, a: str, b: str) -> TransitLink:
        """The link between ``a`` and ``b``."""
        return next(x for x in self.links if {x.a, x.b} == {a, b})

    def shortest_paths(
        self, costs: dict[tuple[str, str], int] | None = None
    ) -> dict[str, dict[str, int]]:
        """Router → router → distance, with ``costs`` overriding link costs (per direction)."""
        out: dict[str, dict[str, int]] = {}
        for source in self.routers:
            dist = {source: 0}
            heap = [(0, source)]
            while heap:
                d, node = heapq.heappop(heap)
                if d > dist.get(node, 1 << 30):
                    continue
                for link in self.links_of(node):
                    peer = link.peer(node)
                    step = (costs or {}).get((node, peer), link.cost)
                    if d + step < dist.get(peer, 1 << 30):
                        dist[peer] = d + step
                        heapq.heappush(heap, (d + step, peer))
            out[source] = dist
        return out

    daemons: ClassVar[tuple[str, ...]] = ("zebra", "staticd", "ospfd")
    """FRR daemons every router runs, in start order."""
    detect_s: ClassVar[float] = DEAD_S
    """The longest a broken neighbour stays up: what changes after a command may take."""

    def frr_config(self, router: str) -> str:
        """``router``'s healthy ``frr.conf``."""
        return render(self, router)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "routers": list(self.routers),
            "links": [asdict(x) for x in self.links],
            "stubs": [asdict(s) for s in self.stubs],
            "loopbacks": dict(self.loopbacks),
            "extras": {r: list(lines) for r, lines in self.extras.items()},
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OspfPlan:
        """Inverse of ``to_dict``."""
        return cls(
            tuple(data["routers"]),
            tuple(TransitLink(**x) for x in data["links"]),
            tuple(Stub(**s) for s in data["stubs"]),
            dict(data["loopbacks"]),
            {r: list(v) for r, v in data["extras"].items()},
        )


def _key(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))


def draw_extras(rng: random.Random, index: int) -> list[str]:
    """Undisclosed lines: what a real router carries beside the routing design."""
    lines = (
        [f"ip route 192.0.2.{rng.randrange(0, 256, 8)}/29 blackhole"] if rng.random() < 0.5 else []
    )
    if rng.random() < 0.6:
        lines.append(
            f"ip prefix-list MGMT-{index} seq 5 permit 198.51.100.{rng.randrange(0, 256, 4)}/30"
        )
    return lines


def unique_costs(
    rng: random.Random, routers: tuple[str, ...], links: list[TransitLink]
) -> list[TransitLink]:
    """``links`` with costs under which every pair of routers has one lowest-cost path.

    FRR's choice among equal-cost paths to an ASBR depends on the order LSAs arrived, so
    a design with ties has no single healthy routing table; costs are redrawn until none.
    """
    while True:
        drawn = [replace(link, cost=rng.randrange(5, 100, 5)) for link in links]
        plan = OspfPlan(routers, tuple(drawn), (), {}, {})
        if all(_paths(plan, src, dst) == 1 for src in routers for dst in routers):
            return drawn


def _paths(plan: OspfPlan, src: str, dst: str) -> int:
    """How many lowest-cost paths lead from ``src`` to ``dst``."""
    dist = plan.shortest_paths()[src]
    order = sorted(plan.routers, key=lambda r: dist[r])
    count = dict.fromkeys(plan.routers, 0)
    count[src] = 1
    for node in order:
        for link in plan.links_of(node):
            peer = link.peer(node)
            if dist[node] + link.cost == dist[peer]:
                count[peer] += count[node]
    return count[dst]


def draw_links(
    rng: random.Random, routers: tuple[str, ...], pairs: list[tuple[int, int]]
) -> list[TransitLink]:
    """Point-to-point /30s between ``routers[i]`` and ``routers[j]`` per pair (costs 0)."""
    base = rng.randint(16, 250)
    third = rng.sample(range(0, 256), len(pairs))
    ports = dict.fromkeys(routers, 0)
    links = []
    for (i, j), octet in zip(pairs, third, strict=True):
        a, b = routers[i], routers[j]
        ports[a] += 1
        ports[b] += 1
        host = 4 * rng.randrange(0, 64)
        links.append(
            TransitLink(
                a,
                b,
                f"{a}-eth{ports[a]}",
                f"{b}-eth{ports[b]}",
                f"10.{base}.{octet}.{host}/30",
                f"10.{base}.{octet}.{host + 1}",
                f"10.{base}.{octet}.{host + 2}",
                0,
                _key(rng),
            )
        )
    return links


def draw_stubs(
    rng: random.Random,
    routers: tuple[str, ...],
    modes: Callable[[random.Random], list[str]],
) -> tuple[Stub, ...]:
    """One stub /24 and host per router, announced as ``modes(rng)`` says."""
    stub_octets = rng.sample(range(1, 255), len(routers))
    stub_base = rng.choice((172, 192))
    second = rng.randint(16, 31) if stub_base == 172 else 168
    drawn = modes(rng)
    stubs = []
    for index, (router, octet, mode) in enumerate(zip(routers, stub_octets, drawn, strict=True), 1):
        gw, host = rng.sample(range(1, 255), 2)
        net = f"{stub_base}.{second}.{octet}"
        stubs.append(
            Stub(
                router,
                f"h{index}",
                f"{router}-eth0",
                f"{net}.0/24",
                f"{net}.{gw}",
                f"{net}.{host}",
                mode,
            )
        )
    return tuple(stubs)


def _ospf_modes(rng: random.Random, num_routers: int) -> list[str]:
    modes = [rng.choice(("passive", "redistribute")) for _ in range(num_routers)]
    if "redistribute" not in modes:
        modes[rng.randrange(num_routers)] = "redistribute"
    return modes


def draw_ospf_plan(rng: random.Random, num_routers: int) -> OspfPlan:
    """Draw ``num_routers`` in a seeded shape, with addresses, costs and keys."""
    routers = tuple(f"r{i}" for i in range(1, num_routers + 1))
    pairs = draw_pairs(rng, rng.choice(SHAPES), num_routers)
    links = unique_costs(rng, routers, draw_links(rng, routers, pairs))
    stubs = draw_stubs(rng, routers, lambda r: _ospf_modes(r, num_routers))
    lo_base = rng.randint(1, 254)
    loopbacks = {r: f"10.255.{lo_base}.{i}" for i, r in enumerate(routers, 1)}
    extras = {r: draw_extras(rng, i) for i, r in enumerate(routers, 1)}
    return OspfPlan(routers, tuple(links), stubs, loopbacks, extras)


def header_lines(plan: OspfPlan, router: str) -> list[str]:
    """The start of ``router``'s configuration: hostname and its undisclosed lines."""
    lines = [
        "frr defaults traditional",
        f"hostname {router}",
        "service integrated-vtysh-config",
        "no zebra nexthop kernel enable",  # plain kernel routes: FRR 8.4's nexthop objects
        "!",  # can vanish under a route that zebra still reports as installed
    ]
    return lines + ([*plan.extras[router], "!"] if plan.extras.get(router) else [])


def transit_lines(link: TransitLink, router: str) -> list[str]:
    """``router``'s OSPF interface on ``link``: area 0, MD5, cost, fast timers, p2p."""
    intf, _ = link.end(router)
    return [
        f"interface {intf}",
        f" description to {link.peer(router)}",
        " ip ospf area 0",
        " ip ospf authentication message-digest",
        f" ip ospf message-digest-key 1 md5 {link.key}",
        f" ip ospf cost {link.cost}",
        f" ip ospf dead-interval minimal hello-multiplier {HELLO_MULTIPLIER}",
        " ip ospf network point-to-point",
        " ip ospf retransmit-interval 1",
        "exit",
        "!",
    ]


OSPF_TIMERS = (
    " timers throttle lsa all 0",
    " timers throttle spf 0 50 200",
    " timers lsa min-arrival 0",
)
"""``router ospf`` lines that make SPF run at once."""


def render(plan: OspfPlan, router: str) -> str:
    """``router``'s healthy FRR configuration (``frr.conf``), undisclosed lines included."""
    stub = plan.stub_of(router)
    lines = header_lines(plan, router)
    lines += ["interface lo", " ip ospf area 0", "exit", "!"]
    lines += [f"interface {stub.router_intf}", f" description stub {stub.network} ({stub.host})"]
    if stub.mode == "passive":
        lines += [" ip ospf area 0", " ip ospf passive"]
    lines += ["exit", "!"]
    for link in plan.links_of(router):
        lines += transit_lines(link, router)
    lines += ["router ospf", f" ospf router-id {plan.loopbacks[router]}"]
    if stub.mode == "redistribute":
        lines.append(" redistribute connected")
    lines += [*OSPF_TIMERS, "exit", "!"]
    return "\n".join(lines) + "\n"
