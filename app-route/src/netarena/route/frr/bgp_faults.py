"""BGP faults: what each changes on a router, drawn from the seed (pure).

Each fault sits on one router and one session of a ``BgpPlan``: an eBGP neighbour's
remote AS, a neighbour's address, its activation in IPv4 unicast, a prefix-list or
route-map denying a stub prefix in or out, the stub's ``network`` statement, a border
router's ``next-hop-self`` towards an iBGP peer, a ``maximum-prefix`` below what the peer
sends, and ``ebgp-multihop`` on the session peered between loopbacks (replaced by a one-hop
TTL security check: without it FRR still accepts the session its peer opens). ``draw_faults``
draws distinct sessions and routers; ``fault_lines`` gives the vtysh configuration lines
that inject a fault; ``bgp_model`` says what the faults do before anything runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from netarena.route.frr.bgp_model import best_routes, sent, unmasks
from netarena.route.frr.bgp_plan import BgpPlan, Neighbor, neighbor_lines

__all__ = ["BGP_FAULTS", "BGP_LEVEL_LABELS", "draw_bgp_faults", "bgp_fault_lines"]

BGP_FAULTS = {
    "bgp-remote-as": "remote-as mismatch on one end of an eBGP session",
    "bgp-neighbor": "wrong neighbor address",
    "bgp-activate": "neighbor not activated in the IPv4 unicast address family",
    "bgp-filter": "prefix-list or route-map denying a stub prefix",
    "bgp-network": "missing network statement for a stub",
    "bgp-nexthop": "next hop unreachable (no next-hop-self on an iBGP border router)",
    "bgp-maxprefix": "maximum-prefix below what the peer sends (session shut down)",
    "bgp-multihop": "eBGP multihop/TTL: the loopback session's ebgp-multihop replaced by a "
    "one-hop TTL check",
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
_NAMES = ("EDGE", "PEER", "POLICY", "CUST", "TRANSIT", "UPLINK", "EXPORT", "IMPORT")


def _neighbor(plan: BgpPlan, router: str, peer: str) -> Neighbor:
    return next(n for n in plan.neighbors(router) if n.address == _addr(plan, router, peer))


def _addr(plan: BgpPlan, router: str, peer: str) -> str:
    """The address ``router``'s neighbour statement for ``peer`` names."""
    session = next(s for s in plan.sessions_of(router) if s.peer(router) == peer)
    return session.addr(peer)


def _session(plan: BgpPlan, a: str, b: str) -> int:
    return next(i for i, s in enumerate(plan.sessions) if {s.a, s.b} == {a, b})


def _wrong_address(rng: random.Random, plan: BgpPlan, right: str) -> str:
    used = {*plan.loopbacks.values()} | {ip for x in plan.links for ip in (x.a_ip, x.b_ip)}
    head = right.rsplit(".", 1)[0]
    while True:
        wrong = f"{head}.{rng.randint(1, 254)}"
        if wrong not in used and wrong != right:
            return wrong


