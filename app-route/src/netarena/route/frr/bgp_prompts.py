"""A multi-AS network's design in words, and what monitoring reports once faults are in.

The design is what an operator's runbook says: the ASes, their routers and the points of
presence they serve, how the ASes relate (provider and customer, or peers) and the
routing policy that follows in words (which routes are preferred, what each AS accepts and
announces), OSPF inside each AS, the inter-AS links, every BGP session that must be up
(who peers with whom, at which addresses), which routers set next-hop-self, and what
each router announces. Never a configuration line, a list's entries, a limit or a TTL
setting. The symptoms come from ``bgp_model``: sessions down, stubs some hosts cannot
reach, and flows whose AS path changed, each with the routers the design sends it across.
"""

from __future__ import annotations

import random
from typing import Any

from netarena.route.frr.bgp_model import DOWN_FAULTS, best_routes, reachable, router_path
from netarena.route.frr.bgp_plan import HOLD_S, KEEPALIVE_S, BgpPlan
from netarena.route.frr.bgp_policy import LOCAL_PREF

__all__ = ["describe_bgp_design", "bgp_symptoms"]

TIMERS_IN_WORDS = "dead interval minimal (1 s) with hello multiplier 4"
"""The internal links' OSPF timers, in words."""


def _named(plan: BgpPlan, router: str) -> str:
    site = plan.sites.get(router)
    return f"{router} ({site})" if site else router


def _relations(plan: BgpPlan) -> list[str]:
    lines = []
    for a, b, kind in plan.relations:
        if kind == "peer":
            lines.append(f"- AS {a} and AS {b} are peers")
        else:
            lines.append(f"- AS {a} is the transit provider of AS {b} (its customer)")
    return lines


POLICY_IN_WORDS = (
    "Routing policy on every eBGP session: routes from a customer get local preference "
    f"{LOCAL_PREF['customer']}, from a peer {LOCAL_PREF['peer']}, from a provider "
    f"{LOCAL_PREF['provider']}; an AS accepts from a customer or a peer only that AS's own "
    "prefixes and its customers' (its cone), from a provider everything but its own "
    "prefixes; it announces to peers and providers only its own cone, to customers "
    "everything. Each border router holds this as prefix-lists and route-maps."
)


def describe_bgp_design(plan: BgpPlan) -> list[str]:
    """The routing design, one sentence per AS, relationship, link, session and stub."""
    source = plan.source.split("/")[-1] if plan.source else "a network"
    lines = [
        f"Routers {', '.join(plan.routers)} run FRR (zebra, staticd, ospfd, bgpd) in "
        f"{len(plan.ases)} autonomous systems, regions of {source}:",
        *(
            f"- AS {asn}: {', '.join(_named(plan, r) for r in rs)}"
            for asn, rs in plan.ases.items()
        ),
        "How the ASes relate:",
        *_relations(plan),
        POLICY_IN_WORDS,
        "Inside each AS, OSPF area 0 carries the loopbacks and the internal links "
        "(point-to-point, authenticated); the stubs and the inter-AS links are not in OSPF. "
        "Router ids (OSPF and BGP) are the loopbacks:",
        "- " + ", ".join(f"{r} {plan.loopbacks[r]}" for r in plan.routers),
        "Internal links:",
    ]
    for link in plan.links:
        if plan.internal(link):
            lines.append(
                f"- {link.a} {link.a_intf} {link.a_ip} <-> {link.b} {link.b_intf} {link.b_ip} "
                f"({link.network})"
            )
    lines.append("Inter-AS links:")
    for link in plan.links:
        if not plan.internal(link):
            lines.append(
                f"- {link.a} {link.a_intf} {link.a_ip} (AS {plan.asn[link.a]}) <-> {link.b} "
                f"{link.b_intf} {link.b_ip} (AS {plan.asn[link.b]}) ({link.network})"
            )
    lines.append(
        f"BGP sessions, every one up (keepalive {KEEPALIVE_S} s, hold {HOLD_S} s; the IPv4 "
        "unicast family is not enabled by default and every neighbour is activated in it; "
        "equal paths go to the lowest router id):"
    )
    for s in plan.sessions:
        if s.kind == "ibgp":
            how = "iBGP between loopbacks (update source lo)"
        elif s.kind == "ebgp":
            how = "eBGP over their link"
        else:
            how = (
                "eBGP between loopbacks (update source lo), each end reaching the other's "
                "loopback by a static route via the other's link address"
            )
        lines.append(
            f"- {s.a} {s.a_addr} (AS {plan.asn[s.a]}) <-> {s.b} {s.b_addr} "
            f"(AS {plan.asn[s.b]}): {how}"
        )
    borders = [r for r in plan.routers if plan.border(r) and len(plan.ases[plan.asn[r]]) > 1]
    lines.append(
        "Border routers set themselves as next hop towards their iBGP peers: "
        + (", ".join(borders) or "none")
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
        "ASes follows the policy, then the shortest AS path."
    )
    return lines


def _hops(path: tuple[str, ...] | None, src: str, dst: str) -> str:
    return f", router by router {src} {' '.join(path)} {dst}" if path else ""


def bgp_symptoms(
    plan: BgpPlan, faults: list[dict[str, Any]], rng: random.Random
) -> tuple[list[str], list[tuple[str, str]]]:
    """What monitoring reports: sessions down, unreachable stubs, flows on other AS paths.

    Each unreachable stub comes with the routers the design sends one complaining host's
    traffic across, and each moved flow with its designed path.

    Returns:
        The ticket's lines, and the ``(src, dst)`` host pairs they name.
    """
    lines = []
    for f in faults:
        if f["type"] in DOWN_FAULTS:
            s = plan.sessions[f["session"]]
            lines.append(
                f"- Alarm: BGP session {_named(plan, s.a)} (AS {plan.asn[s.a]}) - "
                f"{_named(plan, s.b)} (AS {plan.asn[s.b]}) is down."
            )
    works = reachable(plan, faults)
    before, after = best_routes(plan, []), best_routes(plan, faults)
    behind = {s.host: s.router for s in plan.stubs}
    for target in plan.stubs:
        cut = [
            s.host for s in plan.stubs if s is not target and (s.router, target.router) not in works
        ]
        if cut:
            src = rng.choice(cut)
            path = router_path(plan, before, behind[src], target.router)
            lines.append(
                f"- Complaint: {target.host} ({target.network}) cannot be reached from "
                f"{', '.join(cut)}; the design sends {src}'s traffic"
                f"{_hops(path, src, target.host).removeprefix(',')}."
            )
    moved: list[tuple[str, str, tuple[int, ...], tuple[int, ...]]] = []
    for a in plan.stubs:
        for b in plan.stubs:
            if a is b or (a.router, b.router) not in works:
                continue
            designed, found = before[a.router].get(b.network), after[a.router].get(b.network)
            if designed and found and designed.path != found.path:
                moved.append((a.host, b.host, designed.path, found.path))
    watch = []
    for src, dst, was, now in rng.sample(moved, min(2, len(moved))):
        old = " ".join(f"AS {x}" for x in was) or "its own AS"
        new = " ".join(f"AS {x}" for x in now) or "its own AS"
        path = router_path(plan, before, behind[src], behind[dst])
        lines.append(
            f"- Complaint: traffic {src} -> {dst} crosses {new}; the design sends it through "
            f"{old}{_hops(path, src, dst)}."
        )
        watch.append((src, dst))
    if not lines:
        lines.append("- Routing alarms: some routes differ from the design's.")
    return lines, watch
