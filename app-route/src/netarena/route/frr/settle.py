"""When a dynamic-routing network has settled: routing read once it stopped changing.

Change is the kernel's route notifications from every router (``RouteEvents``: no
polling), and the daemons' scheduled work read over their vty sockets (``show thread
timers``); FRR's RIB is read once they are quiet. How long a break made silently may take
to show is the caller's (``silence_s``): after an agent's command, past the dead interval;
for the final score, past the longest a neighbour broken silently stays up
(``OspfPlan.detect_s``). Either ends sooner once every neighbour and BGP peer has been
heard since (``heard_since``).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.adjacencies import ospf_neighbours
from netarena.route.frr.bgp_plan import HOLD_S, KEEPALIVE_S
from netarena.route.frr.plan import DEAD_S
from netarena.route.frr.routing import Routing, judged, routes_complete

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = [
    "settle",
    "ospf_work_due",
    "ospf_forming",
    "ospf_heard_since",
    "bgp_work_due",
    "bgp_heard_since",
    "heard_since",
    "ASE_DELAY_S",
    "KERNEL_QUIET_S",
]

ASE_DELAY_S = 1.0
"""ospfd recomputes its external routes this long after an SPF run (its timer starts at
the first run and is not restarted by later ones)."""
KERNEL_QUIET_S = 0.2
"""With ``idle``, how long the kernel routes must stay the same once ospfd is idle."""
INSTALL_S = 0.05
"""With ``idle``, how long after ospfd's last scheduled run the routes it computed may take
to reach the kernel (zebra installs them within milliseconds)."""
WANT_EVERY_S = 0.25
"""How often the RIB is compared with ``want`` (a read of every router: about 10 ms CPU)."""
HEARD_AFTER_S = 0.5
"""``settle`` asks whether every OSPF neighbour was heard no sooner than this after the
moment: two hello intervals, so every live neighbour has sent one, and a new one has
shown up (forming). On BGP networks, no sooner than a keepalive interval."""
ASK_EVERY_S = 0.1
"""How often ``settle`` asks the daemons about their neighbours again while it waits for
them (to be heard, to form)."""
RECHECK_S = 0.05
"""How soon a daemon is asked again when a run it scheduled is overdue (it had no CPU yet)."""
WORK_TIMERS = ("ospf_spf_calculate_schedule_worker", "ospf_ase_calculate_timer", "ospf_wait_timer")
"""ospfd's timers that change routes: SPF, the external routes after it, and the end of a
broadcast interface's wait (its DR election)."""
BGP_WORK_TIMERS = ("bgp_route_map_update_timer", "bgp_announce_route_timer_expired")
"""bgpd's timers that change routes: an edited route-map (or prefix-list) applies at the
first (the design's ``bgp route-map delay-timer 1``), a policy newly bound to a neighbour
at the second."""
WORK_HORIZON_S = 5.0
"""Only timers due this soon count: a passive stub keeps the default 40 s wait, whose DR
election changes no route."""
FORMING = ("Init", "ExStart", "Exchange", "Loading")
"""Neighbour states on the way to an adjacency."""
STUCK_S = 1.5
"""A neighbour forming that made no progress this long is stuck (an MTU mismatch holds it
in ExStart): past the design's one-second retransmit interval, a retransmission failed."""
_TIMER = re.compile(r"^\s+\(?(\w+)\)?\s+(\d+):(\d\d):(\d\d(?:\.\d+)?)\s*$", re.MULTILINE)
"""One line of ``show thread timers``: the callback, and the time left (h:mm:ss.mmm)."""


def _timers(
    net: FrrNetwork, router: str, daemon: str
) -> tuple[float, list[tuple[str, float]]] | None:
    """``daemon``'s pending timers on ``router``: when asked, and each (callback, seconds left).

    None: the daemon does not answer.
    """
    sent = time.monotonic()
    try:
        text = net.show(router, daemon, "show thread timers")
    except EmulatorError:
        return None
    return sent, [
        (name, int(h) * 3600 + int(m) * 60 + float(s)) for name, h, m, s in _TIMER.findall(text)
    ]


