"""What OSPF makes of a design, computed before anything runs (pure): multi-area routes.

Each area's links form a graph (a link costs its sending end's cost; a link whose
adjacency is down is not in it). A router reaches another router's loopback (in that
router's home area):

* inside the area when it is attached to it (intra-area routes win whatever the cost);
* otherwise through an area border router (ABR: attached to the backbone, area 0, and to
  another area): a router of a non-backbone area takes the ABR of its area whose own
  route plus the distance to it is least; an ABR only takes the backbone's summaries,
  each from an ABR attached to the destination's area.

Attachment counts only links whose adjacency is up (and the router's home area).
Redistributed stubs sit on routers of one area only, so the route to one is the route to
its router. ``routes`` gives every router's metric and first hops to every other router.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import cache
from typing import Protocol


class _Link(Protocol):
    @property
    def a(self) -> str: ...

    @property
    def b(self) -> str: ...

    @property
    def cost(self) -> int: ...

    def cost_at(self, router: str) -> int: ...  # noqa: D102

    @property
    def area(self) -> int: ...


class OspfPlan(Protocol):
    """What the model reads of a design (``plan.OspfPlan``)."""

    @property
    def routers(self) -> tuple[str, ...]: ...  # noqa: D102

    def igp_links(self) -> Sequence[_Link]: ...  # noqa: D102

    def home_area(self, router: str) -> int: ...  # noqa: D102

__all__ = ["DOWN", "Route", "routes"]

DOWN = 1 << 20
"""A per-direction cost at or above this means the adjacency is down."""
INF = 1 << 30

Route = tuple[int, frozenset[str]]
"""A route: its metric and the first routers on its lowest-cost paths."""


def _area_graphs(
    plan: OspfPlan, costs: dict[tuple[str, str], int]
) -> dict[int, dict[str, list[tuple[str, int]]]]:
    graphs: dict[int, dict[str, list[tuple[str, int]]]] = {}
    for link in plan.igp_links():
        ab = costs.get((link.a, link.b), link.cost_at(link.a))
        ba = costs.get((link.b, link.a), link.cost_at(link.b))
        if ab >= DOWN or ba >= DOWN:
            continue
        graph = graphs.setdefault(link.area, {})
        graph.setdefault(link.a, []).append((link.b, ab))
        graph.setdefault(link.b, []).append((link.a, ba))
    return graphs


def _dijkstra(graph: dict[str, list[tuple[str, int]]], source: str) -> dict[str, int]:
    dist = {source: 0}
    heap = [(0, source)]
    while heap:
        d, node = heapq.heappop(heap)
        if d > dist.get(node, INF):
            continue
        for peer, step in graph.get(node, []):
            if d + step < dist.get(peer, INF):
                dist[peer] = d + step
                heapq.heappush(heap, (d + step, peer))
    return dist


def routes(
    plan: OspfPlan, costs: dict[tuple[str, str], int] | None = None
) -> dict[str, dict[str, Route]]:
    """Router → router → its route (metric, first hops); unreachable routers are absent.

    Args:
        plan: The design.
        costs: Per-direction costs overriding the design's (``DOWN`` and above: the
            link's adjacency is down).
    """
    costs = costs or {}
    graphs = _area_graphs(plan, costs)
    dist = {
        area: {r: _dijkstra(graph, r) for r in graph} for area, graph in graphs.items()
    }
    attached = {r: {plan.home_area(r)} for r in plan.routers}
    for area, graph in graphs.items():
        for router in graph:
            attached[router].add(area)
    abrs = {r for r, areas in attached.items() if 0 in areas and len(areas) > 1}

    @cache
    def intra(area: int, s: str, d: str) -> Route | None:
        if s == d:
            return 0, frozenset()
        total = dist.get(area, {}).get(s, {}).get(d)
        if total is None:
            return None
        graph, table = graphs[area], dist[area]
        hops = frozenset(
            peer for peer, step in graph.get(s, []) if step + table[peer].get(d, INF) == total
        )
        return total, hops

    memo: dict[tuple[str, str], Route | None] = {}

    def route(s: str, d: str) -> Route | None:
        if (s, d) in memo:
            return memo[(s, d)]
        memo[(s, d)] = None  # no loops through summaries
        home = plan.home_area(d)
        found = intra(home, s, d) if home in attached[s] else None
        if found is None:
            options: list[Route] = []
            for area in [0] if s in abrs else sorted(attached[s]):
                for abr in sorted(abrs - {s}):
                    if area not in attached[abr]:
                        continue
                    leg = intra(area, s, abr)
                    if area == 0:
                        rest = intra(home, abr, d) if home != 0 and home in attached[abr] else None
                    else:
                        rest = route(abr, d)  # a partitioned area heals over the backbone
                    if leg is not None and rest is not None:
                        options.append((leg[0] + rest[0], leg[1] or frozenset({abr})))
            if options:
                best = min(m for m, _ in options)
                found = best, frozenset().union(*(h for m, h in options if m == best))
        memo[(s, d)] = found
        return found

    out: dict[str, dict[str, Route]] = {}
    for s in plan.routers:
        out[s] = {}
        for d in plan.routers:
            memo.clear()
            if (found := route(s, d)) is not None:
                out[s][d] = found
    return out
