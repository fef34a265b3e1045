"""Drawing an OSPF design from a seed: a part of a real network, as its operators set it up.

The sites and links come from a real network (``topologies.draw_sites``). Each design
then varies what operators vary, link by link, so that no value is a default every
link shares and a fault's value is one some healthy link also carries:

* costs from the link's length (kilometres per unit drawn per design) or from its
  capacity (a tier by its load under uniform demands), nudged until every router has one
  lowest-cost path to every other (FRR's choice among equal paths to an ASBR depends on
  the order LSAs arrived);
* areas by region in nearly every design: a connected core of routers is the backbone
  (area 0), each region the core's removal leaves is an area of its own;
* per link, point-to-point or broadcast, MTU 1500 or 9000, fast hellos (``minimal``, a
  multiplier of 3 to 5) or ``hello 1 dead 3``, MD5 authentication (its own key) or none;
  every design holds both values of each;
* on some links the ends differ by design: the cost by direction (traffic engineering),
  or the MTU (both ends then ignore it in OSPF's database exchange); and ends carry
  their own lines besides OSPF's (a description on most, a bandwidth or a priority on
  some), so no link's two ends are copies of each other;
* in most designs standby links (where the rest stays connected): kept passive (as many
  passive interfaces as a Poisson count draws), or out of OSPF with their settings kept,
  at both ends or at one (no adjacency forms either way), so passive and out-of-OSPF
  transit interfaces, alone on their link or not, are part of the design as a fault's
  are.
"""

from __future__ import annotations

import math
import random
import statistics
import string
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from netarena.route.frr.plan import OspfPlan, Stub, TransitLink
from netarena.route.frr.topologies import Part, draw_sites

__all__ = [
    "draw_ospf_plan",
    "draw_links",
    "draw_stubs",
    "draw_extras",
    "unique_routes",
    "AREA_IDS",
]

AREA_IDS = (10, 20, 30, 40, 50, 100, 200)
MULTI_AREA_ODDS = 0.95
"""Chance that a design has areas by region (where its shape allows)."""
"""Non-backbone area numbers designs use."""
TIMER_CLASSES = ("minimal 3", "minimal 4", "minimal 5", "hello 1 dead 3")
"""Hello/dead timers links are drawn with."""
MTUS = (1500, 9000)
"""Link MTUs designs use."""
TYPES = ("point-to-point", "broadcast")
"""OSPF network types designs use."""


def _key(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(10))


def draw_extras(rng: random.Random, index: int) -> list[str]:
    """Undisclosed lines: what a real router carries beside the routing design."""
    lines = (
        [f"ip route 192.0.2.{rng.randrange(0, 256, 8)}/29 blackhole"] if rng.random() < 0.5 else []
    )
    if rng.random() < 0.6:
        lines.append(
            f"ip prefix-list MGMT-{index} seq 5 permit 198.51.100.{rng.randrange(0, 256, 4)}/30"
        )
    return lines


def draw_links(
    rng: random.Random, routers: tuple[str, ...], pairs: list[tuple[int, int]]
) -> list[TransitLink]:
    """Point-to-point /30s between ``routers[i]`` and ``routers[j]`` per pair (costs 0)."""
    base = rng.randint(16, 250)
    third = rng.sample(range(0, 256), len(pairs))
    ports = dict.fromkeys(routers, 0)
    links = []
    for (i, j), octet in zip(pairs, third, strict=True):
        a, b = routers[i], routers[j]
        ports[a] += 1
        ports[b] += 1
        host = 4 * rng.randrange(0, 64)
        links.append(
            TransitLink(
                a,
                b,
                f"{a}-eth{ports[a]}",
                f"{b}-eth{ports[b]}",
                f"10.{base}.{octet}.{host}/30",
                f"10.{base}.{octet}.{host + 1}",
                f"10.{base}.{octet}.{host + 2}",
                0,
                _key(rng),
            )
        )
    return links


