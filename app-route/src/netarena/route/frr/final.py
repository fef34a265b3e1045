"""Before the final score, the network shows what its configuration will do.

A configuration can look repaired and still hold a break for later: a route-map edited
under a long ``bgp route-map delay-timer``, an update held back by a timer, a prefix
limit below what the peer sends that trips at the next update, an SPF throttled for
minutes. The judge runs what such timers and events would run, now:

1. **soft**: every BGP session's policy is applied again, inbound and outbound
   (``clear bgp * soft``): route-map and prefix-list edits pending behind any delay
   timer take effect;
2. **hard**: every BGP session and every OSPF process is reset (``clear bgp *``,
   ``clear ip ospf process``) and the network is measured again once it converged.

And a limit still configured below what its peer sends (a ``maximum-prefix`` that is not
``warning-only``, with more prefixes accepted) will trip again: it is read, not waited for.
These are the judge's own commands, after the agent's last one; they change no
configuration, so the collateral diff reads what the agent left.
"""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.adjacencies import Adjacencies, read_adjacencies
from netarena.route.frr.routing import Routing, moved_routes
from netarena.route.frr.settle import settle

if TYPE_CHECKING:
    from netarena.route.frr.network import FrrNetwork

__all__ = ["soft_reset", "hard_reset", "tripping_limits", "RECONVERGE_S"]

log = logging.getLogger(__name__)

RECONVERGE_S = 12.0
"""How long the network has to converge again after the judge's resets."""
LATE_S = 15.0
"""How much longer routes there before the resets may take to come back as they were (late
on a loaded machine: 5 s was too short with eight emulators on two cores) before the
network is judged without them. Only a network missing some, or holding some over another
path (an adjacency still loading its database), waits it."""
LATE_EVERY_S = 0.25
"""How often the routes are read while waiting for them."""
SOFT_QUIET_S = 0.5
"""Routing must stay the same this long after the soft reset (no session flaps)."""
RESET_QUIET_S = 1.2
"""Routing must stay the same this long once every adjacency came back after the hard
reset (OSPF networks also wait for ospfd to be idle)."""


def _each(net: FrrNetwork, commands: list[tuple[str, str]]) -> None:
    """Run trusted vtysh commands on every router, each ``(daemon, command)`` it runs."""

    def run(router: str) -> None:
        for daemon, command in commands:
            if daemon in net.ospf.daemons:
                net.vtysh(router, command)

    list(net.pool.map(run, net.ospf.routers))


def soft_reset(net: FrrNetwork) -> Routing:
    """Apply every BGP policy again (pending route-map edits included) and settle.

    Raises:
        EmulatorError: A router did not take the command, or routing did not settle.
    """
    _each(net, [("bgpd", "clear bgp * soft")])
    return settle(net, SOFT_QUIET_S, RECONVERGE_S)


def _back(before: Adjacencies, now: Adjacencies, moment: float) -> bool:
    """Whether every adjacency and session up ``before`` came up again after ``moment``."""
    return before.up <= now.up and all(
        now.established.get(p, 0) > before.established.get(p, 0)
        if p[1].startswith("BGP ")
        else now.since[p][1] >= moment
        for p in before.up
    )


def hard_reset(net: FrrNetwork, before: Adjacencies, routing: Routing) -> Routing:
    """Reset every BGP session and OSPF process; routing once all came back and settled.

    Args:
        net: The network.
        before: The adjacencies and sessions up before the reset: routing is read once
            each came up again after it (or ``RECONVERGE_S`` passed), then stopped
            changing.
        routing: The routing before the reset: a route it held and the settled routing
            lacks, or holds otherwise, gets ``LATE_S`` more to come back as it was (on a
            loaded machine a daemon may be late, and a reader must not be judged to have
            lost or moved it).

    Raises:
        EmulatorError: A router did not take the command, or routing did not settle.
    """
    moment = time.monotonic()
    _each(net, [("bgpd", "clear bgp *"), ("ospfd", "clear ip ospf process")])
    end = moment + RECONVERGE_S
    while time.monotonic() < end:
        if _back(before, read_adjacencies(net, net.ospf), moment):
            break
        time.sleep(0.1)
    else:
        log.info("%s: adjacencies did not all come back after the reset", net.prefix)
    after = settle(net, RESET_QUIET_S, RECONVERGE_S, since=time.monotonic())
    late = time.monotonic() + LATE_S
    while moved_routes(routing, after) and time.monotonic() < late:
        time.sleep(LATE_EVERY_S)
        after = net.routing()
    if moved_routes(routing, after):
        return after
    try:  # back: read it once it stopped changing again
        return settle(net, RESET_QUIET_S, RECONVERGE_S)
    except EmulatorError:
        return after


def tripping_limits(net: FrrNetwork) -> list[str]:
    """Prefix limits that shut their session down at the next update: more accepted than allowed.

    Raises:
        EmulatorError: A router's neighbours could not be read (the judge fails closed).
    """
    found = []
    for router in net.ospf.routers:
        if "bgpd" not in net.ospf.daemons:
            break
        try:
            data = json.loads(net.show(router, "bgpd", "show bgp neighbors json"))
        except ValueError as exc:
            raise EmulatorError(f"{router}: unreadable BGP neighbours: {exc}") from exc
        for address, entry in data.items():
            family = (entry.get("addressFamilyInfo") or {}).get("ipv4Unicast") or {}
            limit = family.get("prefixAllowedMax")
            if limit is None or family.get("prefixAllowedMaxWarning"):
                continue
            if int(family.get("acceptedPrefixCounter", 0)) > int(limit):
                found.append(f"{router}: neighbor {address} maximum-prefix {limit} exceeded")
    return found
