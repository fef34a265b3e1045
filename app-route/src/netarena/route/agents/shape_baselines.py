"""Agents that repair by looks alone, never reading a symptom (issue 35's shape rungs).

Both read every machine's configuration once (``readings.NODE_READ``, the read any agent
could send) and never look at the connectivity matrix:

* ``shape`` scores every statement it read with the audit's shape model
  (``netarena.common.audit.shape_model``, trained on other instances' truth, cached per
  build) and reverts or deletes each one the model flags at its 1%-false-positive cut;
* ``shape-filter`` is the hand-written filter of issue 36, which solved 135 of 135 static
  queries before the design held fault-shaped objects of its own: it resets each machine's
  links, addresses and routes to the inventory and deletes the "fault-shaped" objects
  (uncommented DROP and REJECT rules, refusing policy rules below priority 1000, DROP
  policies, empty queues, routes to inventory subnets, forwarding switched off), keeping
  the "undisclosed-shaped" ones (commented and logging rules, priorities from 1000, CGNAT
  and bogon addresses).

On a sound benchmark neither solves more than a tenth of the queries safely.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache
from typing import Any

from netarena.common.core.evidence import AuditObject
from netarena.route.base.history import Move, read_history
from netarena.route.static.addressbook import AddressBook
from netarena.route.static.inventory import Inventory, read_inventory
from netarena.route.static.readings import NODE_READ, Reading, read_objects

__all__ = ["shape_agent", "shape_filter", "SHAPE_LABELS"]

SHAPE_LABELS = ("static",)
"""The label set the shape model is trained and the rungs are measured on."""
_MACHINES = re.compile(r"machine: one of ([^.]+)\.")


def _machines(text: str) -> list[str]:
    found = _MACHINES.search(text)
    names = [m.strip() for m in found.group(1).split(",")] if found else []
    return ["r0", *[m for m in names if m != "r0"]]


def _readings(text: str) -> tuple[dict[str, list[Reading]], set[str], AddressBook]:
    """What each machine's read showed, which machines got their fix, and the inventory."""
    book = AddressBook(read_inventory(text))
    read: dict[str, list[Reading]] = {}
    fixed: set[str] = set()
    for entry in read_history(text):
        if entry.command == NODE_READ:
            read[entry.machine] = read_objects(entry.machine, entry.output, book)
        else:
            fixed.add(entry.machine)
    return read, fixed, book


@cache
def _model() -> Any:
    from netarena.common.audit import shape_model
    from netarena.common.core.app import load_app

    return shape_model(load_app("route"), labels=SHAPE_LABELS)


def _next(text: str, fixes: Any) -> Move | None:
    """Read every machine, then send each machine's fixes once; ``None`` when done."""
    machines = _machines(text)
    read, fixed, book = _readings(text)
    for machine in machines:
        if machine not in read:
            return machine, NODE_READ
    plan = fixes(read, book)
    for machine in machines:
        if plan.get(machine) and machine not in fixed:
            return machine, "; ".join(plan[machine])
    return None


def _flagged(read: dict[str, list[Reading]], _book: AddressBook) -> dict[str, list[str]]:
    objects = [(m, r) for m, found in read.items() for r in found]
    audit = [AuditObject(kind=r.kind, fields=r.fields, fault=False) for _, r in objects]
    flags = _model().flags(audit)
    plan: dict[str, list[str]] = {}
    for (machine, reading), flag in zip(objects, flags, strict=True):
        if flag and reading.command:
            plan.setdefault(machine, []).append(reading.command)
    return plan


def shape_agent(text: str) -> Move | None:
    """The ``shape`` rung: revert what the audit's shape model flags (never a symptom)."""
    return _next(text, _flagged)


def _fault_shaped(reading: Reading) -> bool:
    f = reading.fields
    inventory = {"subnet", "subnet-part", "one-machine", "one-unassigned", "one-gateway"}
    if reading.kind == "filter_block":
        return f.get("comment") == "none" and not f.get("limit")
    if reading.kind == "ip_rule_refuse":
        return int(f.get("pref") or 0) < 1000
    if reading.kind in ("chain_policy", "qdisc_block"):
        return reading.kind == "chain_policy" or bool(f.get("empty"))
    if reading.kind == "route_unicast":
        return f.get("destination") in inventory or f.get("via") == "subnet"
    if reading.kind == "address":
        return f.get("address") not in ("cgnat", "bogon", "public")
    if reading.kind == "sysctl_forwarding":
        return f.get("role") == "router"
    return False


def _reset(machine: str, inv: Inventory) -> list[str]:
    """The machine's links, addresses and routes as the inventory states them."""
    out = []
    if machine == "r0":
        for net, gateway, intf in inv.subnets.values():
            length = ipaddress.ip_network(net).prefixlen
            out += [f"ip link set {intf} up mtu 1500",
                    f"ip addr replace {gateway}/{length} brd + dev {intf}",
                    f"ip route replace {net} dev {intf}"]
        return out
    intf, ip, switch = inv.hosts[machine]
    net, gateway, _ = inv.subnets[switch]
    length = ipaddress.ip_network(net).prefixlen
    out += [f"ip link set {intf} up mtu 1500", f"ip addr replace {ip}/{length} brd + dev {intf}",
            f"ip route replace {net} dev {intf}"]
    for target in inv.restricted.get(switch, ["default"]):
        out.append(f"ip route replace {target} via {gateway} dev {intf}")
    return out


def _filtered(read: dict[str, list[Reading]], book: AddressBook) -> dict[str, list[str]]:
    plan = {}
    for machine, found in read.items():
        deletes = [r.command for r in found if _fault_shaped(r) and r.command]
        plan[machine] = [*(c for c in deletes if "link set" not in c), *_reset(machine, book.inv)]
    return plan


def shape_filter(text: str) -> Move | None:
    """The ``shape-filter`` rung: issue 36's hand-written filter (see the module docstring)."""
    return _next(text, _filtered)
