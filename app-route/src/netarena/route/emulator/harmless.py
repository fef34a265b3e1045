"""Fault-shaped objects in the design that block nothing.

A host that forwards, backup routes behind the connected ones, a host's own address under
another prefix length that still reaches everything: an agent that deletes what looks like
a fault deletes these too, and only their effect on what must work tells them apart.
"""

from __future__ import annotations

import random
from typing import Any

from netarena.route.emulator.blocking import METRICS, Record
from netarena.route.emulator.plan import NetworkPlan
from netarena.route.emulator.targets import Target, draw_record, quiet_lengths

__all__ = ["add_harmless"]

_BACKUP_COUNTS = (0, 0, 0, 0, 1, 1, 2, 3, 4)
"""Backup routes per network, so that the design's routes vary as a Poisson count: from (0,
1, 1, 1, 2), half as much, one route more marked a fault's network (0.630 → 0.575)."""
_BACKUPS = ("wrong_interface", "unreachable_gateway", "loop")
_BACKUP_WEIGHTS = (3, 1, 1)
"""How the design's backup routes leave: mostly out an interface, as faults' wrong routes
do (drawn evenly: no gateway in 67% of faults' routes against 32%)."""


def add_harmless(rng: random.Random, plan: NetworkPlan, records: list[Record],
                 quiet: list[Any], cut: set[int], ports: tuple[int, int]) -> list[Record]:
    """``records`` with the harmless objects added.

    ``quiet`` are the hosts no block keeps off (one may forward or hold its address under
    another length); ``cut`` the subnets cut off (no backup route leads there).
    """
    if quiet and rng.random() < 0.02:  # a host that forwards (it routes nothing)
        records.append(draw_record(rng, plan, Target("host", 0, rng.choice(quiet).name),
                                   "forwarding_on", ports))
    live = [s.index for s in plan.subnets if s.index not in cut]
    for _ in range(rng.choice(_BACKUP_COUNTS) if live else 0):  # behind the connected one
        subnet = rng.choice(live)
        method = rng.choices(_BACKUPS, weights=_BACKUP_WEIGHTS)[0]
        backup = draw_record(rng, plan, Target("subnet", subnet), method, ports,
                             frozenset(cut))
        metric = rng.choice(METRICS)
        if not any(r.get("dst") == backup["dst"] and r.get("metric") == metric
                   for r in records):
            records.append(backup | {"replace": False, "metric": metric})
    if quiet and rng.random() < 0.3:  # the address under another (harmless) prefix length
        host = rng.choice(quiet)
        twin = _prefix_twin(rng, plan, host.name, host.subnet)
        if twin is not None:
            records.insert(0, twin)  # first: it drops the routes through its interface
    return records


def _prefix_twin(rng: random.Random, plan: NetworkPlan, node: str, subnet: int
                 ) -> Record | None:
    """A host's own address under another prefix length that still reaches everything.

    The lengths are ``targets.quiet_lengths``; deleting the old address dropped the host's
    default route, which is put back (twins come before the other routes).
    """
    own = plan.subnet(subnet)
    fits = quiet_lengths(plan, subnet, plan.host(node).ip)
    if not fits:
        return None
    intf = plan.host(node).intf
    return {"type": "RI", "method": "wrong_prefix", "node": node, "intf": intf,
            "subnet": subnet, "value": rng.choice(fits),
            "routes": [f"default via {own.gateway} dev {intf}"]}
