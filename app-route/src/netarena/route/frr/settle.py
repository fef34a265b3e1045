"""When a dynamic-routing network has settled: routing read once it stopped changing.

Change is the kernel's route notifications from every router (``RouteEvents``: no
polling), and the daemons' work ahead read over their vty sockets (``daemon_work``); FRR's
RIB is read once they are quiet. How long a break made silently may take to show is the
caller's (``silence_s``): after an agent's command, past the dead interval; for the final
score, past the longest a neighbour broken silently stays up (``OspfPlan.detect_s``).
Either ends sooner once every neighbour and BGP peer has been heard since
(``daemon_work.heard_since``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.bgp_plan import KEEPALIVE_S
from netarena.route.frr.daemon_work import bgp_work, heard_since, ospf_forming, ospf_work_due
from netarena.route.frr.routing import Routing, judged, routes_complete

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = ["settle", "ASE_DELAY_S", "KERNEL_QUIET_S", "HEARD_AFTER_S"]

ASE_DELAY_S = 1.0
"""ospfd recomputes its external routes this long after an SPF run (its timer starts at
the first run and is not restarted by later ones)."""
KERNEL_QUIET_S = 0.2
"""How long the kernel routes must stay the same once ospfd is idle (OSPF networks), and
how long after a daemon's run the routes it sent may take to reach the peers' kernels
(BGP networks)."""
INSTALL_S = 0.05
"""On OSPF networks, how long after ospfd's last scheduled run the routes it computed may take
to reach the kernel (zebra installs them within milliseconds)."""
WANT_EVERY_S = 0.25
"""How often the RIB is compared with ``want`` (a read of every router: about 10 ms CPU)."""
HEARD_AFTER_S = 0.5
"""``settle`` asks whether every OSPF neighbour was heard no sooner than this after the
moment: two hello intervals, so every live neighbour has sent one, and a new one has
shown up (forming). On BGP networks, once a keepalive interval and ``KERNEL_QUIET_S``
have passed."""
ASK_EVERY_S = 0.1
"""How often ``settle`` asks the daemons about their neighbours again while it waits for
them (to be heard, to form)."""
RECHECK_S = 0.05
"""How soon a daemon is asked again when a run it scheduled is overdue (it had no CPU yet)."""


def settle(
    net: FrrNetwork,
    quiet_s: float = 1.0,
    timeout_s: float = 12.0,
    complete: bool = False,
    want: Routing | None = None,
    since: float | None = None,
    silence_s: float = 0.0,
    forming: bool = True,
) -> Routing:
    """Routing once it stopped changing and no daemon has a run ahead that changes it.

    Change is the kernel's notifications (``net.route_events``); the RIB is read once
    they are quiet, and every ``WANT_EVERY_S`` when ``want`` may already be reached.

    On OSPF networks, routing is stable once the kernel routes stayed the same
    ``KERNEL_QUIET_S`` and no ospfd has work ahead (``ospf_work_due``), or an adjacency
    forming: a fixed quiet period shorter than ospfd's delay before external routes can
    end between an SPF run and the routes it changes (the healthy routing was once read
    there). Failing an answer, after ``quiet_s`` plus that delay.

    On BGP networks, routing must stay the same ``quiet_s`` (``silence_s`` while a
    session not up may come up: it retries each second and may succeed) and no daemon
    have a route-changing run ahead (``bgp_work``): not all of bgpd's work is on timers
    (an update on its way to a peer is not), so a quiet period stays the rule.

    Args:
        net: The network.
        quiet_s: How long routing must stay the same, seconds.
        timeout_s: Longest wait, seconds.
        complete: Also wait until every router routes to every stub and loopback.
        want: Routing to stop at as soon as it is reached.
        since: When the quiet period may have begun (monotonic; by default now): it
            counts from this or the last change, whichever is later.
        silence_s: A neighbour broken silently at ``since`` goes down only at its dead
            interval (or hold time), which no daemon has scheduled work for: never
            settled sooner than this after ``since``, however quiet, unless every OSPF
            neighbour and BGP peer has been heard since (``heard_since``). On OSPF
            networks the quiet period then counts from when the silence ended (a
            neighbour gone down at its dead interval has its SPF still ahead). On BGP
            networks the clock restarts at each route change: an iBGP session between
            loopbacks falls silent when the route to its peer goes. A ``want`` reached
            still ends the wait.
        forming: On OSPF networks, an adjacency still forming (``ospf_forming``) is work
            ahead too, until it is stuck. False after a command that changed nothing:
            what was forming at the last measurement was waited out then.

    Raises:
        EmulatorError: It kept changing (or stayed incomplete) for ``timeout_s``.
    """
    assert net.route_events is not None
    events = net.route_events
    bgp = net.ospf.routing == "bgp"
    steady: _Steady = _BgpSteady(net, quiet_s, silence_s) if bgp else _OspfSteady(
        net, quiet_s, silence_s, forming)
    heard_after = KEEPALIVE_S + KERNEL_QUIET_S if bgp else HEARD_AFTER_S
    begun = time.monotonic() if since is None else since
    end = time.monotonic() + timeout_s
    checked = time.monotonic()
    cause, heard, heard_at = -1.0, False, 0.0  # silence counted from; heard since; next ask
    while True:
        now = time.monotonic()
        changed = max(begun, events.last)
        if cause != (changed if bgp else begun):
            cause = changed if bgp else begun
            heard, heard_at = False, cause + heard_after
        silent = now < cause + silence_s and not heard
        if silent and now >= heard_at:
            heard = heard_since(net, cause)
            heard_at = time.monotonic() + ASK_EVERY_S
            silent = not heard
        if silent:
            settled, wake = False, min(cause + silence_s, max(heard_at, now + RECHECK_S))
        else:
            settled, wake = steady.poll(now, changed, begun)
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


class _Steady(Protocol):
    def poll(self, now: float, changed: float, begun: float) -> tuple[bool, float]:
        """Whether routing is steady now (the silence is over), and when to look again."""
        ...


class _OspfSteady:
    """OSPF networks: ospfd idle; or quiet so long that no pending recomputation is left."""

    def __init__(self, net: FrrNetwork, quiet_s: float, silence_s: float, forming: bool
                 ) -> None:
        self.net, self.quiet_s, self.silence_s, self.forming = net, quiet_s, silence_s, forming
        self.asked, self.pending = 0.0, False  # when to ask the daemons next; work seen
        self.opened: float | None = None  # when the silence ended (heard, or waited out)

    def poll(self, now: float, changed: float, begun: float) -> tuple[bool, float]:
        # A neighbour that went down as the silence ended (its dead interval) has its
        # recomputation still ahead however quiet the kernel was: count from then.
        if self.opened is None:
            self.opened = now if self.silence_s > 0 else begun
        quiet_from = max(changed, self.opened)
        settled = now - quiet_from >= self.quiet_s + ASE_DELAY_S
        wake = max(quiet_from + KERNEL_QUIET_S, self.asked)
        if not settled and now >= wake:
            due = ospf_work_due(self.net)
            growing = self.forming and due is None and ospf_forming(self.net)
            settled = due is None and not self.pending and not growing
            # A run seen scheduled has happened by the first poll that no longer
            # sees it: zebra gets INSTALL_S to install its routes before another.
            self.asked = time.monotonic() + (ASK_EVERY_S if growing else INSTALL_S)
            if due is not None:
                self.asked = max(due, now + RECHECK_S) + INSTALL_S
            self.pending = due is not None
            wake = max(wake, self.asked)
        return settled, wake


class _BgpSteady:
    """BGP networks: the same routes ``quiet_s`` and no route-changing run ahead."""

    def __init__(self, net: FrrNetwork, quiet_s: float, silence_s: float) -> None:
        self.net, self.quiet_s, self.silence_s = net, quiet_s, silence_s
        self.asked, self.pending = 0.0, False  # when to ask the daemons next; work seen
        self.worked = 0.0  # when the work last seen pending is done, its routes in

    def poll(self, now: float, changed: float, begun: float) -> tuple[bool, float]:
        wake = max(changed + KERNEL_QUIET_S, self.asked)
        if now < wake:
            return False, wake
        work = bgp_work(self.net)
        if work.due is not None:
            self.worked = max(work.due, now + RECHECK_S) + RECHECK_S
        elif self.pending:  # it ran: its updates may still cross to the peers' kernels
            self.worked = time.monotonic() + KERNEL_QUIET_S
        self.pending = work.due is not None
        least = max(self.quiet_s, self.silence_s) if work.opening else self.quiet_s
        ready = max(changed + least, self.worked)
        self.asked = max(ready, now + RECHECK_S)
        return not self.pending and now >= ready, self.asked
