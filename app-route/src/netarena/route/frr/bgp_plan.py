"""A multi-AS BGP network as its owners designed it (pure data), and its FRR configuration.

A ``BgpPlan`` is an ``OspfPlan`` whose routers belong to autonomous systems (regions of a
real network, ``bgp_design``): OSPF inside each AS carries the loopbacks and internal
links (fast, authenticated point-to-point interfaces); every router runs iBGP to every
other router of its AS between loopbacks (``update-source lo``), border routers with
``next-hop-self``; each inter-AS link carries one eBGP session, between the link's
addresses or between the two routers' loopbacks (each end reaching the other's by a static
route over the link), the latter with each end's own TTL handling (``ebgp-multihop``,
``disable-connected-check`` or a TTL security check, GTSM: ``ttl-security hops``, which
some single-hop sessions carry too; ``bgp_ttl`` says which pairs come up). Neighbouring ASes are
provider and customer or peers (``relations``), and each border router's policy follows
(``bgp_policy``): route-maps in (some behind a prefix-list in), prefix-lists out, and on
most eBGP neighbours a ``maximum-prefix`` above what they send. Every router announces its
stub /24 with a ``network`` statement (and is reached across ASes at its stub address,
the source of what it sends over BGP routes), in the IPv4 unicast family only (``no bgp
default ipv4-unicast``, every neighbour activated). Timers are fast (keepalive 1 s, hold 3 s,
connect retry 1 s, advertisement interval 0, no update-group coalescing; a route-map or
prefix-list edited applies after 1 s, not FRR's 5 s).

``neighbors`` is each router's view of its sessions, and ``bgp_lines`` renders it the way
FRR prints it in ``show running-config``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

from netarena.route.base.routing_kind import RoutingKind
from netarena.route.frr.bgp_policy import Policy, design_policy, policy_lines
from netarena.route.frr.bgp_ttl import TTL_LINES
from netarena.route.frr.plan import OSPF_TIMERS, OspfPlan, TransitLink, header_lines, transit_lines

__all__ = [
    "BgpPlan", "Session", "Neighbor", "render_bgp", "bgp_lines", "neighbor_lines",
    "KEEPALIVE_S", "HOLD_S",
]

KEEPALIVE_S = 1
"""BGP keepalive interval, seconds."""
HOLD_S = 3
"""BGP hold time, seconds."""


@dataclass(frozen=True)
class Session:
    """One BGP session of the design, between routers ``a`` and ``b``."""

    a: str
    """The first router."""
    b: str
    """The second router."""
    a_addr: str
    """``a``'s address on the session (``b``'s neighbour statement names it)."""
    b_addr: str
    """``b``'s address on the session."""
    kind: str
    """``ibgp``, ``ebgp`` (between link addresses) or ``multihop`` (eBGP between loopbacks)."""
    link: int | None
    """Index of the inter-AS link it runs over (``None`` for iBGP)."""

    def peer(self, router: str) -> str:
        """The router at the other end."""
        return self.b if router == self.a else self.a

    def addr(self, router: str) -> str:
        """``router``'s address on the session."""
        return self.a_addr if router == self.a else self.b_addr


@dataclass(frozen=True)
class Neighbor:
    """A neighbour statement as one router's configuration holds it."""

    address: str
    """The peer's address."""
    remote_as: int
    """The peer's AS."""
    ibgp: bool
    """Same AS (then ``update-source lo``)."""
    multihop: bool
    """eBGP between loopbacks (then ``update-source lo``, and ``ttl``)."""
    next_hop_self: bool
    """iBGP from a border router."""
    ttl: str = ""
    """How its TTL is handled (``TTL_LINES``): ``multihop``/``multihop255``
    (``ebgp-multihop 2``/``255``), ``gtsm1``/``gtsm2`` (``ttl-security hops 1``/``2``),
    ``connected`` (``disable-connected-check``), or nothing (one hop)."""
    limit: int = 0
    """``maximum-prefix`` on what it sends (0: none)."""
    route_map_in: str = ""
    """The route-map applied to what it sends."""
    prefix_list_in: str = ""
    """The prefix-list applied to what it sends, before its route-map."""
    prefix_list_out: str = ""
    """The prefix-list applied to what is sent to it."""