def draw_stubs(
    rng: random.Random,
    routers: tuple[str, ...],
    modes: Callable[[random.Random], list[str]],
) -> tuple[Stub, ...]:
    """One stub /24 and host per router, announced as ``modes(rng)`` says."""
    stub_octets = rng.sample(range(1, 255), len(routers))
    stub_base = rng.choice((172, 192))
    second = rng.randint(16, 31) if stub_base == 172 else 168
    drawn = modes(rng)
    stubs = []
    for index, (router, octet, mode) in enumerate(zip(routers, stub_octets, drawn, strict=True), 1):
        gw, host = rng.sample(range(1, 255), 2)
        net = f"{stub_base}.{second}.{octet}"
        stubs.append(
            Stub(
                router,
                f"h{index}",
                f"{router}-eth0",
                f"{net}.0/24",
                f"{net}.{gw}",
                f"{net}.{host}",
                mode,
            )
        )
    return tuple(stubs)


P = TypeVar("P", bound=OspfPlan)


def unique_routes(rng: random.Random, plan: P, tries: int = 400) -> P | None:
    """``plan`` with costs nudged until every router has one lowest-cost path to every other.

    None: no such nudge found.
    """
    for attempt in range(tries):
        found = plan.routes()
        if all(len(hops) <= 1 for dests in found.values() for _, hops in dests.values()):
            return plan
        spread = 1 + attempt // 40
        links = [
            replace(x, cost=max(1, x.cost + rng.randint(-spread, spread)))
            if x.role == "active" and rng.random() < 0.5
            else x
            for x in plan.links
        ]
        plan = replace(plan, links=tuple(links))
    return None


