"""Which routing a route query runs (static routes, OSPF or BGP), decided in one place.

A dynamic query's truth names its kind (``"ospf"`` or ``"bgp"``); a static query's truth
carries none. Everything that opens, audits or reads a query asks here rather than reading
labels or truth keys itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["RoutingKind", "routing_kind", "is_dynamic"]

RoutingKind = Literal["static", "ospf", "bgp"]


def routing_kind(truth: Mapping[str, Any]) -> RoutingKind:
    """``static``, ``ospf`` or ``bgp``: what a query's truth says its network runs."""
    kind = truth.get("kind")
    if kind == "ospf":
        return "ospf"
    return "bgp" if kind == "bgp" else "static"


def is_dynamic(truth: Mapping[str, Any]) -> bool:
    """Whether the query's routers run FRR (OSPF, or OSPF with BGP across ASes)."""
    return routing_kind(truth) != "static"
