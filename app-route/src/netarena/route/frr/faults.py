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
from collections.abc import Callable
from typing import Any

from netarena.common.core.looks import as_shared, kept_in_proportion
from netarena.route.frr.ospf_model import DOWN
from netarena.route.frr.plan import OspfPlan, TransitLink, dead_s, timer_lines, transit_lines

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


CHANGED_LINES = {
    "ospf-area": " ip ospf area",
    "ospf-auth": " ip ospf message-digest-key",
    "ospf-cost": " ip ospf cost",
    "ospf-hello": " ip ospf dead-interval",
    "ospf-nettype": " ip ospf network",
    "ospf-mtu": "interface ",
    "ospf-missing": "interface ",
}
"""The transit interface line each fault changes (an MTU or an unenabled interface: the
interface); a passive fault adds a line (``design.PASSIVE_ENDS_MEAN`` says why its count
needs no weight)."""

MOST_LINES = 32
"""Transit interfaces of the largest designs (eight routers)."""


def _lines(plan: OspfPlan, prefix: str) -> list[str]:
    """The design's transit interface lines that start with ``prefix``."""
    return [
        line
        for link in plan.links
        for router in (link.a, link.b)
        for line in transit_lines(link, router)
        if line.startswith(prefix)
    ]


def _key(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))


VALUE_DRAWS = 8
"""Values drawn for a fault before a design counts as having no place for it."""


VALUED = {
    "ospf-area": "area",
    "ospf-cost": "cost",
    "ospf-hello": "timers",
    "ospf-nettype": "network",
    "ospf-mtu": "mtu",
}
"""Faults that set a value the design carries, and the field it is kept in."""


def _carried(plan: OspfPlan, kind: str) -> list[Any]:
    """The value of every design line a fault of ``kind`` changes, one per line."""
    if kind in ("ospf-area", "ospf-cost"):
        return [int(line.split()[-1]) for line in _lines(plan, CHANGED_LINES[kind])]
    ends = [(x, r) for x in plan.links for r in (x.a, x.b)]
    if kind == "ospf-hello":
        return [x.timers for x, _ in ends]
    if kind == "ospf-nettype":
        return [x.network_type for x, _ in ends]
    return [x.mtu_at(r) for x, r in ends]  # ospf-mtu


def _target(rng: random.Random, kind: str, carried: list[Any]) -> dict[str, Any]:
    """The fault's value, drawn as the design carries it.

    An area, a cost, timers, a network type or an MTU is one as many other interfaces
    carry as carry a design line's (``as_shared``: an area or a cost drawn as interfaces
    carry it was carried by one more than a design's, and that share alone gave a
    classifier an AUC of 0.69 on area faults and 0.71 on cost faults); the place is then
    one whose value differs. A key is new. ``carried`` is ``_carried``'s list for the kind.
    """
    if kind not in VALUED:
        return {"key": _key(rng)} if kind == "ospf-auth" else {}
    value = as_shared(rng, carried, carried)
    return {} if value is None else {VALUED[kind]: value}


def _fits(kind: str, link: TransitLink, router: str, value: dict[str, Any]) -> bool:
    """Whether ``value`` at ``router``'s end breaks ``link`` (where its ends must agree)."""
    if kind == "ospf-area":
        return bool(link.area != value["area"])
    if kind == "ospf-hello":
        return dead_s(link.timers) != dead_s(value["timers"])
    if kind == "ospf-nettype":
        return bool(link.network_type != value["network"])
    if kind == "ospf-mtu":
        return not link.b_mtu and link.mtu != value["mtu"]
    if kind == "ospf-cost":
        return not link.b_cost and link.cost != value["cost"]
    if kind == "ospf-auth":  # a key mismatch: both ends authenticate
        return bool(link.key)
    return True


def _carries_traffic(plan: OspfPlan, link: Any) -> bool:
    """Whether losing ``link`` changes some route (it lies on a lowest-cost path)."""
    down = {(link.a, link.b): DOWN, (link.b, link.a): DOWN}
    return plan.shortest_paths() != plan.shortest_paths(down)


def _moves(plan: OspfPlan, index: int, router: str, cost: int) -> bool:
    """Whether ``router``'s end of link ``index`` at ``cost`` moves some route."""
    peer = plan.links[index].peer(router)
    return plan.shortest_paths({(router, peer): cost}) != plan.shortest_paths()