def _draw(rng: random.Random, plan: BgpPlan, kind: str, used: set[Any]) -> Fault:
    unused = [i for i in range(len(plan.sessions)) if i not in used]
    pools = [  # sessions away from the other faults first
        [i for i in unused if plan.sessions[i].a not in used and plan.sessions[i].b not in used],
        [i for i in unused if plan.sessions[i].a not in used or plan.sessions[i].b not in used],
        unused,
    ]

    def first(make: Callable[[list[int]], list[Any]]) -> Any:
        return rng.choice(next(c for pool in pools if (c := make(pool))))

    if kind == "bgp-network":
        router = rng.choice([r for r in plan.routers if r not in used] or list(plan.routers))
        return {"type": kind, "router": router, "prefix": plan.stub_of(router).network}
    if kind == "bgp-filter":
        best = best_routes(plan, [])
        sender, receiver, prefix = first(
            lambda free: [
                (route.source, v, p)
                for v in plan.routers
                for p, route in sorted(best[v].items())
                if route.source is not None and _session(plan, route.source, v) in free
            ]
        )
        way = rng.choice(("in", "out"))
        holder = receiver if way == "in" else sender
        return {
            "type": kind,
            "router": holder,
            "session": _session(plan, sender, receiver),
            "sender": sender,
            "receiver": receiver,
            "prefix": prefix,
            "direction": way,
            "peer": sender if way == "in" else receiver,
            "style": rng.choice(("prefix-list", "route-map")),
            "name": f"{rng.choice(_NAMES)}-{rng.choice(('IN', 'OUT', 'V4'))}-{rng.randint(1, 99)}",
        }
    if kind == "bgp-nexthop":
        index, router, peer = first(
            lambda free: [
                (i, r, s.peer(r))
                for i in free
                for r in (plan.sessions[i].a, plan.sessions[i].b)
                if (s := plan.sessions[i]).kind == "ibgp" and plan.border(r)
            ]
        )
        return {"type": kind, "router": router, "session": index, "peer": peer}
    if kind == "bgp-maxprefix":
        index, router, peer, count = first(
            lambda free: [
                (i, r, s.peer(r), len(sent(plan, s.peer(r), r)))
                for i in free
                for r in (plan.sessions[i].a, plan.sessions[i].b)
                if len(sent(plan, (s := plan.sessions[i]).peer(r), r)) >= 2
            ]
        )
        limit = rng.randint(1, count - 1)
        return {"type": kind, "router": router, "session": index, "peer": peer, "limit": limit}
    kinds = {
        "bgp-remote-as": ("ebgp", "multihop"),
        "bgp-neighbor": ("ebgp", "ibgp"),
        "bgp-activate": ("ebgp", "ibgp", "multihop"),
        "bgp-multihop": ("multihop",),
    }[kind]
    index = first(lambda free: [i for i in free if plan.sessions[i].kind in kinds])
    session = plan.sessions[index]
    router = rng.choice([r for r in (session.a, session.b) if r not in used] or [session.a])
    peer = session.peer(router)
    fault = {"type": kind, "router": router, "session": index, "peer": peer}
    if kind == "bgp-remote-as":
        fault["asn"] = rng.choice([a for a in range(64512, 65535) if a not in plan.ases])
    if kind == "bgp-neighbor":
        fault["address"] = _wrong_address(rng, plan, _addr(plan, router, peer))
    return fault


def draw_bgp_faults(rng: random.Random, plan: BgpPlan, label: str) -> list[Fault] | None:
    """One fault per ``+``-separated part of ``label``, on distinct sessions and routers.

    The multihop fault goes first (there is one session it can sit on). Combinations
    where some repair order loses reachability (``bgp_model.unmasks``) are drawn again;
    ``None`` when this plan gives none other.
    """
    for _ in range(_DRAWS):
        faults = _draw_all(rng, plan, label)
        if not unmasks(plan, faults):
            return faults
    return None


_DRAWS = 8
"""Fault draws per plan before the plan itself is drawn again (masking is rare: ~0.5%)."""


def _draw_all(rng: random.Random, plan: BgpPlan, label: str) -> list[Fault]:
    faults: list[Fault] = []
    used: set[Any] = set()
    for kind in sorted(label.split("+"), key=lambda k: k != "bgp-multihop"):
        fault = _draw(rng, plan, kind, used)
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
    addr = _addr(plan, router, fault["peer"])
    if kind == "bgp-remote-as":
        return [*top, f"neighbor {addr} remote-as {fault['asn']}"]
    if kind == "bgp-neighbor":
        right = _neighbor(plan, router, fault["peer"])
        wrong = Neighbor(
            fault["address"], right.remote_as, right.ibgp, right.multihop, right.next_hop_self
        )
        lines, af = neighbor_lines(wrong)
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
        return [  # GTSM: the peer's packets, sent with TTL 2, are dropped
            *top,
            f"no neighbor {addr} ebgp-multihop",
            f"neighbor {addr} ttl-security hops 1",
        ]
    if kind == "bgp-filter":
        name, way, prefix = fault["name"], fault["direction"], fault["prefix"]
        if fault["style"] == "prefix-list":
            return [
                f"ip prefix-list {name} seq 5 deny {prefix}",
                f"ip prefix-list {name} seq 10 permit 0.0.0.0/0 le 32",
                *family,
                f"neighbor {addr} prefix-list {name} {way}",
            ]
        return [  # the route-map denies what the prefix-list matches
            f"ip prefix-list {name} seq 5 permit {prefix}",
            f"route-map {name} deny 10",
            f"match ip address prefix-list {name}",
            "exit",
            f"route-map {name} permit 20",
            "exit",
            *family,
            f"neighbor {addr} route-map {name} {way}",
        ]
    raise ValueError(f"unknown BGP fault {kind}")
