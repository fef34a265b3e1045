"""A multi-AS network's design in words, and what monitoring reports once faults are in.

The design is what an operator's runbook says: the ASes and their routers, OSPF inside
each AS (loopbacks, internal links with costs and keys), the inter-AS links, every BGP
session (who peers with whom, at which addresses, iBGP or eBGP, the one peered between
loopbacks), the timers, which routers set next-hop-self, and what each router announces.
Never a configuration line. The symptoms come from ``bgp_model``: stubs some hosts cannot
reach, and flows whose AS path changed (with the routers the design sends them across).
"""

from __future__ import annotations

import random
from typing import Any

from netarena.route.frr.bgp_model import best_routes, reachable, router_path
from netarena.route.frr.bgp_plan import HOLD_S, KEEPALIVE_S, BgpPlan

__all__ = ["describe_bgp_design", "bgp_symptoms"]

TIMERS_IN_WORDS = "dead interval minimal (1 s) with hello multiplier 4"
"""The internal links' OSPF timers, in words."""


def describe_bgp_design(plan: BgpPlan) -> list[str]:
    """The routing design, one sentence per AS, link, session and stub."""
    lines = [
        f"Routers {', '.join(plan.routers)} run FRR (zebra, staticd, ospfd, bgpd) in "
        f"{len(plan.ases)} autonomous systems:",
        *(f"- AS {asn}: {', '.join(rs)}" for asn, rs in plan.ases.items()),
        "Inside each AS, OSPF area 0 carries the loopbacks and the internal links "
        f"({TIMERS_IN_WORDS}; point-to-point with MD5 authentication, key id 1; "
        "MTU 1500); the stubs and the inter-AS links are not in OSPF. Router ids (OSPF and "
        "BGP) are the loopbacks:",
        "- " + ", ".join(f"{r} {plan.loopbacks[r]}" for r in plan.routers),
        "Internal links (both ends: the same cost and key):",
    ]
    for link in plan.links:
        if plan.internal(link):
            lines.append(
                f"- {link.a} {link.a_intf} {link.a_ip} <-> {link.b} {link.b_intf} {link.b_ip} "
                f"({link.network}): cost {link.cost}, key {link.key}"
            )
    lines.append("Inter-AS links:")
    for link in plan.links:
        if not plan.internal(link):
            lines.append(
                f"- {link.a} {link.a_intf} {link.a_ip} (AS {plan.asn[link.a]}) <-> {link.b} "
                f"{link.b_intf} {link.b_ip} (AS {plan.asn[link.b]}) ({link.network})"
            )
    lines.append(
        f"BGP sessions (keepalive {KEEPALIVE_S} s, hold {HOLD_S} s, connect retry 1 s, "
        "advertisement interval 0, update-group coalesce time 0; the IPv4 unicast family is "
        "not enabled by default and "
        "every neighbour is activated in it; eBGP routes need no policy; equal paths go to "
        "the lowest router id):"
    )
    for s in plan.sessions:
        if s.kind == "ibgp":
            how = "iBGP between loopbacks (update source lo)"
        elif s.kind == "ebgp":
            how = "eBGP over their link"
        else:
            how = (
                "eBGP between loopbacks, two hops (multihop 2, update source lo); each end "
                "reaches the other's loopback by a static route via the other's link address"
            )
        lines.append(
            f"- {s.a} {s.a_addr} (AS {plan.asn[s.a]}) <-> {s.b} {s.b_addr} "
            f"(AS {plan.asn[s.b]}): {how}"
        )
    borders = [r for r in plan.routers if plan.border(r)]
    lines.append(
        "Border routers set themselves as next hop towards their iBGP peers: " + ", ".join(borders)
    )
    lines.append(
        "Stubs (one host each, default route via its router), each announced in BGP by its "
        "router (a network statement in IPv4 unicast):"
    )
    for stub in plan.stubs:
        lines.append(
            f"- {stub.host} {stub.host_ip} on {stub.network} behind {stub.router} "
            f"{stub.router_intf} {stub.gateway}"
        )
    lines.append(
        "Routers are reached at their stub addresses, and what a router sends over a BGP "
        "route leaves from that address. Every machine reaches every other; traffic between "
        "ASes takes the shortest AS path."
    )
    return lines


def bgp_symptoms(
    plan: BgpPlan, faults: list[dict[str, Any]], rng: random.Random
) -> tuple[list[str], list[tuple[str, str]]]:
    """What monitoring reports: stubs some hosts cannot reach, flows on other AS paths.

    Returns:
        The ticket's lines, and the ``(src, dst)`` host pairs they name.
    """
    works = reachable(plan, faults)
    lines = []
    for target in plan.stubs:
        cut = [
            s.host for s in plan.stubs if s is not target and (s.router, target.router) not in works
        ]
        if cut:
            lines.append(
                f"- {target.host} ({target.network}) cannot be reached from {', '.join(cut)}."
            )
    before, after = best_routes(plan, []), best_routes(plan, faults)
    moved: list[tuple[str, str, tuple[int, ...], tuple[int, ...]]] = []
    for a in plan.stubs:
        for b in plan.stubs:
            if a is b or (a.router, b.router) not in works:
                continue
            designed, found = before[a.router].get(b.network), after[a.router].get(b.network)
            if designed and found and designed.path != found.path:
                moved.append((a.host, b.host, designed.path, found.path))
    watch = []
    behind = {s.host: s.router for s in plan.stubs}
    for src, dst, was, now in rng.sample(moved, min(2, len(moved))):
        old = " ".join(f"AS {x}" for x in was) or "its own AS"
        new = " ".join(f"AS {x}" for x in now) or "its own AS"
        path = router_path(plan, before, behind[src], behind[dst]) or ()
        hops = f", router by router {src} {' '.join(path)} {dst}" if path else ""
        lines.append(
            f"- Traffic {src} -> {dst} crosses {new}; the design sends it through {old}{hops}."
        )
        watch.append((src, dst))
    if not lines:
        lines.append("- Routing alarms: some routes differ from the design's.")
    return lines, watch
