"""Drawing a multi-AS BGP design from a seed: regions of a real network as autonomous systems.

The sites and links come from a real network (``topologies.draw_sites``); neighbouring
sites are grouped into two to four ASes of one to three routers each (a connected region
each), and the AS with the most neighbours is the transit provider at the top: the
others hang below it as customers, tree-wise, and two ASes that are neighbours otherwise
peer. Between two neighbouring ASes one of their links carries an eBGP session (its
addresses or the two routers' loopbacks); the others are left out of the design. Inside an
AS the links keep their lengths as OSPF costs. Sessions vary as operators vary them:
each AS sets its own end of a loopback session (``ebgp-multihop 2`` against the other's
``disable-connected-check``, or a TTL security check against ``ebgp-multihop 255``), some
single-hop sessions check TTL security (one hop or two, sometimes one at each end),
most eBGP neighbours get a ``maximum-prefix`` from a ladder of limits a step or two
above what they send, and about half the customers' and peers' cones are filtered by a
prefix-list bound inbound rather than matched in the route-map (``FILTER_IN_ODDS``).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import replace

from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.design import draw_extras, draw_links, draw_stubs, unique_routes
from netarena.route.frr.plan import TransitLink
from netarena.route.frr.topologies import Part, draw_sites

__all__ = ["draw_bgp_plan", "LIMITS", "LOOPBACK_ODDS"]

LIMITS = (2, 3, 4, 5, 6, 8, 10, 20, 50, 100)
"""The ``maximum-prefix`` limits designs use: the first above what a neighbour sends, or
the next one up. Steps of one where neighbours send a few prefixes, so that a fault's
limit, a step or two below what its peer sends, takes values the design's limits take
(with steps 2, 3, 5, 10, 20 the two spreads differed by 0.43 in total variation over 200
queries, 0.26 now: neighbours sending six or more, whose limits are the design's highest,
leave no fault a limit as high)."""
LOOPBACK_ODDS = 0.35
"""Chance that an inter-AS session is peered between loopbacks (at least one is)."""
LIMIT_ODDS = 0.8
"""Chance that an eBGP neighbour has a ``maximum-prefix``."""
FILTER_IN_ODDS = 0.5
"""Chance that a customer's or peer's cone is filtered by a prefix-list bound inbound, its
route-map only setting the preference (else the route-map matches the list)."""
GTSM_ODDS = 0.4
"""Chance that a single-hop eBGP session checks TTL security (hops 1 or 2, as loopback
sessions do), so either value is one a design carries."""
LOOPBACK_PAIRS = {
    ("gtsm1", "multihop255"): 0.075,
    ("gtsm2", "multihop255"): 0.075,
    ("multihop", "connected"): 0.85,
}
"""How loopback sessions' two ends handle TTL (``TTL_LINES``), and how often. A fault's
``ebgp-multihop`` sends 2 (255 passes any check), so 255 stays rare among the design's."""
MIXED_HOPS_ODDS = 0.3
"""Chance that a session checking TTL security allows one hop at one end and two at the
other (both accept a direct neighbour), so ends that differ are no tell by themselves."""


