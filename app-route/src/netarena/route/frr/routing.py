"""An OSPF network's routing and its routers' running configurations, as comparable objects."""

from __future__ import annotations

from typing import Any

from netarena.route.frr.plan import OspfPlan
from netarena.route.linux.kernel_routes import KernelRoute
from netarena.route.linux.nodestate import NodeState

__all__ = [
    "Routing",
    "config_objects",
    "fib_routes",
    "judged",
    "lost_routes",
    "moved_routes",
    "rib_routes",
    "routes_complete",
]

Routing = dict[str, dict[str, str]]
"""Router → route key (``rib 10.1.2.0/24``, ``fib 10.1.2.0/24``) → normalised value.

``rib`` keys hold FRR's selected route (protocol, metric, active next hops); ``fib`` keys
the kernel route's protocol (next hops of kernel ECMP routes lag behind zebra's after a
change, so they are judged in the RIB); ``hop`` keys the kernel's next hops, for paths."""


def rib_routes(rib: dict[str, Any]) -> dict[str, str]:
    """FRR's selected routes (``show ip route json``) as ``rib`` keys."""
    out: dict[str, str] = {}
    for prefix, entries in rib.items():
        for entry in entries:
            if not entry.get("selected"):
                continue
            hops = sorted(
                f"{h.get('ip', 'direct')}@{h.get('interfaceName', 'blackhole')}"
                for h in entry.get("nexthops", [])
                if h.get("active")
            )
            out[f"rib {prefix}"] = (
                f"{entry['protocol']} metric {entry.get('metric', 0)} via {','.join(hops)}"
            )
    return out


def fib_routes(routes: list[KernelRoute]) -> dict[str, str]:
    """The kernel's main table as ``fib`` (its protocol) and ``hop`` (next hops) keys."""
    out: dict[str, str] = {}
    for route in routes:
        out[f"fib {route.dst}"] = route.protocol
        hops = sorted(f"{gateway}@{device}" for gateway, device in route.hops)
        out[f"hop {route.dst}"] = ",".join(hops)  # shown, not judged (zebra's ECMP churn)
    return out


def judged(routing: Routing) -> Routing:
    """The part of routing the judge compares (RIB routes and kernel route protocols)."""
    return {
        r: {k: v for k, v in routes.items() if not k.startswith("hop ")}
        for r, routes in routing.items()
    }


def lost_routes(
    before: Routing, after: Routing, among: Routing | None = None
) -> list[tuple[str, str]]:
    """``(router, rib key)`` of each RIB route a router held ``before`` and not ``after``.

    Args:
        before: The routing a route was held in.
        after: The routing it is looked for in.
        among: Only routes this routing holds too count (e.g. the healthy network's).
    """
    return [
        (router, key)
        for router, routes in before.items()
        for key in routes
        if key.startswith("rib ")
        and (among is None or key in among.get(router, {}))
        and key not in after.get(router, {})
    ]


def moved_routes(before: Routing, after: Routing) -> list[tuple[str, str]]:
    """``(router, rib key)`` of each RIB route ``before`` held that ``after`` lacks or moved.

    Moved: held with another protocol, metric or next hop.
    """
    return [
        (router, key)
        for router, routes in before.items()
        for key, value in routes.items()
        if key.startswith("rib ") and after.get(router, {}).get(key) != value
    ]


_SKIPPED = ("Building configuration", "Current configuration", "frr version", "end")


def config_objects(text: str) -> NodeState:
    """A running configuration as objects keyed by section and line (order-free).

    Sections: ``interface-X``, ``router-ospf``, ``router-bgp-N`` and one per route-map
    entry (``route-map/NAME/permit/10``); top-level lines are ``global``.

    Comments (``!`` lines: a daemon notes its command-line log target) are no objects.
    """
    out: NodeState = {}
    section = "global"
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("!") or line.startswith(_SKIPPED):
            continue
        if line == "exit" or line.strip() == "exit":
            section = "global"
            continue
        if not line.startswith(" "):
            words = line.split()
            if words[0] in ("interface", "router"):
                section = "-".join(words)
                out[f"frr {section}"] = ""
                continue
            if words[0] == "route-map" and len(words) == 4:  # one entry: name, action, seq
                section = "route-map/" + "/".join(words[1:])
                out[f"frr {section}"] = ""
                continue
            section = "global"  # a top-level line ends a section FRR prints without exit
        out[f"frr {section} {line.strip()}"] = ""
    return out


def routes_complete(plan: OspfPlan, routing: Routing) -> bool:
    """Whether every router routes to every stub, and to every loopback at its design cost.

    Loopbacks are checked where the plan's link-state domain reaches (a BGP plan's own AS).
    """
    stubs = {s.network for s in plan.stubs}
    if not all(all(f"fib {p}" in routes for p in stubs) for routes in routing.values()):
        return False
    dist = plan.shortest_paths()
    return all(
        routing.get(r, {})
        .get(f"rib {plan.loopbacks[o]}/32", "")
        .startswith(f"ospf metric {dist[r][o]} ")
        for r in plan.routers
        for o in plan.routers
        if o != r and o in dist[r]
    )
