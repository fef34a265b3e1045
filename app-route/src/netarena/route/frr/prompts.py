"""The fixed part of a dynamic-routing observation: an incident ticket and the design in words.

The agent learns the network as an on-call engineer knows it: the routers and the points
of presence they serve, the links and their interfaces and addresses, the OSPF areas by
region, how each stub is announced, which links are standby, and that both ends of a
link agree on its settings. Never a cost, key, timer, MTU or network type: those are in
the routers, and the rest of each router's configuration is legitimate and undisclosed.
The ticket is what a NOC sees (``ticket_symptoms``): adjacencies down, stubs some hosts
cannot reach, flows off their primary path (with that path), computed from the model of
the faults (``faults.model_costs``, ``ospf_model``).
"""

from __future__ import annotations

import random

from netarena.common.core.app import PromptStyle, style_sections
from netarena.common.core.reactive import SAFETY_RULES
from netarena.route.base.config import COMMAND_LIMITS_NOTE
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.bgp_prompts import describe_bgp_design
from netarena.route.frr.faults import model_costs
from netarena.route.frr.ospf_model import DOWN
from netarena.route.frr.plan import OspfPlan

__all__ = ["dynamic_prompt", "describe_design", "designed_path", "ticket_symptoms", "wrong_end"]

_FEWSHOT = """\
## Examples
Example 1. Look at a router's OSPF neighbours and its configuration:
{"machine": "r2", "command": "vtysh -c 'show ip ospf neighbor' -c 'show running-config'"}
Example 2. Change one interface's OSPF setting:
{"machine": "r2", "command": "vtysh -c 'conf t' -c 'interface r2-eth1' -c 'ip ospf cost 10'"}
"""

_COT = (
    "Think step by step: compare what the routers show (neighbours, interfaces, the link-state "
    "database, routes, configuration) with the design, find where they differ, then fix only "
    "that. Write your reasoning first and end your reply with the JSON object."
)


def _named(plan: OspfPlan, router: str) -> str:
    site = plan.sites.get(router)
    return f"{router} ({site})" if site else router


def _areas(plan: OspfPlan) -> list[str]:
    """The areas by region, in words."""
    if not plan.areas:
        return ["All OSPF interfaces are in the backbone, area 0."]
    by: dict[int, list[str]] = {}
    for router in plan.routers:
        by.setdefault(plan.home_area(router), []).append(router)
    lines = [
        "OSPF areas by region: the backbone (area 0) is the core routers "
        f"{', '.join(by.get(0, []))} and the links between them. Each region is an area "
        "of its own: its routers' loopbacks, stubs and links, and its links to the core:"
    ]
    for area, routers in sorted(by.items()):
        if area:
            lines.append(f"- area {area}: {', '.join(_named(plan, r) for r in routers)}")
    return lines


def describe_design(plan: OspfPlan) -> list[str]:
    """The routing design, in the words an operator knows it (no setting's value)."""
    source = plan.source.split("/")[-1] if plan.source else "the network"
    lines = [
        f"Routers {', '.join(plan.routers)} run FRR (zebra, staticd, ospfd) at points of "
        f"presence of {source}: " + ", ".join(_named(plan, r) for r in plan.routers) + ".",
        *_areas(plan),
        "Router ids are the loopbacks, each in its router's area:",
        "- " + ", ".join(f"{r} {plan.loopbacks[r]}" for r in plan.routers),
        "Links (a /30 each; both ends of a link agree on every OSPF setting, its cost "
        "included unless it differs by direction as stated; costs follow the links' lengths "
        "or capacities):",
    ]
    for link in plan.links:
        where = f" at {link.standby_end}'s end only" if link.standby_end else " at both ends"
        standby = {
            "passive": f", standby: passive{where}, no adjacency",
            "off": f", standby: not in OSPF{where}",
        }.get(link.role, "")
        if link.b_cost:
            standby += ", its cost differs by direction"
        lines.append(
            f"- {link.a} {link.a_intf} {link.a_ip} <-> {link.b} {link.b_intf} {link.b_ip} "
            f"({link.network}){standby}"
        )
    lines.append("Stubs (one host each, default route via its router):")
    for stub in plan.stubs:
        how = (
            "as an OSPF stub (a passive interface)"
            if stub.mode == "passive"
            else "as an external route (redistribute connected on its router)"
        )
        lines.append(
            f"- {stub.host} {stub.host_ip} on {stub.network} behind {stub.router} "
            f"{stub.router_intf} {stub.gateway}, announced {how}"
        )
    lines.append(
        "Every link not standby carries an adjacency; traffic follows the lowest total OSPF "
        "cost; every machine reaches every other."
    )
    return lines


