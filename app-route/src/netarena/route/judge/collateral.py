"""Collateral damage: what an episode changed outside its faults' footprint.

Three states of every node are compared (``nodestate.py``): the healthy one (read right
after the network, its intent and its undisclosed configuration were built), the faulted
one (right after injection) and the final one. The **footprint** is what the injection
changed: the objects it added, removed or modified, and their containers (the chain a
filter fault wrote to, the interface whose addresses it touched, the destination whose
routes it changed, the policy rules). Inside the footprint the agent may repair as it
likes (another metric, ``replace`` for ``add``, REJECT for a DROP, an accept rule instead
of a policy): the flow judge decides whether that repair is correct. Outside it, every
object of the healthy state that is lost or changed, and every new object that can change
a packet's fate, is collateral (rules that only count or log are not).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from netarena.route.linux.nodestate import NodeState, container, describe, inert

__all__ = ["Footprint", "footprint", "collateral"]

_SHOWN = 160


@dataclass(frozen=True)
class Footprint:
    """What the faults changed, per node."""

    keys: dict[str, frozenset[str]] = field(default_factory=dict)
    """Objects the injection added, removed or changed."""
    containers: dict[str, frozenset[str]] = field(default_factory=dict)
    """Their containers: a repair may add, remove or change anything inside them."""

    def covers(self, node: str, key: str) -> bool:
        """Whether ``key`` on ``node`` lies inside the footprint."""
        return key in self.keys.get(node, frozenset()) or container(key) in self.containers.get(
            node, frozenset()
        )


def _changed(before: NodeState, after: NodeState) -> set[str]:
    return {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}


def footprint(healthy: dict[str, NodeState], faulted: dict[str, NodeState]) -> Footprint:
    """The footprint of the injection that turned ``healthy`` into ``faulted``."""
    keys = {node: frozenset(_changed(healthy[node], faulted[node])) for node in healthy}
    containers = {node: frozenset(container(k) for k in found) for node, found in keys.items()}
    return Footprint(keys, containers)


def _short(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _connected(key: str, after: NodeState, inside: Footprint, node: str) -> bool:
    """Whether an added route is the connected route of an address the faults touched.

    An address put back under the inventory's prefix brings its own route.
    """
    words = key.split()
    value = after.get(key, "").split()
    if words[:2] != ["route", "main"] or words[-2:] != ["metric", "0"] or value[:2] != [
            "unicast", "dev"] or len(value) != 3:
        return False
    dev = value[2]
    if not inside.covers(node, f"addr {dev} -"):
        return False
    return any(
        k.startswith(f"addr {dev} ") and _network(k.split()[2]) == words[2] for k in after
    )


def _network(cidr: str) -> str:
    try:
        return str(ipaddress.ip_network(cidr, strict=False))
    except ValueError:
        return ""


def collateral(
    healthy: dict[str, NodeState], final: dict[str, NodeState], inside: Footprint
) -> list[str]:
    """Every object outside ``inside`` that ``final`` lost, changed, or added with an effect.

    Returns:
        One description per object (``h3: lost addr h3-eth0 100.64.7.9/32``), in node
        order; empty when nothing outside the footprint differs.
    """
    found = []
    for node, before in healthy.items():
        after = final.get(node, {})
        for key in sorted(_changed(before, after)):
            if inside.covers(node, key):
                continue
            what = describe(key)
            if key not in after:
                found.append(_short(f"{node}: lost {what}"))
            elif key not in before:
                if not inert(key) and not _connected(key, after, inside, node):
                    found.append(_short(f"{node}: added {what} {after[key]}".rstrip()))
            else:
                found.append(_short(f"{node}: changed {what}: {before[key]} -> {after[key]}"))
    return found
