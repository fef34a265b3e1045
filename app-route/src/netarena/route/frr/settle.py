"""When a dynamic-routing network has settled: routing read once it stopped changing.

Change is the kernel's route notifications from every router (``RouteEvents``: no
polling), and ospfd's scheduled work over its vty socket; FRR's RIB is read once they
are quiet. How long "quiet" must be is the caller's: after an agent's command, past the
dead interval; for the final score, past the longest a neighbour broken silently stays
up (``OspfPlan.detect_s``); on OSPF networks, either ends sooner once every neighbour has
been heard since the command (``ospf_heard_since``).
"""

from __future__ import annotations

import json
import re
import time
from typing import TYPE_CHECKING, Any

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.plan import DEAD_S
from netarena.route.frr.routing import Routing, judged, routes_complete

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = [
    "settle",
    "ospf_work_due",
    "ospf_forming",
    "ospf_heard_since",
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
"""``settle(heard_since=...)`` asks whether every neighbour was heard no sooner than this
after the moment: two hello intervals, so every live neighbour has sent one, and a new
one has shown up (forming)."""
RECHECK_S = 0.05
"""How soon ospfd is asked again when a run it scheduled is overdue (it had no CPU yet)."""
WORK_TIMERS = ("ospf_spf_calculate_schedule_worker", "ospf_ase_calculate_timer", "ospf_wait_timer")
"""ospfd's timers that change routes: SPF, the external routes after it, and the end of a
broadcast interface's wait (its DR election)."""
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


def ospf_work_due(net: FrrNetwork) -> float | None:
    """When the last routing run some router's ospfd has scheduled is due (monotonic).

    None: no SPF or external-route run is scheduled anywhere. Read from each ospfd's
    ``show thread timers``, which lists every pending timer and the time left on it; a
    router whose ospfd does not answer has none.
    """

    def due(router: str) -> float | None:
        sent = time.monotonic()
        try:
            text = net.show(router, "ospfd", "show thread timers")
        except EmulatorError:
            return None
        left = (
            (name, int(h) * 3600 + int(m) * 60 + float(s))
            for name, h, m, s in _TIMER.findall(text)
        )
        return max(
            (sent + t for name, t in left if name in WORK_TIMERS and t <= WORK_HORIZON_S),
            default=None,
        )

    return max((d for d in net.pool.map(due, net.ospf.routers) if d is not None), default=None)


def ospf_forming(net: FrrNetwork) -> bool:
    """Whether some router has a neighbour forming an adjacency, not stuck (``STUCK_S``)."""

    def forming(router: str) -> bool:
        entries = _neighbours(net, router, detail=True) or []
        return any(
            str(entry.get("nbrState", "")).startswith(FORMING)
            and entry.get("lastPrgrsvChangeMsec", 0) < STUCK_S * 1000
            for entry in entries
        )

    return any(net.pool.map(forming, net.ospf.routers))


def _neighbours(
    net: FrrNetwork, router: str, detail: bool = False
) -> list[dict[str, Any]] | None:
    """``router``'s OSPF neighbour entries (None: its ospfd does not answer)."""
    command = "show ip ospf neighbor detail json" if detail else "show ip ospf neighbor json"
    try:
        data = json.loads(net.show(router, "ospfd", command))
    except (ValueError, EmulatorError):
        return None
    return [
        entry
        for found in (data.get("neighbors") or {}).values()
        for entry in (found if isinstance(found, list) else [found])
        if isinstance(entry, dict)
    ]


def ospf_heard_since(net: FrrNetwork, moment: float) -> bool:
    """Whether every OSPF neighbour is up and was heard since ``moment`` (monotonic).

    Up: Full or 2-Way. Heard: its router accepted a hello from it, as the time left on its
    dead timer (restarted at each accepted hello) dates. A neighbour that fell silent at
    ``moment`` (a hostile or mistaken command) is not heard until it has gone down; one
    still forming is not up. A router whose ospfd does not answer makes it false.
    """

    def heard(router: str) -> bool:
        sent = time.monotonic()
        entries = _neighbours(net, router)
        return entries is not None and all(
            str(entry.get("nbrState", "")).startswith(("Full", "2-Way"))
            and sent - (DEAD_S - entry.get("deadTimeMsecs", 0) / 1000) > moment
            for entry in entries
        )

    return all(net.pool.map(heard, net.ospf.routers))


def settle(
    net: FrrNetwork,
    quiet_s: float = 1.0,
    timeout_s: float = 12.0,
    complete: bool = False,
    want: Routing | None = None,
    idle: bool = False,
    since: float | None = None,
    not_before: float = 0.0,
    heard_since: float | None = None,
    forming: bool = True,
) -> Routing:
    """Routing once the kernel routes stopped changing for ``quiet_s``.

    Change is the kernel's notifications (``net.route_events``); the RIB is read once
    they are quiet, and every ``WANT_EVERY_S`` when ``want`` may already be reached.

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
            plus that delay. A neighbour broken silently goes down only at its dead
            interval, which no daemon has scheduled work for: so either the change acts
            at once (the healthy start; injections that bounce the interfaces they
            break), or ``not_before`` lies past the dead interval after it.
        since: When the quiet period may have begun (monotonic; by default now): it
            counts from this or the last change, whichever is later.
        not_before: Never settled before this moment (monotonic), however quiet; a
            ``want`` reached still ends the wait.
        heard_since: ``not_before`` no longer holds once every OSPF neighbour has been
            heard since this moment (``ospf_heard_since``; asked from ``HEARD_AFTER_S``
            after it): the silent break ``not_before`` waits out would have shown.
        forming: With ``idle``, an adjacency still forming (``ospf_forming``) is work
            ahead too, until it is stuck. False after a command that changed nothing:
            what was forming at the last measurement was waited out then.

    Raises:
        EmulatorError: It kept changing (or stayed incomplete) for ``timeout_s``.
    """
    assert net.route_events is not None
    events = net.route_events
    begun = time.monotonic() if since is None else since
    end = time.monotonic() + timeout_s
    checked = time.monotonic()
    asked, pending = 0.0, False  # ospf_work_due: when to ask next; whether work was seen
    heard_at = (heard_since or 0.0) + HEARD_AFTER_S  # when to ask ospf_heard_since next
    while True:
        now = time.monotonic()
        changed = max(begun, events.last)
        quiet = now - changed
        if now < not_before and heard_since is not None and now >= heard_at:
            if ospf_heard_since(net, heard_since):
                not_before = now
            heard_at = time.monotonic() + RECHECK_S * 2
        if now < not_before:
            settled, wake = False, not_before
            if heard_since is not None:
                wake = min(wake, max(heard_at, now + RECHECK_S))
        elif idle:  # ospfd idle; or quiet so long that no pending recomputation is left
            settled = quiet >= quiet_s + ASE_DELAY_S
            wake = max(changed + KERNEL_QUIET_S, asked)
            if not settled and now >= wake:
                due = ospf_work_due(net)
                growing = forming and due is None and ospf_forming(net)
                settled = due is None and not pending and not growing
                # A run seen scheduled has happened by the first poll that no longer
                # sees it: zebra gets INSTALL_S to install its routes before another.
                asked = time.monotonic() + (2 * RECHECK_S if growing else INSTALL_S)
                if due is not None:
                    asked = max(due, now + RECHECK_S) + INSTALL_S
                pending = due is not None
                wake = max(wake, asked)
        else:
            settled = quiet >= quiet_s
            wake = changed + quiet_s
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