def _work_due(net: FrrNetwork, daemon: str, names: tuple[str, ...]) -> float | None:
    """When the last timer in ``names`` due within ``WORK_HORIZON_S`` on any router is due.

    Monotonic; None: no router's ``daemon`` has one pending.
    """

    def due(router: str) -> float | None:
        sent, pending = _timers(net, router, daemon) or (0.0, [])
        left = (t for name, t in pending if name in names and t <= WORK_HORIZON_S)
        return max((sent + t for t in left), default=None)

    return max((d for d in net.pool.map(due, net.ospf.routers) if d is not None), default=None)


def ospf_work_due(net: FrrNetwork) -> float | None:
    """When the last routing run some router's ospfd has scheduled is due (monotonic).

    None: no SPF or external-route run is scheduled anywhere. Read from each ospfd's
    ``show thread timers``, which lists every pending timer and the time left on it; a
    router whose ospfd does not answer has none.
    """
    return _work_due(net, "ospfd", WORK_TIMERS)


def bgp_work_due(net: FrrNetwork) -> float | None:
    """When the last route-map or announcement run some router's bgpd has pending is due.

    None: none is (``BGP_WORK_TIMERS``), or bgpd does not answer.
    """
    return _work_due(net, "bgpd", BGP_WORK_TIMERS)


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
    return len(answers) == len(net.ospf.routers) and all(
        str(entry.get("nbrState", "")).startswith(("Full", "2-Way"))
        and sent - (DEAD_S - entry.get("deadTimeMsecs", 0) / 1000) > moment
        for _, (sent, _, data) in answers
        for _, entry in ospf_neighbours(data)
    )


def bgp_heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every BGP peer with a session up was heard since ``moment`` (monotonic).

    bgpd restarts a session's hold timer at every message it reads from the peer (a
    keepalive each second), so the time left on it dates the last one. Timers longer
    than the design's hold time are not sessions up (a session still opening waits four
    minutes). A router whose bgpd does not answer makes it false.
    """

    def heard(router: str) -> bool:
        timers = _timers(net, router, "bgpd")
        if timers is None:
            return False
        sent, pending = timers
        return all(
            sent - (HOLD_S - t) > moment
            for name, t in pending
            if name == "bgp_holdtime_timer" and t <= HOLD_S
        )

    return all(net.pool.map(heard, net.ospf.routers))


def heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every OSPF neighbour and every BGP peer was heard since ``moment``."""
    bgp = "bgpd" in net.ospf.daemons
    return ospf_heard_since(net, moment) and (not bgp or bgp_heard_since(net, moment))


