"""BGP faults: what each changes on a router, drawn from the seed (pure).

Each fault sits on one router (and most on one session) of a ``BgpPlan``, and every value
it sets is one the design itself carries elsewhere, or a slip of one: a neighbour's remote
AS (another AS of the design, or the peer's mistyped), a neighbour's address (another
router's address of the same kind, sorting where the right one does), its activation in
IPv4 unicast, the router's policy (an entry gone from one of its prefix-lists), the stub's
``network`` statement, a border router's ``next-hop-self`` towards an iBGP peer, an eBGP
``maximum-prefix`` (drawn much as the design's limits are, a step or two below what the
peer sends, as the design's are a step or two above), and a loopback session's TTL
handling at one end (a way the design has that the other end's TTL security check
refuses, or a TTL security check the other end's packets fail). ``draw_bgp_faults`` draws
them on distinct sessions and routers where each changes routing; ``bgp_fault_lines``
gives the vtysh configuration lines that inject one; ``bgp_model`` says what they do
before anything runs.
"""

from __future__ import annotations

import bisect
import ipaddress
import random
from collections import Counter
from dataclasses import replace
from typing import Any

from netarena.common.core.looks import as_shared, kept_in_proportion
from netarena.route.frr.bgp_design import LIMITS
from netarena.route.frr.bgp_model import best_routes, sent, unmasks
from netarena.route.frr.bgp_plan import BgpPlan, Neighbor, neighbor_lines
from netarena.route.frr.bgp_ttl import TTL_LINES, ttl_works

__all__ = ["BGP_FAULTS", "BGP_LEVEL_LABELS", "draw_bgp_faults", "bgp_fault_lines"]

BGP_FAULTS = {
    "bgp-remote-as": "remote-as mismatch on one end of an eBGP session",
    "bgp-neighbor": "wrong neighbor address",
    "bgp-activate": "neighbor not activated in the IPv4 unicast address family",
    "bgp-filter": "a policy changed: an entry gone from a prefix-list the router applies",
    "bgp-network": "missing network statement for a stub",
    "bgp-nexthop": "next hop unreachable (no next-hop-self on an iBGP border router)",
    "bgp-maxprefix": "maximum-prefix below what the peer sends (session shut down)",
    "bgp-multihop": "eBGP multihop/TTL: a loopback session's TTL handling differs at one end",
}
"""Label → what the fault is."""

BGP_LEVEL_LABELS: dict[int, tuple[str, ...]] = {
    1: tuple(BGP_FAULTS),
    2: (
        "bgp-remote-as+bgp-network",
        "bgp-activate+bgp-filter",
        "bgp-nexthop+bgp-maxprefix",
        "bgp-multihop+bgp-neighbor",
    ),
    3: ("bgp-remote-as+bgp-filter+bgp-network", "bgp-multihop+bgp-activate+bgp-nexthop"),
}
"""BGP labels per level (single faults, then combinations on other sessions and routers)."""

Fault = dict[str, Any]


def _neighbor(plan: BgpPlan, router: str, peer: str) -> Neighbor:
    return next(n for n in plan.neighbors(router) if n.address == _addr(plan, router, peer))


def _addr(plan: BgpPlan, router: str, peer: str) -> str:
    """The address ``router``'s neighbour statement for ``peer`` names."""
    session = next(s for s in plan.sessions_of(router) if s.peer(router) == peer)
    return session.addr(peer)


def _wrong_address(plan: BgpPlan, router: str, peer: str) -> list[str]:
    """Addresses of the design a mistyped neighbour may name.

    Of the same kind as the right one (a loopback, a link address), on a router
    ``router`` does not peer with, and sorting among the router's other neighbours where
    the right one does (or as near as any): bgpd lists neighbours by address, so a
    neighbour's lines stand where a design's would.
    """
    right = _addr(plan, router, peer)
    mine = {_addr(plan, router, p) for p in (s.peer(router) for s in plan.sessions_of(router))}
    if right in plan.loopbacks.values():
        pool = list(plan.loopbacks.values())
    else:
        pool = [ip for x in plan.links for ip in (x.a_ip, x.b_ip)]
    own = {plan.loopbacks[router], *(x.end(router)[1] for x in plan.all_links_of(router))}
    wrong = sorted(set(pool) - mine - own)
    others = sorted(ipaddress.IPv4Address(a) for a in mine - {right})
    place = bisect.bisect(others, ipaddress.IPv4Address(right))

    def off(address: str) -> int:
        return abs(bisect.bisect(others, ipaddress.IPv4Address(address)) - place)

    nearest = min((off(a) for a in wrong), default=0)
    return [a for a in wrong if off(a) == nearest]


