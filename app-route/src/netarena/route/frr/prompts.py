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

from netarena.common.core.app import PromptStyle
from netarena.common.core.reactive import SAFETY_RULES
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.bgp_prompts import describe_bgp_design
from netarena.route.frr.faults import model_costs
from netarena.route.frr.ospf_model import DOWN
from netarena.route.frr.plan import OspfPlan
from netarena.route.prompts import COMMAND_TIMEOUT_NOTE

__all__ = ["dynamic_prompt", "describe_design", "designed_path", "ticket_symptoms"]

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
        "included; costs follow the links' lengths or capacities):",
    ]
    for link in plan.links:
        standby = {
            "passive": ", standby: passive at both ends, no adjacency",
            "off": ", standby: not in OSPF",
        }.get(link.role, "")
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
    found = plan.routes(costs)
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


def ticket_symptoms(
    plan: OspfPlan, faults: list[dict[str, object]], rng: random.Random
) -> tuple[list[str], list[tuple[str, str]]]:
    """What monitoring reports: adjacencies down, unreachable stubs, flows off their path.

    Returns:
        The ticket's lines, and the ``(src, dst)`` host pairs they name (each observation
        shows their paths).
    """
    costs, hidden = model_costs(plan, faults)
    lines = _down(plan, costs)
    before, after = plan.shortest_paths(), plan.shortest_paths(costs)
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
    moved = []
    for a in plan.stubs:
        for b in plan.stubs:
            if a is b or b.network in hidden or b.router not in after[a.router]:
                continue
            if before[a.router].get(b.router) != after[a.router].get(b.router):
                moved.append((a.host, b.host, designed_path(plan, a.router, b.router)))
    watch = []
    for src, dst, path in rng.sample(moved, min(2, len(moved))):
        shown = f" {src} {' '.join(path)} {dst}" if path else ""
        lines.append(
            f"- Complaint: traffic {src} -> {dst} takes a backup path; its primary path "
            f"is{shown}."
        )
        watch.append((src, dst))
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
        + COMMAND_TIMEOUT_NOTE.format(timeout=command_timeout_s)
        + " and output is cut at 8000 characters. After each command the network is given "
        "a moment to converge and measured again; the episode ends when routing matches "
        "the design.",
        SAFETY_RULES,
        "## Answer format\nReply with one JSON object, nothing after it:\n"
        '{"machine": "r1", "command": "vtysh -c \'show ip route\'"}\n'
        f"machine: one of {', '.join(plan.nodes)}. command: one shell command line.",
    ]
    if style.startswith("fewshot"):
        parts.append(fewshot)
    if style.endswith("cot"):
        parts.append(cot)
    return "\n\n".join(parts)