Place = tuple[int, str, dict[str, Any]]
"""Where a link fault sits and its value: ``(link index, router, value fields)``."""


def _link_places(
    rng: random.Random, plan: OspfPlan, kind: str, free: Callable[[int, str], bool]
) -> list[Place]:
    """The places a fault of ``kind`` fits, for a value the design carries.

    An adjacency fault sits on a link carrying traffic; a cost fault where its cost
    moves a route (raised where traffic leaves by the link, lowered where it comes). A
    passive or unenabled interface may be the only one of its network, as a standby link's
    kept at one end may be.
    """
    carried = _carried(plan, kind) if kind in VALUED else []  # read once for every draw
    for _ in range(VALUE_DRAWS):
        value = _target(rng, kind, carried)
        if kind in VALUED and not value:
            continue
        places: list[Place] = []
        for i, link in enumerate(plan.links):
            if link.role != "active":
                continue
            ends = [r for r in (link.a, link.b) if free(i, r) and _fits(kind, link, r, value)]
            if kind == "ospf-cost":
                places += [(i, r, value) for r in ends if _moves(plan, i, r, value["cost"])]
            elif ends and _carries_traffic(plan, link):
                extra = {"was": link.key} if kind == "ospf-auth" else {}
                places += [(i, r, {**value, **extra}) for r in ends]
        if places:
            return places
    return []


def draw_faults(rng: random.Random, plan: OspfPlan, label: str) -> list[Fault] | None:
    """One fault per ``+``-separated part of ``label``, each on its own link or router.

    Values come from the design (``_target``); None when this design has no place for
    one of the faults (a single-area design for an area fault, say), or is not kept for
    them (``kept_in_proportion``): draw another.
    """
    faults: list[Fault] = []
    used_links: set[int] = set()
    used_routers: set[str] = set()
    kinds = label.split("+")  # a stub's router first: link faults then sit elsewhere
    counts = [len(_lines(plan, CHANGED_LINES[kind])) for kind in kinds if kind in CHANGED_LINES]
    if not kept_in_proportion(rng, counts, MOST_LINES):  # a changed key beside 11 key lines
        return None  # on average when every design was kept, a design's key beside 15.5
    for kind in sorted(kinds, key=lambda k: k != "ospf-redist"):
        if kind == "ospf-redist":
            choices = [
                s.router
                for s in plan.stubs
                if s.mode == "redistribute" and s.router not in used_routers
            ]
            if not choices:
                return None
            router = rng.choice(choices)
            used_routers.add(router)
            faults.append({"type": kind, "router": router, "intf": None, "link": None})
            continue
        places = _link_places(
            rng, plan, kind, lambda i, r: i not in used_links and r not in used_routers
        )
        if not places:
            return None
        index, router, value = rng.choice(places)
        used_links.add(index)
        used_routers.add(router)
        intf, _ = plan.links[index].end(router)
        faults.append({"type": kind, "router": router, "intf": intf, "link": index, **value})
    return faults


def model_costs(plan: OspfPlan, faults: list[Fault]) -> tuple[dict[tuple[str, str], int], set[str]]:
    """What the faults do to the link-state graph: per-direction costs and unannounced stubs.

    A link whose adjacency cannot form costs "infinity" (it is out of the graph); a cost
    fault sets that direction's cost; a missing redistribution hides the router's stub.
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
            costs[(link.a, link.b)] = costs[(link.b, link.a)] = DOWN
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
        link = plan.links[fault["link"]]
        clear = [f"no {x.strip()}" for x in timer_lines(link.timers)]
        return [*at, *clear, *(x.strip() for x in timer_lines(fault["timers"]))], []
    if kind == "ospf-nettype":
        return [*at, f"ip ospf network {fault['network']}"], []
    if kind == "ospf-passive":
        return [*at, "ip ospf passive"], []
    if kind == "ospf-missing":
        return [*at, "no ip ospf area"], []
    if kind == "ospf-cost":
        return [*at, f"ip ospf cost {fault['cost']}"], []
    if kind == "ospf-auth":
        key = f"ip ospf message-digest-key 1 md5 {fault['key']}"
        if fault.get("was"):
            return [*at, "no ip ospf message-digest-key 1", key], []
        return [*at, "ip ospf authentication message-digest", key], []
    raise ValueError(f"unknown OSPF fault {kind}")