def _moved(plan: BgpPlan, faults: list[Fault]) -> bool:
    """Whether ``faults`` change where some router sends some stub's traffic.

    A local preference alone changes no route the routers install.
    """

    def forwarding(faults: list[Fault]) -> dict[str, dict[str, tuple[Any, ...]]]:
        found = best_routes(plan, faults)
        return {r: {p: (x.path, x.source) for p, x in t.items()} for r, t in found.items()}

    return forwarding(faults) != forwarding([])


def _statements(plan: BgpPlan, kind: str) -> list[tuple[str, str]]:
    """``(router, peer)`` of every neighbour statement of sessions like ``kind``.

    Sessions between link addresses, or between loopbacks (iBGP and multihop eBGP).
    """
    loopback = kind != "ebgp"
    return [
        (r, s.peer(r)) for s in plan.sessions if (s.kind != "ebgp") == loopback
        for r in (s.a, s.b)
    ]


def _remote_ases(plan: BgpPlan, kind: str) -> list[int]:
    """The AS every neighbour statement of sessions like ``kind`` names, one per statement."""
    return [plan.asn[peer] for _, peer in _statements(plan, kind)]


def _mistyped(rng: random.Random, asn: int, taken: set[int]) -> int:
    """``asn`` mistyped: two neighbouring digits swapped, or one digit off by one.

    Still a private AS number, and no AS of the design. An AS no other statement names is
    what a fault takes where a design's AS is named once (``as_shared``); another AS of the
    design would be named twice (link ``remote-as`` faults' AS was held by 0.39 of their
    statements, a design's by 0.32).
    """
    digits = str(asn)
    options = {
        digits[:i] + digits[i + 1] + digits[i] + digits[i + 2:] for i in range(len(digits) - 1)
    }
    options |= {
        digits[:i] + str(int(digits[i]) + step) + digits[i + 1:]
        for i in range(len(digits)) for step in (-1, 1) if 0 <= int(digits[i]) + step <= 9
    }
    valid = sorted(n for n in map(int, options) if 64512 <= n <= 65534 and n not in taken)
    return rng.choice(valid)


def _limits(plan: BgpPlan, kind: str) -> list[int]:
    """The ``maximum-prefix`` of every neighbour statement like ``kind``'s that sets one."""
    ends = (f"{router}<{peer}" for router, peer in _statements(plan, kind))
    return [plan.limits[end] for end in ends if end in plan.limits]


def _session_faults(rng: random.Random, plan: BgpPlan, kind: str) -> list[Fault]:
    """Every fault of a session kind, one per session end, with a value from the design."""
    kinds = {
        "bgp-remote-as": ("ebgp", "multihop", "ibgp"),
        "bgp-neighbor": ("ebgp", "ibgp", "multihop"),
        "bgp-activate": ("ebgp", "ibgp", "multihop"),
        "bgp-multihop": ("multihop",),
        "bgp-nexthop": ("ibgp",),
    }[kind]
    out = []
    for index, session in enumerate(plan.sessions):
        if session.kind not in kinds:
            continue
        for router in (session.a, session.b):
            peer = session.peer(router)
            fault: Fault = {"type": kind, "router": router, "session": index, "peer": peer}
            if kind == "bgp-remote-as":  # named by as many statements as a design's AS
                right = {plan.asn[router], plan.asn[peer]}
                named = _remote_ases(plan, session.kind)
                typo = _mistyped(rng, plan.asn[peer], set(plan.asn.values()))
                asn = as_shared(rng, named, set(plan.asn.values()) - right | {typo}, tries=1)
                if asn is None:
                    continue
                fault["asn"] = asn
            elif kind == "bgp-neighbor":
                wrong = _wrong_address(plan, router, peer)
                if not wrong:
                    continue
                fault["address"] = rng.choice(wrong)
            elif kind == "bgp-multihop":  # a way the design has that fails the peer's
                theirs = plan.ttl_at(session.link, peer)
                ways = sorted(
                    {t for t in plan.ttl.values() if t in TTL_LINES and not ttl_works(t, theirs)}
                )
                if not ways:
                    continue
                fault["ttl"] = rng.choice(ways)
            elif kind == "bgp-nexthop" and not plan.border(router):
                continue
            out.append(fault)
    return out