def settle(
    net: FrrNetwork,
    quiet_s: float = 1.0,
    timeout_s: float = 12.0,
    complete: bool = False,
    want: Routing | None = None,
    idle: bool = False,
    since: float | None = None,
    silence_s: float = 0.0,
    forming: bool = True,
) -> Routing:
    """Routing once the kernel routes stopped changing for ``quiet_s``.

    Change is the kernel's notifications (``net.route_events``); the RIB is read once
    they are quiet, and every ``WANT_EVERY_S`` when ``want`` may already be reached. On
    BGP networks bgpd must also have no route-map or announcement run pending
    (``bgp_work_due``).

    Args:
        net: The network.
        quiet_s: How long routing must stay the same, seconds.
        timeout_s: Longest wait, seconds.
        complete: Also wait until every router routes to every stub and loopback.
        want: Routing to stop at as soon as it is reached.
        idle: Stop once the kernel routes stayed the same ``KERNEL_QUIET_S`` and no
            ospfd has work ahead (``ospf_work_due``), not after ``quiet_s`` alone: a quiet
            period shorter than ospfd's delay before external routes can end between an
            SPF run and the external routes it changes (the healthy routing was once
            read there). Without an idle ospfd, routing must stay the same ``quiet_s``
            plus that delay.
        since: When the quiet period may have begun (monotonic; by default now): it
            counts from this or the last change, whichever is later.
        silence_s: A neighbour broken silently at ``since`` goes down only at its dead
            interval (or hold time), which no daemon has scheduled work for: never
            settled sooner than this after ``since``, however quiet, unless every OSPF
            neighbour and BGP peer has been heard since (``heard_since``). On BGP
            networks the clock restarts at each route change: an iBGP session between
            loopbacks falls silent when the route to its peer goes. A ``want`` reached
            still ends the wait.
        forming: With ``idle``, an adjacency still forming (``ospf_forming``) is work
            ahead too, until it is stuck. False after a command that changed nothing:
            what was forming at the last measurement was waited out then.

    Raises:
        EmulatorError: It kept changing (or stayed incomplete) for ``timeout_s``.
    """
    assert net.route_events is not None
    events = net.route_events
    bgp = "bgpd" in net.ospf.daemons
    heard_after = max(HEARD_AFTER_S, KEEPALIVE_S) if bgp else HEARD_AFTER_S
    begun = time.monotonic() if since is None else since
    end = time.monotonic() + timeout_s
    checked = time.monotonic()
    asked, pending = 0.0, False  # ospf_work_due: when to ask next; whether work was seen
    worked = 0.0  # when bgpd's work last seen pending is done, its routes installed
    cause, heard, heard_at = -1.0, False, 0.0  # silence counted from; heard since; next ask
    while True:
        now = time.monotonic()
        changed = max(begun, events.last)
        quiet = now - changed
        if cause != (changed if bgp else begun):
            cause = changed if bgp else begun
            heard, heard_at = False, cause + heard_after
        silent = now < cause + silence_s and not heard
        if silent and now >= heard_at:
            heard = heard_since(net, cause)
            heard_at = time.monotonic() + ASK_EVERY_S
            silent = not heard
            if heard and bgp:  # a session just dropped has no hold timer: its withdrawals
                worked = max(worked, heard_at + KERNEL_QUIET_S)  # may be on their way
        if silent:
            settled, wake = False, min(cause + silence_s, max(heard_at, now + RECHECK_S))
        elif idle:  # ospfd idle; or quiet so long that no pending recomputation is left
            settled = quiet >= quiet_s + ASE_DELAY_S
            wake = max(changed + KERNEL_QUIET_S, asked)
            if not settled and now >= wake:
                due = ospf_work_due(net)
                growing = forming and due is None and ospf_forming(net)
                settled = due is None and not pending and not growing
                # A run seen scheduled has happened by the first poll that no longer
                # sees it: zebra gets INSTALL_S to install its routes before another.
                asked = time.monotonic() + (ASK_EVERY_S if growing else INSTALL_S)
                if due is not None:
                    asked = max(due, now + RECHECK_S) + INSTALL_S
                pending = due is not None
                wake = max(wake, asked)
        else:
            settled = quiet >= quiet_s and now >= worked
            wake = max(changed + quiet_s, worked)
            if settled and bgp and (due := bgp_work_due(net)) is not None:
                # its updates still cross to the peers and their zebras once it ran
                worked = max(due, now + RECHECK_S) + KERNEL_QUIET_S
                settled, wake = False, worked
        if settled:
            routing = net.routing()
            if not complete or routes_complete(net.ospf, routing):
                return routing
            begun = now  # incomplete: wait for more
            continue
        if want is not None and now - checked >= WANT_EVERY_S:
            checked = now
            routing = net.routing()
            if judged(routing) == judged(want):
                return routing
        if want is not None:
            wake = min(wake, checked + WANT_EVERY_S)
        if now >= end:
            raise EmulatorError(f"routing did not settle within {timeout_s:g}s")
        events.wait(min(wake, end) - time.monotonic())
