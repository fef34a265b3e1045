"""When a dynamic-routing network has settled: routing read once it stopped changing.

Change is the kernel's route notifications from every router (``RouteEvents``: no
polling), and ospfd's scheduled work over its vty socket; FRR's RIB is read once they
are quiet. How long "quiet" must be is the caller's: after an agent's command, past the
dead interval; for the final score, past the longest a neighbour broken silently stays
up (``OspfPlan.detect_s``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.routing import Routing, judged, routes_complete

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = ["settle", "ospf_busy", "ASE_DELAY_S", "KERNEL_QUIET_S"]

ASE_DELAY_S = 1.0
"""ospfd recomputes its external routes at most this long after an SPF run (its timer
starts at the first run and is not restarted by later ones)."""
KERNEL_QUIET_S = 0.2
"""With ``idle``, how long the kernel routes must stay the same once ospfd is idle."""
WANT_EVERY_S = 0.25
"""How often the RIB is compared with ``want`` (a read of every router: about 10 ms CPU)."""
BUSY_EVERY_S = 0.1
"""How often, with ``idle``, ospfd is asked whether it has work ahead."""


def ospf_busy(net: FrrNetwork) -> bool:
    """Whether some router's ospfd still has routing work ahead.

    An SPF run is due, or one ran so recently that the external routes it leads to
    (``ASE_DELAY_S`` later) are not computed yet. A router whose ospfd does not answer
    has none.
    """
    recent_ms = (ASE_DELAY_S + 0.1) * 1000
    return any(
        "spfTimerDueInMsecs" in data or data.get("spfLastExecutedMsecs", recent_ms) < recent_ms
        for _, (_, _, data) in net.ask_all("ospfd", "show ip ospf json")
    )


def settle(
    net: FrrNetwork,
    quiet_s: float = 1.0,
    timeout_s: float = 12.0,
    complete: bool = False,
    want: Routing | None = None,
    idle: bool = False,
    since: float | None = None,
    not_before: float = 0.0,
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
            ospfd has work ahead (``ospf_busy``), not after ``quiet_s`` alone: a quiet
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

    Raises:
        EmulatorError: It kept changing (or stayed incomplete) for ``timeout_s``.
    """
    assert net.route_events is not None
    events = net.route_events
    begun = time.monotonic() if since is None else since
    end = time.monotonic() + timeout_s
    checked = time.monotonic()
    while True:
        now = time.monotonic()
        changed = max(begun, events.last)
        quiet = now - changed
        if now < not_before:
            settled, wake = False, not_before
        elif idle:  # ospfd idle; or quiet so long that no pending recomputation is left
            settled = quiet >= quiet_s + ASE_DELAY_S or (
                quiet >= KERNEL_QUIET_S and not ospf_busy(net)
            )
            wake = changed + max(KERNEL_QUIET_S, quiet + BUSY_EVERY_S)
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