def _limit_faults(rng: random.Random, plan: BgpPlan) -> list[Fault]:
    """``maximum-prefix`` faults, on eBGP sessions as the design's limits are.

    The limit is drawn much as the design draws one (``_drawn_limit``); every end where
    it is a step or two below what the peer sends takes it (a design's limit is a step or
    two above). Of up to ``_LIMIT_TRIES`` such limits some end can take, the first held by
    ``c - 1`` statements (``c`` that of a random design limit, as ``as_shared`` counts)
    is kept, else the first. Drawn end by end, most faults' limits were 2 (46% of them
    against 13% of the design's); 8 and 10 stay out of reach (no peer sends eight).
    """
    out: list[Fault] = []
    for kind in ("ebgp", "multihop"):
        ends = [(i, r) for i, s in enumerate(plan.sessions) if s.kind == kind for r in (s.a, s.b)]
        sends = {(i, r): len(sent(plan, plan.sessions[i].peer(r), r)) for i, r in ends}
        below = {end: [x for x in LIMITS if x < count][-2:] for end, count in sends.items()}
        held = _limits(plan, kind)
        counts = Counter(held)
        drawn: list[tuple[int, list[tuple[int, str]]]] = []
        for _ in range(_LIMIT_TRIES if ends and held else 0):
            limit = _drawn_limit(rng, [sends[e] for e in ends])
            there = [e for e in ends if limit in below[e]]
            if there:
                drawn.append((limit, there))
                if counts[limit] == counts[rng.choice(held)] - 1:
                    drawn.insert(0, drawn.pop())
                    break
        if drawn:
            limit, there = drawn[0]
            out += [
                {"type": "bgp-maxprefix", "router": r, "session": i,
                 "peer": plan.sessions[i].peer(r), "limit": limit}
                for i, r in there
            ]
    return out


def _drawn_limit(rng: random.Random, counts: list[int]) -> int:
    """One of the first two ladder steps standing above a random end's ``counts``.

    Each step stands if it is above what the peer of a random end sends, an end drawn for
    each step (``counts``: what each end's peer sends). A design's limit is one of the
    first two steps above what its own peer sends; drawn with one end for all steps, as a
    design's, faults' limits fitted the design's less in simulation (the audit's
    classifiers on the limit's value alone, 1,500 queries: link 0.64-0.71 against
    0.57-0.70 this way, loopback 0.70-0.72 against 0.64-0.73).
    """
    return rng.choice([x for x in LIMITS if x > rng.choice(counts)][:2])


_LIMIT_TRIES = 8
"""Limits drawn for one held as often as a design's."""


def _filter_faults(plan: BgpPlan) -> list[Fault]:
    """Policy faults: an entry gone from a prefix-list a router applies.

    No route-map's local preference is changed: in these designs (a tree of providers and
    customers, peers beside it) a cone has one way in, so the only preference change that
    moves a route raises the provider's 50 to the customer's 200 (over a peer's 100). Every
    such line was a 200 on a provider's one-line map, a line no design holds (AUC 0.95-0.98
    in the audit); it comes back when designs give a cone a second way in.
    """
    out: list[Fault] = []
    for router in plan.routers:
        policy = plan.policy(router)
        bound = set(policy.bind_out.values()) | set(policy.filter_in.values())
        bound |= {m for name in policy.bind_in.values() for _, _, m, _ in
                  policy.route_maps[name] if m is not None}
        for name in sorted(bound):
            for _, _, prefix in policy.prefix_lists[name]:
                out.append({"type": "bgp-filter", "router": router, "name": name,
                            "prefix": prefix})
    return out


def _candidates(rng: random.Random, plan: BgpPlan, kind: str) -> list[Fault]:
    if kind == "bgp-network":
        return [{"type": kind, "router": r, "prefix": plan.stub_of(r).network}
                for r in plan.routers]
    if kind == "bgp-filter":
        return _filter_faults(plan)
    if kind == "bgp-maxprefix":
        return _limit_faults(rng, plan)
    return _session_faults(rng, plan, kind)