def designed_path(
    plan: OspfPlan, src: str, dst: str, costs: dict[tuple[str, str], int] | None = None
) -> list[str] | None:
    """The routers a packet from router ``src`` to router ``dst`` crosses, if unique."""
    return _walk(plan, plan.routes(costs), src, dst)


def _walk(
    plan: OspfPlan, found: dict[str, dict[str, tuple[int, frozenset[str]]]], src: str, dst: str
) -> list[str] | None:
    path, node = [src], src
    while node != dst:
        route = found[node].get(dst)
        if route is None or len(route[1]) != 1 or len(path) > len(plan.routers):
            return None
        node = next(iter(route[1]))
        path.append(node)
    return path


def _down(plan: OspfPlan, costs: dict[tuple[str, str], int]) -> list[str]:
    return [
        f"- Alarm: OSPF adjacency {_named(plan, x.a)} {x.a_intf} - {_named(plan, x.b)} "
        f"{x.b_intf} is down."
        for x in plan.igp_links()
        if costs.get((x.a, x.b), 0) >= DOWN
    ]


def _moved(
    plan: OspfPlan, costs: dict[tuple[str, str], int], hidden: set[str]
) -> list[tuple[str, str]]:
    """Host pairs whose traffic takes another path (one path, not the design's).

    A metric that changed on the same path is no complaint: traffic still flows as designed.
    """
    before, after = plan.routes(), plan.routes(costs)
    out = []
    for a in plan.stubs:
        for b in plan.stubs:
            if a is b or b.network in hidden or b.router not in after[a.router]:
                continue
            now = _walk(plan, after, a.router, b.router)
            if now is not None and now != _walk(plan, before, a.router, b.router):
                out.append((a.host, b.host))
    return out


def _uses(path: list[str], u: str, v: str) -> bool:
    """Whether ``path`` crosses from ``u`` to ``v``."""
    return (u, v) in zip(path, path[1:], strict=False)


def wrong_end(
    link: tuple[str, str], costs: tuple[int, int], primaries: list[list[str]]
) -> str:
    """Which end of a link whose ends' costs differ was changed, from the ticket's paths.

    A named flow whose primary path crosses the link from one end left it: that end's
    cost was raised. No named primary path crossing it: traffic came onto a backup link,
    whose lower end was lowered. (The generator draws tickets where this holds.)
    """
    a, b = link
    out_a = any(_uses(p, a, b) for p in primaries)
    out_b = any(_uses(p, b, a) for p in primaries)
    if out_a != out_b:
        return a if out_a else b
    return a if costs[0] < costs[1] else b


def ticket_symptoms(
    plan: OspfPlan, faults: list[dict[str, object]], rng: random.Random
) -> tuple[list[str], list[tuple[str, str]]] | None:
    """What monitoring reports: adjacencies down, unreachable stubs, flows off their path.

    Every cost fault has a complaint of its own: a flow it moved, with its primary path,
    so which end of the link was changed shows in behaviour (``wrong_end``).

    Returns:
        The ticket's lines, and the ``(src, dst)`` host pairs they name (each observation
        shows their paths); None when no ticket of this design tells a cost fault's end.
    """
    costs, hidden = model_costs(plan, faults)
    lines = _down(plan, costs)
    after = plan.shortest_paths(costs)
    for stub in plan.stubs:
        cut = [
            s.host
            for s in plan.stubs
            if s is not stub
            and (stub.network in hidden or stub.router not in after[s.router])
        ]
        if cut:
            lines.append(
                f"- Complaint: {stub.host} ({stub.network}) cannot be reached from "
                f"{', '.join(cut)}."
            )
    moved = _moved(plan, costs, hidden)
    router_of = {s.host: s.router for s in plan.stubs}

    def primary(flow: tuple[str, str]) -> list[str] | None:
        return designed_path(plan, router_of[flow[0]], router_of[flow[1]])

    watch: list[tuple[str, str]] = []
    cost_faults = [f for f in faults if f["type"] == "ospf-cost"]
    for fault in cost_faults:
        alone, _ = model_costs(plan, [fault])
        own = sorted(set(moved) & set(_moved(plan, alone, hidden)) - set(watch))
        if not own:
            return None
        watch.append(rng.choice(own))
    rest = sorted(set(moved) - set(watch))
    watch += rng.sample(rest, min(max(0, 2 - len(watch)), len(rest)))
    primaries = [p for p in map(primary, watch) if p]
    for fault in cost_faults:
        link = plan.links[int(str(fault["link"]))]
        router = str(fault["router"])
        peer = link.peer(router)
        if wrong_end((router, peer), (int(str(fault["cost"])), link.cost), primaries) != router:
            return None
    for src, dst in watch:
        path = primary((src, dst))
        shown = f" {src} {' '.join(path)} {dst}" if path else ""
        lines.append(
            f"- Complaint: traffic {src} -> {dst} takes a backup path; its primary path "
            f"is{shown}."
        )
    if not lines:
        lines.append("- Routing alarms: some routes differ from the design's.")
    return lines, watch