def _costs(rng: random.Random, part: Part) -> list[int]:
    """Each span's cost: from its length, or from its capacity tier (by load)."""
    if rng.random() < 0.6:
        median = statistics.median(s.km for s in part.spans)
        unit = median / rng.choice((10, 20, 40, 80))
        return [max(1, min(65535, round(s.km / unit))) for s in part.spans]
    tiers = rng.choice(((100, 40, 10), (1000, 100, 10), (50, 20, 5)))
    loads = sorted(s.load for s in part.spans)
    cut_hi, cut_lo = loads[len(loads) * 2 // 3], loads[len(loads) // 3]
    return [
        tiers[2] if s.load >= cut_hi else tiers[1] if s.load >= cut_lo else tiers[0]
        for s in part.spans
    ]


def _connected(nodes: set[str], links: list[TransitLink]) -> bool:
    if not nodes:
        return True
    start = min(nodes)
    reach, todo = {start}, [start]
    while todo:
        node = todo.pop()
        for x in links:
            for u, v in ((x.a, x.b), (x.b, x.a)):
                if u == node and v in nodes and v not in reach:
                    reach.add(v)
                    todo.append(v)
    return reach == nodes


def _areas(
    rng: random.Random, routers: tuple[str, ...], links: list[TransitLink]
) -> tuple[dict[str, int], list[TransitLink]] | None:
    """Home areas and links with areas: a core as the backbone, each region left an area.

    None: this design stays in one area (small, or no region left beside the core).
    """
    active = [x for x in links if x.role == "active"]
    degree = {r: sum(r in (x.a, x.b) for x in active) for r in routers}
    core = {max(routers, key=lambda r: (degree[r], rng.random()))}
    while len(core) < max(2, len(routers) * 2 // 5):
        frontier = sorted({x.peer(r) for r in core for x in active if r in (x.a, x.b)} - core)
        if not frontier:
            break
        core.add(rng.choice(frontier))
    rest = [r for r in routers if r not in core]
    region: dict[str, int] = {}
    ids = iter(rng.sample(AREA_IDS, len(AREA_IDS)))
    for start in rest:
        if start in region:
            continue
        area, todo = next(ids, None), [start]
        if area is None:
            return None
        region[start] = area
        while todo:
            node = todo.pop()
            for x in active:
                if node in (x.a, x.b) and (peer := x.peer(node)) not in core and peer not in region:
                    region[peer] = area
                    todo.append(peer)
    if not region or not _connected(core, [x for x in active if x.a in core and x.b in core]):
        return None
    out = []
    for x in links:
        areas = {region[r] for r in (x.a, x.b) if r in region}
        if len(areas) > 1:  # joins two regions: only a standby link out of OSPF may
            if x.role == "active":
                return None
            out.append(replace(x, role="off", standby_end=""))  # no end in either area
            continue
        out.append(replace(x, area=areas.pop() if areas else 0))
    return {r: region.get(r, 0) for r in routers}, out


ASYMMETRIC_ODDS = 0.2
"""Chance that a link's ends differ by design: its cost by direction (traffic
engineering: one end takes another link's cost), or its MTU (both ends then ignore it in
OSPF's database exchange)."""


EXTRAS = (
    (0.8, ("description",)),
    (0.45, ("bandwidth_100000", "bandwidth_1000000", "bandwidth_10000000")),
    (0.35, ("ip_ospf_priority_10", "ip_ospf_priority_50", "ip_ospf_priority_200")),
)
"""Interface lines besides OSPF's an end may carry, each with its odds (no bearing on
routing: costs are set; a priority is never 0, so every broadcast link elects a DR)."""


def _extra(rng: random.Random) -> str:
    """One end's lines besides OSPF's, so a link's two ends are not copies of each other.

    Mostly a description, often a bandwidth, sometimes an OSPF priority: zero to three
    lines, so an end's section length and line positions say little about its peer's.
    """
    return "+".join(rng.choice(words) for odds, words in EXTRAS if rng.random() < odds)


def _asymmetric(rng: random.Random, links: list[TransitLink]) -> list[TransitLink]:
    """Links whose ends differ by design, so a value differing between ends is no tell."""
    out = []
    for x in links:
        others = sorted({y.cost for y in links if y.cost != x.cost})
        if x.role == "active" and others and rng.random() < ASYMMETRIC_ODDS:
            x = replace(x, b_cost=rng.choice(others))
        if rng.random() < ASYMMETRIC_ODDS:
            x = replace(x, b_mtu=next(m for m in MTUS if m != x.mtu))
        out.append(replace(x, a_extra=_extra(rng), b_extra=_extra(rng)))
    return out


def _both(rng: random.Random, values: tuple[Any, ...], n: int) -> list[Any]:
    """``n`` draws from ``values`` in which (when ``n`` allows) more than one value occurs."""
    while True:
        drawn = [rng.choice(values) for _ in range(n)]
        if n < 2 or len(set(drawn)) > 1:
            return drawn


def _vary(rng: random.Random, links: list[TransitLink]) -> list[TransitLink]:
    """Per link: network type, MTU, timers and authentication (both values of each)."""
    n = len(links)
    types, mtus = _both(rng, TYPES, n), _both(rng, MTUS, n)
    timers = _both(rng, ("fast", "slow"), n)
    auth = _both(rng, (True, False), n) if rng.random() < 0.7 else [True] * n
    return [
        replace(
            x,
            network_type=t,
            mtu=m,
            timers=rng.choice(TIMER_CLASSES[:3]) if speed == "fast" else TIMER_CLASSES[3],
            key=x.key if md5 else "",
        )
        for x, t, m, speed, md5 in zip(links, types, mtus, timers, auth, strict=True)
    ]


PASSIVE_ENDS_MEAN = 1.2
"""Mean number of transit interfaces a design keeps passive, a Poisson count. Seen from
one of them, a Poisson count is the count beside it plus one, which is what a passive
fault adds to a design, so its line stands beside as many passive lines as a design's
does. With one passive link or none, 37% of faults' passive lines stood beside two
others, 10% of designs' (now 6% and 19%); a fault's line is still alone more often (56%
against 38% over 600 audited instances, 44% against 29% before)."""

BOTH_ENDS_ODDS = 0.2
"""Chance that a standby link is kept passive or out of OSPF at both ends (where two ends
are wanted), not at one only (the other end a plain OSPF interface: still no adjacency),
as a fault's interface is. Links kept passive at both ends add two at once, and the count
is then less like a Poisson one (fault and design lines 0.09 apart in total variation at
one in two, 0.015 at one in five, over 1,500 designs)."""

OFF_ODDS = 0.8
"""Chance of a standby link kept out of OSPF (its settings kept)."""


def _poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw (Knuth's product of uniforms)."""
    limit, count, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        count, product = count + 1, product * rng.random()
    return count


def _standby(
    rng: random.Random, routers: tuple[str, ...], links: list[TransitLink]
) -> list[TransitLink]:
    """Links kept as standby (passive, or out of OSPF, at one end or both), when redundant.

    Passive interfaces as many as a Poisson count draws (fewer when the network has no
    spare link left), then an out-of-OSPF link at ``OFF_ODDS``.
    """
    wanted, ends = _poisson(rng, PASSIVE_ENDS_MEAN), []
    while wanted > 0:
        ends.append(2 if wanted > 1 and rng.random() < BOTH_ENDS_ODDS else 1)
        wanted -= ends[-1]
    roles = [("passive", n) for n in ends]
    if rng.random() < OFF_ODDS:
        roles.append(("off", 2 if rng.random() < BOTH_ENDS_ODDS else 1))
    for role, n in roles:
        spare = [
            i
            for i, x in enumerate(links)
            if x.role == "active"
            and _connected(
                set(routers), [y for j, y in enumerate(links) if j != i and y.role == "active"]
            )
        ]
        if not spare:
            break
        pick = rng.choice(spare)
        link = links[pick]
        end = "" if n == 2 else rng.choice((link.a, link.b))
        links[pick] = replace(link, role=role, standby_end=end)
    return links


def _modes(rng: random.Random, routers: tuple[str, ...], areas: dict[str, int]) -> list[str]:
    """How each stub is announced; redistributed only on routers of one area (no ABR)."""
    core = {r for r, a in areas.items() if a == 0} if any(areas.values()) else set()
    modes = [
        "passive" if r in core else rng.choice(("passive", "redistribute")) for r in routers
    ]
    if "redistribute" not in modes:
        modes[rng.choice([i for i, r in enumerate(routers) if r not in core])] = "redistribute"
    return modes


def draw_ospf_plan(rng: random.Random, num_routers: int, network: str | None = None) -> OspfPlan:
    """Draw a design of ``num_routers`` sites of a real network (or all of ``network``)."""
    while True:
        part = draw_sites(rng, num_routers, network)
        routers = tuple(f"r{i}" for i in range(1, len(part.sites) + 1))
        links = draw_links(rng, routers, [(s.a, s.b) for s in part.spans])
        links = [replace(x, cost=c) for x, c in zip(links, _costs(rng, part), strict=True)]
        links = _standby(rng, routers, _vary(rng, links))
        links = _asymmetric(rng, links)
        areas = dict.fromkeys(routers, 0)
        if rng.random() < MULTI_AREA_ODDS:
            drawn = _areas(rng, routers, links)
            if drawn is not None:
                areas, links = drawn
        stubs = draw_stubs(rng, routers, partial(_modes, routers=routers, areas=areas))
        lo_base = rng.randint(1, 254)
        plan = unique_routes(
            rng,
            OspfPlan(
                routers,
                tuple(links),
                stubs,
                {r: f"10.255.{lo_base}.{i}" for i, r in enumerate(routers, 1)},
                {r: draw_extras(rng, i) for i, r in enumerate(routers, 1)},
                areas={r: a for r, a in areas.items() if a},
                sites={r: s.name for r, s in zip(routers, part.sites, strict=True)},
                source=part.network,
            ),
        )
        if plan is not None:
            return plan