def _draw(rng: random.Random, plan: BgpPlan, kind: str, used: set[Any]) -> Fault | None:
    """A fault of ``kind`` away from ``used`` routers and sessions that changes routing.

    One whose peer is no earlier fault's router or peer is tried first. Required, it put
    three session faults on six routers: a level-3 label's networks had 7.6 routers
    where the others' had 6.4, and the design lines they brought were where no other
    label's faults sit (``netarena audit route``: loopback ``remote-as`` 0.666 with them,
    0.61 without them).
    """
    options = _candidates(rng, plan, kind)
    rng.shuffle(options)
    free = sorted(
        (f for f in options if f["router"] not in used and f.get("session") not in used),
        key=lambda f: f.get("peer") in used,
    )
    for fault in free[:12]:
        if _moved(plan, [fault]):
            return fault
    return None


def draw_bgp_faults(rng: random.Random, plan: BgpPlan, label: str) -> list[Fault] | None:
    """One fault per ``+``-separated part of ``label``, on distinct sessions and routers.

    Combinations where some repair order loses reachability (``bgp_model.unmasks``) are
    drawn again; ``None`` when this plan gives none other, has no place for a fault, or is
    not kept for them (``kept_in_proportion``, by its sessions).
    """
    if not kept_in_proportion(rng, [len(plan.sessions)] * len(label.split("+")), MOST_SESSIONS):
        return None
    for _ in range(_DRAWS):
        faults = _draw_all(rng, plan, label)
        if faults is None:
            return None
        if not unmasks(plan, faults):
            return faults
    return None


MOST_SESSIONS = 12
"""BGP sessions of the largest designs (eight routers)."""

_DRAWS = 8
"""Fault draws per plan before the plan itself is drawn again (masking is rare: ~0.5%)."""


def _draw_all(rng: random.Random, plan: BgpPlan, label: str) -> list[Fault] | None:
    faults: list[Fault] = []
    used: set[Any] = set()
    for kind in sorted(label.split("+"), key=lambda k: k != "bgp-multihop"):
        fault = _draw(rng, plan, kind, used)
        if fault is None:
            return None
        used |= {fault["router"], fault.get("session"), fault.get("peer")} - {None}
        faults.append({"intf": None, "link": None, **fault})
    return faults


def bgp_fault_lines(fault: Fault, plan: BgpPlan) -> list[str]:
    """The vtysh configuration lines that inject ``fault`` on its router."""
    kind, router = fault["type"], fault["router"]
    top = [f"router bgp {plan.asn[router]}"]
    family = [*top, "address-family ipv4 unicast"]
    if kind == "bgp-network":
        return [*family, f"no network {fault['prefix']}"]
    if kind == "bgp-filter":
        entry = next(
            e for e in plan.policy(router).prefix_lists[fault["name"]] if e[2] == fault["prefix"]
        )
        return [f"no ip prefix-list {fault['name']} seq {entry[0]} {entry[1]} {entry[2]}"]
    addr = _addr(plan, router, fault["peer"])
    if kind == "bgp-remote-as":
        return [*top, f"neighbor {addr} remote-as {fault['asn']}"]
    if kind == "bgp-neighbor":
        right = _neighbor(plan, router, fault["peer"])
        lines, af = neighbor_lines(replace(right, address=fault["address"]))
        return [
            *top,
            f"no neighbor {addr}",
            *(x.strip() for x in lines),
            "address-family ipv4 unicast",
            *(x.strip() for x in af),
        ]
    if kind == "bgp-activate":
        return [*family, f"no neighbor {addr} activate"]
    if kind == "bgp-nexthop":
        return [*family, f"no neighbor {addr} next-hop-self"]
    if kind == "bgp-maxprefix":
        return [*family, f"neighbor {addr} maximum-prefix {fault['limit']}"]
    if kind == "bgp-multihop":
        was = _neighbor(plan, router, fault["peer"]).ttl
        return [
            *top,
            f"no neighbor {addr} {TTL_LINES[was]}",
            f"neighbor {addr} {TTL_LINES[fault['ttl']]}",
        ]
    raise ValueError(f"unknown BGP fault {kind}")