@dataclass(frozen=True)
class BgpPlan(OspfPlan):
    """The intended design of a multi-AS network: OSPF inside each AS, BGP across."""

    asn: dict[str, int] = field(default_factory=dict)
    """Router → its AS number (private, 64512-65534)."""
    relations: tuple[tuple[int, int, str], ...] = ()
    """Each pair of neighbouring ASes: ``(a, b, provider)`` (``a`` is ``b``'s provider) or
    ``(a, b, peer)``."""
    loopback_links: tuple[int, ...] = ()
    """Inter-AS links whose session is peered between the routers' loopbacks."""
    ttl: dict[str, str] = field(default_factory=dict)
    """Inter-AS link index → its session's TTL handling (``Neighbor.ttl``) at both ends;
    ``index@router`` → one end's where it differs (each AS sets its own end)."""
    limits: dict[str, int] = field(default_factory=dict)
    """``router<peer`` → the ``maximum-prefix`` ``router`` sets on what ``peer`` sends."""
    filtered_in: tuple[str, ...] = ()
    """``router<peer`` where ``router`` admits its customer's or peer's cone with a
    prefix-list bound inbound, its route-map only setting the preference (``bgp_policy``)."""

    daemons: ClassVar[tuple[str, ...]] = ("zebra", "staticd", "ospfd", "bgpd")
    routing: ClassVar[RoutingKind] = "bgp"

    @property
    def detect_s(self) -> float:
        """A BGP session broken silently stays up until its hold time runs out."""
        return float(HOLD_S)

    def igp_links(self) -> list[TransitLink]:
        """OSPF links: those inside one AS."""
        return [x for x in self.links if self.internal(x)]

    @cached_property
    def ases(self) -> dict[int, tuple[str, ...]]:
        """AS number → its routers, in the order the ASes were drawn."""
        out: dict[int, list[str]] = {}
        for router in self.routers:
            out.setdefault(self.asn[router], []).append(router)
        return {asn: tuple(rs) for asn, rs in out.items()}

    def internal(self, link: TransitLink) -> bool:
        """Whether ``link`` lies inside one AS (an OSPF link)."""
        return self.asn[link.a] == self.asn[link.b]

    def links_of(self, router: str) -> list[TransitLink]:
        """OSPF links at ``router`` (inside its AS): what link-state distances follow."""
        return [x for x in super().links_of(router) if self.internal(x)]

    def all_links_of(self, router: str) -> list[TransitLink]:
        """Every link at ``router``, inter-AS ones included."""
        return super().links_of(router)

    @cached_property
    def sessions(self) -> tuple[Session, ...]:
        """Every BGP session: the iBGP mesh of each AS, then one per inter-AS link."""
        out = [
            Session(a, b, self.loopbacks[a], self.loopbacks[b], "ibgp", None)
            for routers in self.ases.values()
            for i, a in enumerate(routers)
            for b in routers[i + 1 :]
        ]
        for index, link in enumerate(self.links):
            if self.internal(link):
                continue
            if index in self.loopback_links:
                a_addr, b_addr = self.loopbacks[link.a], self.loopbacks[link.b]
                out.append(Session(link.a, link.b, a_addr, b_addr, "multihop", index))
            else:
                out.append(Session(link.a, link.b, link.a_ip, link.b_ip, "ebgp", index))
        return tuple(out)

    def sessions_of(self, router: str) -> list[Session]:
        """The sessions ``router`` takes part in."""
        return [s for s in self.sessions if router in (s.a, s.b)]

    def border(self, router: str) -> bool:
        """Whether ``router`` has an eBGP session."""
        return any(s.kind != "ibgp" for s in self.sessions_of(router))

    def relation(self, mine: int, theirs: int) -> str:
        """What AS ``theirs`` is to AS ``mine``: ``customer``, ``peer`` or ``provider``."""
        for a, b, kind in self.relations:
            if {a, b} == {mine, theirs}:
                if kind == "peer":
                    return "peer"
                return "customer" if a == mine else "provider"
        raise KeyError(f"AS {mine} and AS {theirs} are not neighbours")

    def own_prefixes(self, asn: int) -> frozenset[str]:
        """The stubs of AS ``asn``'s routers."""
        return frozenset(self.stub_of(r).network for r in self.ases[asn])

    def cone(self, asn: int) -> frozenset[str]:
        """AS ``asn``'s own prefixes and its customers' cones."""
        found = set(self.own_prefixes(asn))
        for a, b, kind in self.relations:
            if kind == "provider" and a == asn:
                found |= self.cone(b)
        return frozenset(found)

    def policy(self, router: str) -> Policy:
        """``router``'s routing policy as designed (``bgp_policy``)."""
        return self._policies[router]

    @cached_property
    def _policies(self) -> dict[str, Policy]:
        return {r: design_policy(self, r) for r in self.routers}

    def ttl_at(self, link: int | None, router: str) -> str:
        """How ``router``'s end of the session over inter-AS ``link`` handles TTL."""
        if link is None:
            return ""
        return self.ttl.get(f"{link}@{router}", self.ttl.get(str(link), ""))

    def neighbors(self, router: str) -> list[Neighbor]:
        """``router``'s neighbour statements, as its configuration holds them."""
        policy = self.policy(router)
        out = []
        for s in self.sessions_of(router):
            peer = s.peer(router)
            address = s.addr(peer)
            out.append(
                Neighbor(
                    address,
                    self.asn[peer],
                    s.kind == "ibgp",
                    s.kind == "multihop",
                    s.kind == "ibgp" and self.border(router),
                    self.ttl_at(s.link, router),
                    self.limits.get(f"{router}<{peer}", 0),
                    policy.bind_in.get(address, ""),
                    policy.filter_in.get(address, ""),
                    policy.bind_out.get(address, ""),
                )
            )
        return out

    def networks(self, router: str) -> list[str]:
        """The prefixes ``router`` announces: its stub."""
        return [self.stub_of(router).network]

    def address(self, node: str) -> str:
        """The address other machines ping to reach ``node`` (a router's stub gateway).

        Loopbacks are OSPF's, inside one AS; the stubs are what BGP carries everywhere.
        """
        if node in self.loopbacks:
            return self.stub_of(node).gateway
        return super().address(node)

    def frr_config(self, router: str) -> str:
        """``router``'s healthy ``frr.conf``."""
        return render_bgp(self, router)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            **super().to_dict(),
            "asn": dict(self.asn),
            "relations": [list(r) for r in self.relations],
            "loopback_links": list(self.loopback_links),
            "ttl": dict(self.ttl),
            "limits": dict(self.limits),
            "filtered_in": list(self.filtered_in),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BgpPlan:
        """Inverse of ``to_dict``."""
        return cls(
            **cls.base_args(data),
            asn=dict(data["asn"]),
            relations=tuple((int(a), int(b), str(k)) for a, b, k in data["relations"]),
            loopback_links=tuple(int(i) for i in data["loopback_links"]),
            ttl={str(k): str(v) for k, v in data["ttl"].items()},
            limits={str(k): int(v) for k, v in data["limits"].items()},
            filtered_in=tuple(str(k) for k in data.get("filtered_in", ())),
        )


