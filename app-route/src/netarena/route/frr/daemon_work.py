"""What the routing daemons have ahead, and when each neighbour was last heard.

Read over their vty sockets: scheduled runs that change routes, neighbours still forming,
sessions still opening, and the timers each message from a neighbour restarts.

``show thread timers`` lists every timer a daemon has pending and the time left on it
(a ``-`` in front once overdue); ``settle`` waits on what these functions read.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any, NamedTuple

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.adjacencies import ospf_neighbours
from netarena.route.frr.bgp_plan import HOLD_S
from netarena.route.frr.plan import DEAD_S, dead_s

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = [
    "BgpWork",
    "ospf_work_due",
    "ospf_forming",
    "ospf_heard_since",
    "bgp_work",
    "bgp_heard_since",
    "heard_since",
]

OSPF_WORK_TIMERS = (
    "ospf_spf_calculate_schedule_worker",
    "ospf_ase_calculate_timer",
    "ospf_wait_timer",
)
"""ospfd's timers that change routes: SPF, the external routes after it, and the end of a
broadcast interface's wait (its DR election)."""
BGP_WORK_TIMERS = (
    "bgp_route_map_update_timer",
    "bgp_announce_route_timer_expired",
    "subgroup_coalesce_timer",
    "bgp_routeadv_timer",
    "work_queue_run",
)
"""bgpd's timers that change routes: an edited route-map (or a prefix-list it matches)
applies at the first (the design's ``bgp route-map delay-timer 1``), a policy newly bound
to a neighbour at the second; the next two hold updates back (coalescing, advertisement
interval: the design has neither, an agent may add them); the last runs its work queues,
as when a session that dropped has its routes cleared."""
BGP_OPENING_TIMERS = ("bgp_start_timer", "bgp_connect_timer")
"""bgpd's timers of a session not up: it will try again (which may succeed)."""
WORK_HORIZON_S = 5.0
"""Only timers due this soon count: a passive stub keeps the default 40 s wait, whose DR
election changes no route."""
FORMING = ("Init", "ExStart", "Exchange", "Loading")
"""Neighbour states on the way to an adjacency."""
STUCK_S = 1.5
"""A neighbour forming that made no progress this long is stuck (an MTU mismatch holds it
in ExStart): past the design's one-second retransmit interval, a retransmission failed."""
_TIMER = re.compile(r"^\s+\(?(\w+)\)?\s+(-?)(\d+):(\d\d):(\d\d(?:\.\d+)?)\s*$", re.MULTILINE)
"""One line of ``show thread timers``: the callback, and the time left ([-]h:mm:ss.mmm)."""


def parse_timers(text: str) -> list[tuple[str, float]]:
    """(callback, seconds left) of each timer in ``show thread timers``; overdue: negative."""
    return [
        (name, (-1 if minus else 1) * (int(h) * 3600 + int(m) * 60 + float(s)))
        for name, minus, h, m, s in _TIMER.findall(text)
    ]


def _timers(
    net: FrrNetwork, router: str, daemon: str
) -> tuple[float, list[tuple[str, float]]] | None:
    """``daemon``'s pending timers on ``router``: when asked, and each (callback, seconds left).

    None: the daemon does not answer.
    """
    sent = time.monotonic()
    try:
        return sent, parse_timers(net.show(router, daemon, "show thread timers"))
    except EmulatorError:
        return None


def _due(sent: float, pending: list[tuple[str, float]], names: tuple[str, ...]) -> float | None:
    """When the last timer in ``names`` due within ``WORK_HORIZON_S`` is due (monotonic)."""
    return max((sent + t for n, t in pending if n in names and t <= WORK_HORIZON_S), default=None)


def _latest(found: list[float | None]) -> float | None:
    return max((d for d in found if d is not None), default=None)


def ospf_work_due(net: FrrNetwork) -> float | None:
    """When the last routing run some router's ospfd has scheduled is due (monotonic).

    None: no SPF or external-route run is scheduled anywhere; a router whose ospfd does not
    answer has none.
    """

    def due(router: str) -> float | None:
        sent, pending = _timers(net, router, "ospfd") or (0.0, [])
        return _due(sent, pending, OSPF_WORK_TIMERS)

    return _latest(list(net.pool.map(due, net.ospf.routers)))


