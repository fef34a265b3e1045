"""When a dynamic-routing network has settled: routing read once it stopped changing.

Change is watched on every router's kernel routes over rtnetlink (in-process, about a
millisecond), and ospfd's scheduled work over its vty socket; FRR's RIB is read once
they are quiet. How long "quiet" must be is the caller's: after an agent's command, past
the dead interval; for the final score, past the longest a neighbour broken silently
stays up (``OspfPlan.detect_s``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.routing import Routing, judged, routes_complete
from netarena.route.kernel_routes import KernelRoute, main_routes

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = ["settle", "ospf_busy", "kernel_routes", "Watch", "ASE_DELAY_S", "KERNEL_QUIET_S"]

ASE_DELAY_S = 1.0
"""ospfd recomputes its external routes at most this long after an SPF run (its timer
starts at the first run and is not restarted by later ones)."""
KERNEL_QUIET_S = 0.2
"""With ``idle``, how long the kernel routes must stay the same once ospfd is idle."""
WANT_EVERY_S = 0.25
"""How often the RIB is compared with ``want`` (a read of every router: about 10 ms CPU)."""


@dataclass
class Watch:
    """Kernel routes last seen, and since when they stayed so (monotonic).

    Kept between ``settle`` calls, so a quiet period can span them (``routes`` None: none
    seen yet).
    """

    routes: dict[str, list[KernelRoute]] | None = None
    since: float = 0.0


def kernel_routes(net: FrrNetwork) -> dict[str, list[KernelRoute]]:
    """Every router's main routing table over rtnetlink (in-process, well under a ms)."""
    return {r: main_routes(net.netns(r)) for r in net.ospf.routers}


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
    watch: Watch | None = None,
) -> Routing:
    """Routing once the kernel routes stopped changing for ``quiet_s``.

    Change is watched on the kernel routes (cheap); the RIB is read once they are
    quiet, and every ``WANT_EVERY_S`` when ``want`` may already be reached.

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
            plus that delay. Only for changes whose
            effects start at once (the healthy start; injections that bounce the
            interfaces they break): a neighbour broken silently goes down only at
            its dead interval, which no daemon has scheduled work for.
        watch: Where the quiet period may have begun: if the kernel routes are still
            those it saw, the quiet counts from its ``since``, not from now. Updated
            to the routes last seen here and since when.

    Raises:
        EmulatorError: It kept changing (or stayed incomplete) for ``timeout_s``.
    """
    end = time.monotonic() + timeout_s
    watch = watch if watch is not None else Watch()
    routes = kernel_routes(net)
    checked = time.monotonic()
    if routes != watch.routes:
        watch.routes, watch.since = routes, checked
    while time.monotonic() < end:
        now = time.monotonic()
        quiet = now - watch.since
        if idle:  # ospfd idle; or quiet so long that no pending recomputation is left
            settled = quiet >= quiet_s + ASE_DELAY_S or (
                quiet >= KERNEL_QUIET_S and not ospf_busy(net)
            )
        else:
            settled = quiet >= quiet_s
        if settled:
            routing = net.routing()
            if not complete or routes_complete(net.ospf, routing):
                return routing
            watch.since = now
        elif want is not None and now - checked >= WANT_EVERY_S:
            checked = now
            routing = net.routing()
            if judged(routing) == judged(want):
                return routing
        time.sleep(0.1)
        routes = kernel_routes(net)
        if routes != watch.routes:
            watch.routes, watch.since = routes, time.monotonic()
    raise EmulatorError(f"routing did not settle within {timeout_s:g}s")