def neighbor_lines(n: Neighbor) -> tuple[list[str], list[str]]:
    """``(router bgp lines, address-family lines)`` of one neighbour, as FRR prints them."""
    at = f" neighbor {n.address}"
    top = [f"{at} remote-as {n.remote_as}"]
    if n.ttl:
        top.append(f"{at} {TTL_LINES[n.ttl]}")
    if n.ibgp or n.multihop:
        top.append(f"{at} update-source lo")
    top += [f"{at} advertisement-interval 0", f"{at} timers connect 1"]
    family = [f" {at} activate"]
    if n.next_hop_self:
        family.append(f" {at} next-hop-self")
    if n.prefix_list_in:
        family.append(f" {at} prefix-list {n.prefix_list_in} in")
    if n.prefix_list_out:
        family.append(f" {at} prefix-list {n.prefix_list_out} out")
    if n.route_map_in:
        family.append(f" {at} route-map {n.route_map_in} in")
    if n.limit:
        family.append(f" {at} maximum-prefix {n.limit}")
    return top, family


def bgp_lines(
    asn: int, router_id: str, neighbors: list[Neighbor], networks: list[str]
) -> list[str]:
    """A router's ``router bgp`` section, as FRR prints it."""
    top = [
        f"router bgp {asn}",
        f" bgp router-id {router_id}",
        " no bgp ebgp-requires-policy",
        " no bgp default ipv4-unicast",
        " coalesce-time 0",
        " bgp bestpath compare-routerid",
        f" timers bgp {KEEPALIVE_S} {HOLD_S}",
    ]
    family = [" address-family ipv4 unicast", *(f"  network {p}" for p in networks)]
    for n in neighbors:
        t, f = neighbor_lines(n)
        top += t
        family += f
    return [*top, " !", *family, " exit-address-family", "exit", "!"]


def render_bgp(plan: BgpPlan, router: str) -> str:
    """``router``'s healthy FRR configuration (``frr.conf``), undisclosed lines included."""
    stub = plan.stub_of(router)
    lines = [*header_lines(plan, router), "bgp route-map delay-timer 1", "!"]
    for s in plan.sessions_of(router):
        if s.kind == "multihop":
            link = plan.links[s.link or 0]
            _, via = link.end(s.peer(router))
            lines.append(f"ip route {plan.loopbacks[s.peer(router)]}/32 {via}")
    lines += ["!", "interface lo", " ip ospf area 0", "exit", "!"]
    lines += [f"interface {stub.router_intf}", f" description stub {stub.network} ({stub.host})"]
    lines += ["exit", "!"]
    for link in plan.all_links_of(router):
        if plan.internal(link):
            lines += transit_lines(link, router)
        else:
            intf, _ = link.end(router)
            lines += [f"interface {intf}", f" description to {link.peer(router)}", "exit", "!"]
    # A daemon that does not know route-maps (staticd) takes a route-map's ``exit`` for
    # the end of its configuration: policies come after the static routes.
    lines += policy_lines(plan.policy(router))
    lines += [  # what a router sends over BGP routes comes from the address others reach
        "route-map STUB-SOURCE permit 10",
        f" set src {stub.gateway}",
        "exit",
        "!",
        "ip protocol bgp route-map STUB-SOURCE",
        "!",
    ]
    # Each daemon reads the whole file and skips what it does not know, and an ``exit`` at
    # the top level ends its configuration: the two routing sections come last, OSPF's
    # without its ``exit``.
    lines += ["router ospf", f" ospf router-id {plan.loopbacks[router]}", *OSPF_TIMERS, "!"]
    lines += bgp_lines(
        plan.asn[router], plan.loopbacks[router], plan.neighbors(router), plan.networks(router)
    )
    return "\n".join(lines) + "\n"

