"""OSPF faults: what each changes on a router, drawn from the seed (pure).

Each fault sits on one router: an interface of a transit link (area, timers, network
type, MTU, passive, not in OSPF, cost, authentication key) or the router's OSPF process
(its ``redistribute connected`` gone). ``draw_faults`` draws distinct positions and values
from the plan; ``model_costs`` says what the fault does to the link-state graph, so the
ticket can describe its symptom before anything runs. Injection (``episode.py``)
applies the configuration lines with vtysh and the kernel changes with ``ip``, bounces
the interfaces whose adjacency the fault breaks so it goes down at once, and verifies in
the steady state that routing differs from the healthy routing.
"""

from __future__ import annotations

import random
import string
from typing import Any

from netarena.route.frr.plan import DEAD_S, OspfPlan

__all__ = [
    "OSPF_FAULTS",
    "ADJACENCY_FAULTS",
    "OSPF_LEVEL_LABELS",
    "draw_faults",
    "model_costs",
    "fault_lines",
]

OSPF_FAULTS = {
    "ospf-area": "area mismatch on one end of a link",
    "ospf-hello": "hello/dead interval mismatch",
    "ospf-nettype": "network-type mismatch",
    "ospf-mtu": "MTU mismatch (adjacency stuck in ExStart/Exchange)",
    "ospf-passive": "passive interface on a transit link",
    "ospf-missing": "interface not enabled in OSPF",
    "ospf-cost": "cost change that moves traffic off its designed path",
    "ospf-auth": "authentication key mismatch",
    "ospf-redist": "missing redistribution of a stub",
}
"""Label → what the fault is."""

_SINGLES = tuple(OSPF_FAULTS)
OSPF_LEVEL_LABELS: dict[int, tuple[str, ...]] = {
    1: _SINGLES,
    2: (
        "ospf-area+ospf-cost",
        "ospf-auth+ospf-redist",
        "ospf-hello+ospf-passive",
        "ospf-mtu+ospf-missing",
        "ospf-nettype+ospf-cost",
    ),
    3: ("ospf-area+ospf-auth+ospf-redist", "ospf-hello+ospf-mtu+ospf-cost"),
}
"""Dynamic-routing labels per level (single faults, then combinations on other links)."""

Fault = dict[str, Any]
ADJACENCY_FAULTS = frozenset(OSPF_FAULTS) - {"ospf-redist", "ospf-cost"}
"""Faults that keep an adjacency from forming: injection bounces their interface, so the
adjacency up now goes down at once instead of at its dead interval."""


def _value(rng: random.Random, kind: str, plan: OspfPlan, link: Any) -> dict[str, Any]:
    if kind == "ospf-area":
        return {"area": f"0.0.0.{rng.randint(1, 254)}"}
    if kind == "ospf-hello":
        # Leaves fast hellos. The hello interval stays short: ospfd keeps a pending hello
        # on its old schedule, so a repaired interface would otherwise stay silent up to
        # the default 10 s.
        return {"dead": rng.randint(DEAD_S + 2, 40), "hello": rng.randint(1, 2)}
    if kind == "ospf-nettype":
        return {"network": "broadcast"}
    if kind == "ospf-mtu":
        return {"mtu": rng.randrange(1280, 1496, 4)}
    if kind == "ospf-cost":
        return {"cost": rng.randint(200, 900)}
    if kind == "ospf-auth":
        return {"key": "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))}
    return {}


def _carries_traffic(plan: OspfPlan, link: Any) -> bool:
    """Whether a cost rise on ``link`` changes some route (it lies on a shortest path)."""
    before = plan.shortest_paths()
    up = {(link.a, link.b): 1000, (link.b, link.a): 1000}
    after = plan.shortest_paths(up)
    return before != after


def draw_faults(rng: random.Random, plan: OspfPlan, label: str) -> list[Fault]:
    """One fault per ``+``-separated part of ``label``, each on its own link or router."""
    faults: list[Fault] = []
    used_links: set[int] = set()
    used_routers: set[str] = set()
    kinds = label.split("+")  # a stub's router first: link faults then sit elsewhere
    for kind in sorted(kinds, key=lambda k: k != "ospf-redist"):
        if kind == "ospf-redist":
            choices = [
                s.router
                for s in plan.stubs
                if s.mode == "redistribute" and s.router not in used_routers
            ]
            router = rng.choice(choices)
            used_routers.add(router)
            faults.append({"type": kind, "router": router, "intf": None, "link": None})
            continue
        indexes = [i for i in range(len(plan.links)) if i not in used_links]
        indexes = [i for i in indexes if _carries_traffic(plan, plan.links[i])] or indexes
        index = rng.choice(indexes)
        used_links.add(index)
        link = plan.links[index]
        ends = [r for r in (link.a, link.b) if r not in used_routers] or [link.a, link.b]
        if kind == "ospf-cost":  # the end whose outgoing traffic the rise moves
            base = plan.shortest_paths()
            ends = [
                r for r in ends if plan.shortest_paths({(r, link.peer(r)): 1000}) != base
            ] or ends
        router = rng.choice(ends)
        used_routers.add(router)
        intf, _ = link.end(router)
        faults.append(
            {
                "type": kind,
                "router": router,
                "intf": intf,
                "link": index,
                **_value(rng, kind, plan, link),
            }
        )
    return faults


def model_costs(plan: OspfPlan, faults: list[Fault]) -> tuple[dict[tuple[str, str], int], set[str]]:
    """What the faults do to the link-state graph: per-direction costs and unannounced stubs.

    A link whose adjacency cannot form costs "infinity" (it is out of the graph); a cost
    fault raises that direction's cost; a missing redistribution hides the router's stub.
    """
    costs: dict[tuple[str, str], int] = {}
    hidden: set[str] = set()
    for fault in faults:
        if fault["type"] == "ospf-redist":
            hidden.add(plan.stub_of(fault["router"]).network)
            continue
        link = plan.links[fault["link"]]
        router = fault["router"]
        if fault["type"] == "ospf-cost":
            costs[(router, link.peer(router))] = fault["cost"]
        else:
            costs[(link.a, link.b)] = costs[(link.b, link.a)] = 1 << 20
    return costs, hidden


def fault_lines(fault: Fault, plan: OspfPlan) -> tuple[list[str], list[str]]:
    """``(vtysh configuration lines, ip commands)`` that inject ``fault`` on its router."""
    kind, intf = fault["type"], fault["intf"]
    if kind == "ospf-redist":
        return ["router ospf", "no redistribute connected"], []
    if kind == "ospf-mtu":
        return [], [f"link set dev {intf} mtu {fault['mtu']}"]
    at = [f"interface {intf}"]
    if kind == "ospf-area":
        return [*at, "no ip ospf area", f"ip ospf area {fault['area']}"], []
    if kind == "ospf-hello":
        return [
            *at,
            f"ip ospf dead-interval {fault['dead']}",
            f"ip ospf hello-interval {fault['hello']}",
        ], []
    if kind == "ospf-nettype":
        return [*at, f"ip ospf network {fault['network']}"], []
    if kind == "ospf-passive":
        return [*at, "ip ospf passive"], []
    if kind == "ospf-missing":
        return [*at, "no ip ospf area"], []
    if kind == "ospf-cost":
        return [*at, f"ip ospf cost {fault['cost']}"], []
    if kind == "ospf-auth":
        return [
            *at,
            "no ip ospf message-digest-key 1",
            f"ip ospf message-digest-key 1 md5 {fault['key']}",
        ], []
    raise ValueError(f"unknown OSPF fault {kind}")