def _regions(rng: random.Random, part: Part) -> list[list[int]] | None:
    """Sites grouped into connected regions of one to three, two to four of them."""
    size = len(part.sites)
    count = rng.randint(max(2, -(-size // 3)), min(4, size))
    seeds = rng.sample(range(size), count)
    region = {s: i for i, s in enumerate(seeds)}
    members = [[s] for s in seeds]
    while len(region) < size:
        grown = False
        for i in rng.sample(range(count), count):
            if len(members[i]) >= 3:
                continue
            frontier = sorted(
                {y for s in part.spans for x, y in ((s.a, s.b), (s.b, s.a))
                 if x in members[i] and y not in region}
            )
            if frontier:
                site = rng.choice(frontier)
                region[site] = i
                members[i].append(site)
                grown = True
        if not grown:
            return None
    return members


def _relations(
    rng: random.Random, asns: list[int], pairs: set[tuple[int, int]]
) -> tuple[tuple[int, int, str], ...]:
    """Provider-customer along a tree from the best-connected AS; the other pairs peer."""
    degree = {a: sum(a in p for p in pairs) for a in asns}
    root = max(asns, key=lambda a: (degree[a], rng.random()))
    seen, todo, out = {root}, [root], []
    while todo:
        top = todo.pop(0)
        for a, b in sorted(pairs):
            other = b if a == top else a if b == top else None
            if other is not None and other not in seen:
                seen.add(other)
                todo.append(other)
                out.append((top, other, "provider"))
    tree = {frozenset((a, b)) for a, b, _ in out}
    out += [(a, b, "peer") for a, b in sorted(pairs) if frozenset((a, b)) not in tree]
    return tuple(out)


def _costs(part: Part, links: list[TransitLink], index: dict[str, int]) -> list[TransitLink]:
    """Internal links: OSPF cost from length; inter-AS links: no OSPF cost or key."""
    span = {frozenset((s.a, s.b)): s.km for s in part.spans}
    unit = statistics.median(span.values()) / 20
    out = []
    for x in links:
        km = span[frozenset((index[x.a], index[x.b]))]
        out.append(replace(x, cost=max(1, min(65535, round(km / unit)))))
    return out


def _loopback_ends(rng: random.Random) -> tuple[str, str]:
    """Each end's TTL handling of a loopback session, as its own AS sets it.

    The two ASes choose apart and their ends differ, in a way that works
    (``LOOPBACK_PAIRS``); so a way is never beside a partner of its own kind, as a fault's
    never is (the fault's partner is one that fails it), and how many lines of each kind a
    network holds tells a fault's line from the design's no better than chance.
    """
    pairs, weights = zip(*LOOPBACK_PAIRS.items(), strict=True)
    pair = rng.choices(pairs, weights)[0]
    return pair if rng.random() < 0.5 else (pair[1], pair[0])


def _sessions(
    rng: random.Random, plan: BgpPlan
) -> tuple[tuple[int, ...], dict[str, str], dict[str, int]]:
    """Loopback sessions, TTL handling per inter-AS link, and ``maximum-prefix`` limits."""
    from netarena.route.frr.bgp_model import sent

    inter = [i for i, x in enumerate(plan.links) if not plan.internal(x)]
    loopback = tuple(i for i in inter if rng.random() < LOOPBACK_ODDS) or (rng.choice(inter),)
    ttl: dict[str, str] = {}
    for i in inter:
        if i in loopback:
            a, b = _loopback_ends(rng)
            ttl[str(i)] = a
            if b != a:
                ttl[f"{i}@{plan.links[i].b}"] = b
            continue
        way = rng.choice(("gtsm1", "gtsm2")) if rng.random() < GTSM_ODDS else ""
        ttl[str(i)] = way
        if way and rng.random() < MIXED_HOPS_ODDS:
            end = rng.choice((plan.links[i].a, plan.links[i].b))
            ttl[f"{i}@{end}"] = "gtsm2" if way == "gtsm1" else "gtsm1"
    staged = replace(plan, loopback_links=loopback, ttl=ttl)
    limits = {}
    for i in inter:
        link = plan.links[i]
        for router in (link.a, link.b):
            peer = link.peer(router)
            if rng.random() < LIMIT_ODDS:
                count = len(sent(staged, peer, router))
                above = [x for x in LIMITS if x > count]
                limits[f"{router}<{peer}"] = rng.choice(above[:2])
    return loopback, ttl, limits


def draw_bgp_plan(rng: random.Random, num_routers: int | None = None) -> BgpPlan:
    """Draw a multi-AS design on ``num_routers`` sites of a real network (4-8 by default)."""
    size = num_routers or rng.randint(4, 8)
    while True:
        part = draw_sites(rng, size)
        regions = _regions(rng, part)
        if regions is None:
            continue
        order = [site for members in regions for site in members]
        routers = tuple(f"r{i}" for i in range(1, size + 1))
        name = {site: routers[i] for i, site in enumerate(order)}
        asns = sorted(rng.sample(range(64512, 65535), len(regions)))
        asn = {name[s]: asns[i] for i, members in enumerate(regions) for s in members}
        chosen: list[tuple[str, str]] = []
        between: dict[frozenset[int], list[tuple[str, str]]] = {}
        for s in part.spans:
            a, b = name[s.a], name[s.b]
            if asn[a] == asn[b]:
                chosen.append((a, b))
            else:
                between.setdefault(frozenset((asn[a], asn[b])), []).append((a, b))
        chosen += [rng.choice(options) for _, options in sorted(between.items(), key=str)]
        pairs = sorted((min(a, b, key=_num), max(a, b, key=_num)) for a, b in chosen)
        links = draw_links(rng, routers, [(_num(a) - 1, _num(b) - 1) for a, b in pairs])
        index = {name[site]: site for site in order}
        links = [
            x if asn[x.a] == asn[x.b] else replace(x, key="")
            for x in _costs(part, links, index)
        ]
        links = [x if asn[x.a] == asn[x.b] else replace(x, cost=0) for x in links]
        as_pairs = {(min(asn[x.a], asn[x.b]), max(asn[x.a], asn[x.b])) for x in links
                    if asn[x.a] != asn[x.b]}
        plan = BgpPlan(
            routers,
            tuple(links),
            draw_stubs(rng, routers, lambda _: ["network"] * size),
            _loopbacks(rng, routers),
            {r: draw_extras(rng, i) for i, r in enumerate(routers, 1)},
            sites={name[site]: part.sites[site].name for site in order},
            source=part.network,
            asn=asn,
            relations=_relations(rng, asns, as_pairs),
        )
        unique = unique_routes(rng, plan)
        if unique is None:
            continue
        loopback, ttl, limits = _sessions(rng, unique)
        return replace(
            unique, loopback_links=loopback, ttl=ttl, limits=limits,
            filtered_in=_filtered_in(rng, unique),
        )


def _filtered_in(rng: random.Random, plan: BgpPlan) -> tuple[str, ...]:
    """``router<peer`` ends that filter a customer's or peer's cone with a prefix-list in."""
    ends = []
    for link in plan.links:
        if plan.internal(link):
            continue
        for router in (link.a, link.b):
            peer = link.peer(router)
            if plan.relation(plan.asn[router], plan.asn[peer]) == "provider":
                continue
            if rng.random() < FILTER_IN_ODDS:
                ends.append(f"{router}<{peer}")
    return tuple(ends)


def _num(router: str) -> int:
    return int(router[1:])


def _loopbacks(rng: random.Random, routers: tuple[str, ...]) -> dict[str, str]:
    base = rng.randint(1, 254)
    return {r: f"10.255.{base}.{i}" for i, r in enumerate(routers, 1)}
