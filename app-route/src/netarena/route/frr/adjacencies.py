"""Which OSPF adjacencies and BGP sessions are up, since when, and which the design has.

A pair is ``(router, neighbour router id)`` for an OSPF adjacency Full at both ends, and
``(router, "BGP <peer router>")`` for a BGP session Established at both ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from netarena.route.frr.bgp_plan import BgpPlan

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork
    from netarena.route.frr.plan import OspfPlan

__all__ = ["Pair", "Adjacencies", "read_adjacencies", "ospf_neighbours", "designed", "faulted"]

Pair = tuple[str, str]


class Adjacencies(NamedTuple):
    """What is up, when each came up, and how often each BGP session was established."""

    up: frozenset[Pair]
    since: dict[Pair, tuple[float, float]]
    """When each came up: monotonic ``(earliest, latest)``, from its up-time and the
    times the query was sent and answered."""
    established: dict[Pair, int]
    """How many times each BGP session has been established (FRR's up-time is in whole
    seconds; one more connection is a flap however quick)."""

    def same_as(self, up: frozenset[Pair], since: dict[Pair, tuple[float, float]],
                established: dict[Pair, int]) -> bool:
        """Whether these are the ones read before (``up``...), none restarted since.

        Two readings of one adjacency bracket the same moment it came up; a restarted
        one came up after the earlier reading's bracket.
        """
        return (
            self.up == up
            and self.established == established
            and all(self.since[p][0] <= since[p][1] + 0.01 for p in self.up)
        )


def ospf_neighbours(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(neighbour router id, entry) of one ``show ip ospf neighbor [detail] json`` answer.

    FRR lists a neighbour met on several interfaces as a list of entries.
    """
    return [
        (neighbour, entry)
        for neighbour, found in (data.get("neighbors") or {}).items()
        for entry in (found if isinstance(found, list) else [found])
        if isinstance(entry, dict)
    ]


def read_adjacencies(net: FrrNetwork, plan: OspfPlan) -> Adjacencies:
    """Full adjacencies and Established sessions, from every router's daemons.

    A router without a daemon has no adjacencies or sessions.
    """
    up: dict[Pair, tuple[float, float]] = {}
    for router, (sent, answered, data) in net.ask_all("ospfd", "show ip ospf neighbor json"):
        for neighbour, entry in ospf_neighbours(data):
            if str(entry.get("nbrState") or entry.get("state") or "").startswith("Full"):
                age = entry.get("upTimeInMsec", 0) / 1000
                up[(router, neighbour)] = (sent - age, answered - age)
    rid = {lo: router for router, lo in plan.loopbacks.items()}
    both = {  # up only when both ends see Full (a network-type mismatch is Full one way)
        (r, n): since for (r, n), since in up.items() if (rid.get(n), plan.loopbacks[r]) in up
    }
    established = _sessions(net, plan, up) if isinstance(plan, BgpPlan) else {}
    both.update(
        {(r, p): up[(r, p)] for r, p in established if (p[4:], f"BGP {r}") in established}
    )
    return Adjacencies(frozenset(both), both, established)


def _sessions(
    net: FrrNetwork, plan: BgpPlan, up: dict[Pair, tuple[float, float]]
) -> dict[Pair, int]:
    """``(router, "BGP <peer>")`` → connections established, for Established sessions.

    Their up-times go into ``up``.
    """
    found: dict[Pair, int] = {}
    for router, (sent, answered, data) in net.ask_all("bgpd", "show bgp neighbors json"):
        peers = {s.addr(s.peer(router)): s.peer(router) for s in plan.sessions_of(router)}
        for address, entry in data.items():
            if address in peers and entry.get("bgpState") == "Established":
                key = (router, f"BGP {peers[address]}")
                age = entry.get("bgpTimerUpMsec", 0) / 1000
                up[key] = (sent - age - 1.0, answered - age)  # whole seconds
                found[key] = int(entry.get("connectionsEstablished", 0))
    return found


def designed(plan: OspfPlan) -> frozenset[Pair]:
    """Every OSPF adjacency and BGP session the design has, both ends."""
    found = {
        (router, plan.loopbacks[link.peer(router)])
        for link in plan.igp_links()
        for router in (link.a, link.b)
    }
    if isinstance(plan, BgpPlan):
        found |= {
            (router, f"BGP {session.peer(router)}")
            for session in plan.sessions
            for router in (session.a, session.b)
        }
    return frozenset(found)


def faulted(plan: OspfPlan, faults: list[dict[str, Any]]) -> frozenset[Pair]:
    """Adjacencies over the links the faults touched: any repair resets them."""
    found = set()
    for fault in faults:
        if fault.get("session") is not None and isinstance(plan, BgpPlan):
            session = plan.sessions[fault["session"]]
            found |= {(session.a, f"BGP {session.b}"), (session.b, f"BGP {session.a}")}
        if fault.get("link") is not None:
            link = plan.links[fault["link"]]
            found |= {(link.a, plan.loopbacks[link.b]), (link.b, plan.loopbacks[link.a])}
    return frozenset(found)