_BGP_FEWSHOT = """\
## Examples
Example 1. Look at a router's BGP sessions and its configuration:
{"machine": "r2", "command": "vtysh -c 'show bgp summary' -c 'show running-config'"}
Example 2. Change one neighbour's setting:
{"machine": "r2", "command": "vtysh -c 'conf t' -c 'router bgp 65010' -c 'neighbor 10.0.0.1 \
description uplink'"}
"""

_BGP_COT = (
    "Think step by step: compare what the routers show (BGP sessions, what each neighbour "
    "sends and receives, the BGP table, OSPF inside the AS, routes, configuration) with the "
    "design, find where they differ, then fix only that. Write your reasoning first and end "
    "your reply with the JSON object."
)


def _flavour(plan: OspfPlan) -> tuple[str, list[str], str, str, str]:
    """``(protocol, design, show commands, few-shot, chain of thought)`` for ``plan``."""
    if isinstance(plan, BgpPlan):
        shows = (
            "`vtysh -c 'show bgp summary'`, `-c 'show bgp neighbors'`, "
            "`-c 'show ip bgp'`, `-c 'show ip bgp neighbors X advertised-routes'`, "
            "`-c 'show ip ospf neighbor'`, `-c 'show ip route'`, `-c 'show running-config'`; "
            "configure with `vtysh -c 'conf t' -c 'router bgp N' -c '...'` or a here-document"
        )
        return "multi-AS BGP", describe_bgp_design(plan), shows, _BGP_FEWSHOT, _BGP_COT
    shows = (
        "`vtysh -c 'show ip ospf neighbor'`, `-c 'show ip ospf interface'`, "
        "`-c 'show ip ospf database'`, `-c 'show ip route'`, `-c 'show running-config'`; "
        "configure with `vtysh -c 'conf t' -c 'interface X' -c '...'` or a here-document"
    )
    return "OSPF", describe_design(plan), shows, _FEWSHOT, _COT


def dynamic_prompt(
    plan: OspfPlan, symptoms: list[str], style: PromptStyle, command_timeout_s: float = 5.0
) -> str:
    """The fixed part of every observation of a dynamic-routing query."""
    protocol, design, shows, fewshot, cot = _flavour(plan)
    parts = [
        f"You are the on-call network engineer for this {protocol} network, emulated with "
        "Mininet: routers running FRR and hosts, each a network namespace.",
        "## Incident ticket\nMonitoring reports, since the last change window:\n"
        + "\n".join(symptoms),
        "## Routing design (from the runbook)\n" + "\n".join(design),
        f"## Task\nOne or more {protocol.split()[-1]} misconfigurations were introduced. "
        "Restore the design: "
        "every router's routing table as the design makes it (same prefixes, next hops and "
        "costs), every machine reaching every other for ICMP, TCP and UDP. Each router's "
        "configuration holds more than the design describes (static routes, prefix lists, "
        "descriptions...): it is legitimate, keep it; change only what is broken. Breaking a "
        "working adjacency or session or losing a route that worked counts against you, and "
        "so does any change outside what was broken.",
        "## How you work\nEach turn you run one shell command on one machine, as `bash -c` "
        "in that machine's shell. On routers, `vtysh` talks to that router's FRR: "
        + shows
        + ". ip, ping, traceroute and the usual tools work everywhere. "
        + COMMAND_LIMITS_NOTE.format(timeout=command_timeout_s)
        + ". After each command the network is given "
        "a moment to converge and measured again; the episode ends when routing matches "
        "the design.",
        SAFETY_RULES,
        "## Answer format\nReply with one JSON object, nothing after it:\n"
        '{"machine": "r1", "command": "vtysh -c \'show ip route\'"}\n'
        f"machine: one of {', '.join(plan.nodes)}. command: one shell command line.",
    ]
    return "\n\n".join(parts + style_sections(style, fewshot, cot))
