"""A dynamic-routing network as its owners designed it: routers, links, stubs (pure data).

An ``OspfPlan`` is an operator's design of a part of a real network
(``topologies.py``): routers ``r1..rN`` at points of presence, every link a /30 with
its own OSPF parameters as operators vary them (a cost from the link's length or
capacity, an area by region, point-to-point or broadcast, MTU, hello and dead timers,
MD5 authentication or none; a standby link kept passive or out of OSPF), one host
``h<i>`` on a stub /24 behind router ``r<i>``, announced as a passive OSPF interface or
by ``redistribute connected``. It is drawn from a seed (``design.py``) and round-trips
through JSON inside ``Query.truth``. ``render`` turns it into each router's FRR
configuration; ``ospf_model.routes`` says what OSPF makes of it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from functools import cached_property
from typing import Any, ClassVar

from netarena.route.base.routing_kind import RoutingKind
from netarena.route.emulator.plan import natural_key
from netarena.route.frr.ospf_model import routes

__all__ = [
    "TransitLink",
    "Stub",
    "OspfPlan",
    "render",
    "header_lines",
    "transit_lines",
    "timer_lines",
    "dead_s",
    "OSPF_TIMERS",
    "DEAD_S",
]

DEAD_S = 1
"""OSPF dead interval of fast hellos (``dead-interval minimal``), seconds."""


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
    """MD5 key (key id 1) at both ends; empty: no authentication."""
    area: int = 0
    """OSPF area of both ends."""
    network_type: str = "point-to-point"
    """OSPF network type of both ends (``point-to-point`` or ``broadcast``)."""
    mtu: int = 1500
    """MTU of both ends' interfaces."""
    timers: str = "minimal 4"
    """Hello and dead timers of both ends: ``minimal M`` (fast hellos, ``M`` a second, dead
    after one second) or ``hello H dead D``."""
    role: str = "active"
    """``active`` (an adjacency), ``passive`` (a standby link kept passive) or ``off`` (a
    standby link not in OSPF); at both ends, or at ``standby_end``'s only."""
    b_cost: int = 0
    """``b``'s cost where it differs from ``a``'s (traffic engineering); 0: the same."""
    b_mtu: int = 0
    """``b``'s MTU where it differs from ``a``'s (then both ends ignore the MTU in OSPF's
    database exchange, ``ip ospf mtu-ignore``); 0: the same."""
    a_extra: str = "description"
    """What ``a``'s interface carries besides OSPF: its ``description`` line, and or a
    ``bandwidth`` or OSPF ``priority`` line (words joined by ``+``); ends differ."""
    b_extra: str = "description"
    """The same for ``b``."""
    standby_end: str = ""
    """For a standby link, the one router whose end is kept passive or out of OSPF while
    the other end is a plain OSPF interface (no adjacency forms either way); empty: both."""

    def end(self, router: str) -> tuple[str, str]:
        """``(interface, address)`` of ``router`` on this link."""
        return (self.a_intf, self.a_ip) if router == self.a else (self.b_intf, self.b_ip)

    def peer(self, router: str) -> str:
        """The router at the other end."""
        return self.b if router == self.a else self.a

    def cost_at(self, router: str) -> int:
        """The OSPF cost ``router``'s end sends with."""
        return self.b_cost if router == self.b and self.b_cost else self.cost

    def mtu_at(self, router: str) -> int:
        """The MTU of ``router``'s end."""
        return self.b_mtu if router == self.b and self.b_mtu else self.mtu


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
    areas: dict[str, int] = field(default_factory=dict)
    """Router → its home area (its loopback's and passive stub's; absent: 0)."""
    sites: dict[str, str] = field(default_factory=dict)
    """Router → the point of presence it stands for (``Denver``)."""
    source: str = ""
    """The real network the design is drawn from (``topozoo/Abilene``)."""

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

    def home_area(self, router: str) -> int:
        """``router``'s home area (its loopback's)."""
        return self.areas.get(router, 0)

    def igp_links(self) -> list[TransitLink]:
        """Links whose adjacency the design forms (standby links have none)."""
        return [x for x in self.links if x.role == "active"]

    def routes(
        self, costs: dict[tuple[str, str], int] | None = None
    ) -> dict[str, dict[str, tuple[int, frozenset[str]]]]:
        """Router → router → (metric, first hops) (``ospf_model.routes``)."""
        return routes(self, costs) if costs else self._designed_routes

    @cached_property
    def _designed_routes(self) -> dict[str, dict[str, tuple[int, frozenset[str]]]]:
        return routes(self, None)

    def shortest_paths(
        self, costs: dict[tuple[str, str], int] | None = None
    ) -> dict[str, dict[str, int]]:
        """Router → router → OSPF metric (``costs`` as ``routes`` takes them)."""
        found = self.routes(costs)
        return {s: {d: m for d, (m, _) in dests.items()} for s, dests in found.items()}

    @property
    def detect_s(self) -> float:
        """The longest a broken neighbour stays up: what changes after a command may take."""
        return float(max((dead_s(x.timers) for x in self.igp_links()), default=DEAD_S))

    daemons: ClassVar[tuple[str, ...]] = ("zebra", "staticd", "ospfd")
    """FRR daemons every router runs, in start order."""
    routing: ClassVar[RoutingKind] = "ospf"
    """What the network runs (``base.routing_kind``): BGP plans say ``bgp``."""

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
            "areas": dict(self.areas),
            "sites": dict(self.sites),
            "source": self.source,
        }

    @classmethod
    def base_args(cls, data: dict[str, Any]) -> dict[str, Any]:
        """``to_dict``'s OSPF fields as constructor keywords."""
        return {
            "routers": tuple(data["routers"]),
            "links": tuple(TransitLink(**x) for x in data["links"]),
            "stubs": tuple(Stub(**s) for s in data["stubs"]),
            "loopbacks": dict(data["loopbacks"]),
            "extras": {r: list(v) for r, v in data["extras"].items()},
            "areas": {r: int(a) for r, a in data.get("areas", {}).items()},
            "sites": dict(data.get("sites", {})),
            "source": str(data.get("source", "")),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OspfPlan:
        """Inverse of ``to_dict``."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in cls.base_args(data).items() if k in known})


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


def dead_s(timers: str) -> int:
    """The dead interval ``timers`` (``TransitLink.timers``) set, seconds."""
    words = timers.split()
    return DEAD_S if words[0] == "minimal" else int(words[3])


def timer_lines(timers: str) -> list[str]:
    """The interface lines that set ``timers`` (``TransitLink.timers``), as FRR prints them."""
    words = timers.split()
    if words[0] == "minimal":
        return [f" ip ospf dead-interval minimal hello-multiplier {words[1]}"]
    return [f" ip ospf dead-interval {words[3]}", f" ip ospf hello-interval {words[1]}"]


def transit_lines(link: TransitLink, router: str) -> list[str]:
    """``router``'s interface on ``link``: its area, authentication, cost, timers and type."""
    intf, _ = link.end(router)
    lines = [f"interface {intf}"]
    for extra in (link.a_extra if router == link.a else link.b_extra).split("+"):
        if extra == "description":
            lines.append(f" description to {link.peer(router)}")
        elif extra:
            lines.append(f" {extra.replace('_', ' ')}")
    kept = link.standby_end in ("", router)  # this end is as the role says
    role = link.role if kept else "active"
    if role != "off" or link.cost:  # a link out of OSPF keeps its settings, no area
        if role != "off":
            lines.append(f" ip ospf area {link.area}")
        if link.key:
            lines += [
                " ip ospf authentication message-digest",
                f" ip ospf message-digest-key 1 md5 {link.key}",
            ]
        lines.append(f" ip ospf cost {link.cost_at(router)}")
        lines += timer_lines(link.timers)
        if link.b_mtu:
            lines.append(" ip ospf mtu-ignore")
        lines.append(f" ip ospf network {link.network_type}")
        if role == "passive":
            lines.append(" ip ospf passive")
        lines.append(" ip ospf retransmit-interval 1")
    return [*lines, "exit", "!"]


OSPF_TIMERS = (
    " timers throttle lsa all 0",
    " timers throttle spf 0 50 200",
    " timers lsa min-arrival 0",
)
"""``router ospf`` lines that make SPF run at once."""


def render(plan: OspfPlan, router: str) -> str:
    """``router``'s healthy FRR configuration (``frr.conf``), undisclosed lines included."""
    stub = plan.stub_of(router)
    home = plan.home_area(router)
    lines = header_lines(plan, router)
    lines += ["interface lo", f" ip ospf area {home}", "exit", "!"]
    lines += [f"interface {stub.router_intf}", f" description stub {stub.network} ({stub.host})"]
    if stub.mode == "passive":
        lines += [f" ip ospf area {home}", " ip ospf passive"]
    lines += ["exit", "!"]
    for link in plan.links_of(router):
        lines += transit_lines(link, router)
    lines += ["router ospf", f" ospf router-id {plan.loopbacks[router]}"]
    if stub.mode == "redistribute":
        lines.append(" redistribute connected")
    lines += [*OSPF_TIMERS, "exit", "!"]
    return "\n".join(lines) + "\n"