class BgpWork(NamedTuple):
    """What bgpd (and ospfd, which carries the iBGP peers' loopbacks) has ahead."""

    due: float | None
    """When the last route-changing run pending is due (monotonic; None: none is)."""
    opening: bool
    """Some session is not up and will try again, or is opening (it may come up)."""


def bgp_work(net: FrrNetwork) -> BgpWork:
    """Every router's pending route-changing runs, and whether a session may still come up.

    A session opening waits on a four-minute hold timer (longer than the design's hold
    time); one down, on its start or connect timer. A router whose bgpd does not answer
    has none.
    """

    def read(router: str) -> tuple[float | None, bool]:
        sent, pending = _timers(net, router, "bgpd") or (0.0, [])
        opening = any(
            name in BGP_OPENING_TIMERS or (name == "bgp_holdtime_timer" and t > HOLD_S)
            for name, t in pending
        )
        return _due(sent, pending, BGP_WORK_TIMERS), opening

    found = list(net.pool.map(read, net.ospf.routers))
    due = _latest([d for d, _ in found] + [ospf_work_due(net)])
    return BgpWork(due, any(opening for _, opening in found))


def ospf_forming(net: FrrNetwork) -> bool:
    """Whether some router has a neighbour forming an adjacency, not stuck (``STUCK_S``)."""
    return any(
        str(entry.get("nbrState", "")).startswith(FORMING)
        and entry.get("lastPrgrsvChangeMsec", 0) < STUCK_S * 1000
        for _, (_, _, data) in net.ask_all("ospfd", "show ip ospf neighbor detail json")
        for _, entry in ospf_neighbours(data)
    )


def ospf_heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every OSPF neighbour is up and was heard since ``moment`` (monotonic).

    Up: Full or 2-Way. Heard: its router accepted a hello from it, as the time left on its
    dead timer (restarted at each accepted hello) dates. A neighbour that fell silent at
    ``moment`` (a hostile or mistaken command) is not heard until it has gone down; one
    still forming is not up. A router whose ospfd does not answer makes it false.
    """
    answers = net.ask_all("ospfd", "show ip ospf neighbor json")
    dead = {
        intf: dead_s(link.timers)
        for link in net.ospf.links
        for intf in (link.a_intf, link.b_intf)
    }

    def heard(sent: float, entry: dict[str, Any]) -> bool:
        left = entry.get("deadTimeMsecs", 0)  # "inactive" when no dead timer runs
        if not isinstance(left, int | float):
            return False
        dead_s = dead.get(str(entry.get("ifaceName", "")).split(":")[0], DEAD_S)
        return sent - (dead_s - left / 1000) > moment

    return len(answers) == len(net.ospf.routers) and all(
        str(entry.get("nbrState", "")).startswith(("Full", "2-Way")) and heard(sent, entry)
        for _, (sent, _, data) in answers
        for _, entry in ospf_neighbours(data)
    )


def bgp_heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every BGP peer with a session up was heard since ``moment`` (monotonic).

    bgpd restarts a session's hold timer at every keepalive or update it reads from the
    peer (a keepalive each second), so the time left on it dates the last one. Longer
    hold timers are not sessions up (``bgp_work``: opening). A session that dropped has no
    hold timer left, but work queued to clear its routes, then a start timer: the caller
    waits for both (``BgpWork``). A router whose bgpd does not answer makes it false.
    """

    def heard(router: str) -> bool:
        timers = _timers(net, router, "bgpd")
        return timers is not None and all(
            timers[0] - (HOLD_S - t) > moment
            for name, t in timers[1]
            if name == "bgp_holdtime_timer" and t <= HOLD_S
        )

    return all(net.pool.map(heard, net.ospf.routers))


def heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every OSPF neighbour and every BGP peer was heard since ``moment``."""
    bgp = net.ospf.routing == "bgp"
    return ospf_heard_since(net, moment) and (not bgp or bgp_heard_since(net, moment))
