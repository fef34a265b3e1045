"""A multi-AS BGP network as its owners designed it (pure data), and its FRR configuration.

A ``BgpPlan`` is an ``OspfPlan`` split into two or three autonomous systems of two or
three routers each: OSPF inside each AS carries the loopbacks and internal links (the
same fast, authenticated point-to-point interfaces as an OSPF plan); every router runs
iBGP to every other router of its AS between loopbacks (``update-source lo``), border
routers with ``next-hop-self``; each inter-AS link carries one eBGP session between its
addresses, except one session peered between the two routers' loopbacks (``ebgp-multihop
2``, each end reaching the other's loopback by a static route over the link). Every
router announces its stub /24 with a ``network`` statement (and is reached across ASes at
its stub address, the source of what it sends over BGP routes), in the
IPv4 unicast family only (``no bgp default ipv4-unicast``, every neighbour activated).
Timers are fast (keepalive 1 s, hold 3 s, connect retry 1 s, advertisement interval 0,
no update-group coalescing: FRR's default holds a new session's first updates back a
second; and a route-map or prefix-list edited applies after 1 s, not FRR's 5 s), so a
healthy network converges in about 1.7 s from the daemons' start.

``neighbors`` is the per-router view the reference solver also builds from the ticket's
words, and ``bgp_lines`` renders it the way FRR prints it in ``show running-config``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, ClassVar

from netarena.route.frr.design import draw_extras, draw_links, draw_stubs, unique_routes
from netarena.route.frr.plan import (
    OSPF_TIMERS,
    OspfPlan,
    Stub,
    TransitLink,
    header_lines,
    transit_lines,
)

__all__ = [
    "BgpPlan",
    "Session",
    "Neighbor",
    "draw_bgp_plan",
    "render_bgp",
    "bgp_lines",
    "neighbor_lines",
    "KEEPALIVE_S",
    "HOLD_S",
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
    """eBGP between loopbacks (then ``ebgp-multihop 2`` and ``update-source lo``)."""
    next_hop_self: bool
    """iBGP from a border router."""


@dataclass(frozen=True)
class BgpPlan(OspfPlan):
    """The intended design of a multi-AS network: OSPF inside each AS, BGP across."""

    asn: dict[str, int] = field(default_factory=dict)
    """Router → its AS number (private, 64512-65534)."""
    multihop: int = 0
    """Index of the inter-AS link whose session is peered between loopbacks."""

    daemons: ClassVar[tuple[str, ...]] = ("zebra", "staticd", "ospfd", "bgpd")

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
            if index == self.multihop:
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

    def neighbors(self, router: str) -> list[Neighbor]:
        """``router``'s neighbour statements, as its configuration holds them."""
        return [
            Neighbor(
                s.addr(s.peer(router)),
                self.asn[s.peer(router)],
                s.kind == "ibgp",
                s.kind == "multihop",
                s.kind == "ibgp" and self.border(router),
            )
            for s in self.sessions_of(router)
        ]

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
        return {**super().to_dict(), "asn": dict(self.asn), "multihop": self.multihop}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BgpPlan:
        """Inverse of ``to_dict``."""
        return cls(**cls.base_args(data), asn=dict(data["asn"]), multihop=data["multihop"])


def _sizes(rng: random.Random, num_routers: int | None) -> list[int]:
    if num_routers is None:
        num_routers = rng.randint(4, 8)
    splits = [[a, b] for a in (2, 3) for b in (2, 3)]
    splits += [[a, b, c] for a in (2, 3) for b in (2, 3) for c in (2, 3)]
    options = [s for s in splits if sum(s) == num_routers]
    if not options:
        raise ValueError(f"no split of {num_routers} routers into ASes of 2-3")
    return rng.choice(options)


def draw_bgp_plan(rng: random.Random, num_routers: int | None = None) -> BgpPlan:
    """Draw two or three ASes of 2-3 routers, their links, addresses, ASNs and sessions.

    Adjacent ASes share exactly one link (a chain, or a triangle of three ASes), so every
    prefix has one best AS path and the healthy routing is unique.
    """
    sizes = _sizes(rng, num_routers)
    total = sum(sizes)
    routers = tuple(f"r{i}" for i in range(1, total + 1))
    blocks, start = [], 0
    for size in sizes:
        blocks.append(list(range(start, start + size)))
        start += size
    pairs: list[tuple[int, int]] = []
    for block in blocks:
        pairs += [(block[0], block[1])]
        if len(block) == 3:
            pairs += [(block[1], block[2])] + ([(block[0], block[2])] if rng.random() < 0.5 else [])
    as_pairs = [(i, i + 1) for i in range(len(blocks) - 1)]
    if len(blocks) == 3 and rng.random() < 0.5:
        as_pairs.append((0, 2))
    for x, y in as_pairs:
        pairs.append((rng.choice(blocks[x]), rng.choice(blocks[y])))
    pairs = sorted({(min(a, b), max(a, b)) for a, b in pairs})
    links = draw_links(rng, routers, pairs)
    asns = rng.sample(range(64512, 65535), len(blocks))
    asn = {routers[i]: asns[n] for n, block in enumerate(blocks) for i in block}
    links = [
        replace(x, cost=rng.randrange(5, 100, 5)) if asn[x.a] == asn[x.b] else _bare(x)
        for x in links
    ]
    stubs: tuple[Stub, ...] = draw_stubs(rng, routers, lambda _: ["network"] * total)
    lo_base = rng.randint(1, 254)
    loopbacks = {r: f"10.255.{lo_base}.{i}" for i, r in enumerate(routers, 1)}
    extras = {r: draw_extras(rng, i) for i, r in enumerate(routers, 1)}
    inter = [i for i, x in enumerate(links) if asn[x.a] != asn[x.b]]
    plan = BgpPlan(
        routers, tuple(links), stubs, loopbacks, extras, asn=asn, multihop=rng.choice(inter)
    )
    while (unique := unique_routes(rng, plan)) is None:
        pass
    return unique


def _bare(link: TransitLink) -> TransitLink:
    """An inter-AS link: no OSPF cost or key."""
    return replace(link, cost=0, key="")


def neighbor_lines(n: Neighbor) -> tuple[list[str], list[str]]:
    """``(router bgp lines, address-family lines)`` of one neighbour, as FRR prints them."""
    at = f" neighbor {n.address}"
    top = [f"{at} remote-as {n.remote_as}"]
    if n.multihop:
        top.append(f"{at} ebgp-multihop 2")
    if n.ibgp or n.multihop:
        top.append(f"{at} update-source lo")
    top += [f"{at} advertisement-interval 0", f"{at} timers connect 1"]
    family = [f" {at} activate"]
    if n.next_hop_self:
        family.append(f" {at} next-hop-self")
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
