"""The footprint of FRR faults: the fault's own objects, never a whole section.

A router's FRR configuration is read as objects ``frr <section> <line>``
(``routing.config_objects``). What a repair may rewrite freely once a fault touched it is
the fault's own object, not the section around it:

* an interface's OSPF parameter (``ip ospf cost`` of ``r2-eth1``: every line setting it);
* one BGP neighbour (every ``neighbor ADDR ...`` line of the ``router bgp`` section) or
  one ``network`` statement;
* a prefix-list or a route-map, by name (every entry of it);
* a ``router ospf`` line by its command (``redistribute connected``);
* anything else, the line itself.

A fault on a link (a mismatch between its ends) has the link for its object: the same
parameter at the other end, and the other end's kernel link (its MTU), so the repair may
be made at either end; the judge decides by behaviour whether it is right. A fault on a
BGP session likewise has the session: the neighbour at its other end too. Outside the
footprint, any change is collateral: a timer, a delay, a limit, a dampening setting, a
global line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.plan import OspfPlan
from netarena.route.judge.collateral import Footprint, footprint
from netarena.route.linux.nodestate import NodeState, container

__all__ = ["frr_container", "FrrFootprint", "frr_footprint", "masked"]


def frr_container(key: str) -> str:
    """What a repair may rewrite freely once a fault touched the FRR object ``key``."""
    words = key.split(" ")
    if len(words) < 3:
        return key
    section, line = words[1], words[2:]
    if section.startswith("route-map/"):
        return "frr " + "/".join(section.split("/")[:2])
    if section.startswith("interface-") and line[:2] == ["ip", "ospf"] and len(line) > 2:
        return f"frr {section} ip ospf {line[2]}"
    if section.startswith("router-bgp"):
        if line[0] == "neighbor" and len(line) > 1:
            return f"frr {section} neighbor {line[1]}"
        return key
    if section == "router-ospf":
        return f"frr {section} {' '.join(line[:2])}"
    if section == "global" and line[:2] == ["ip", "prefix-list"] and len(line) > 2:
        return f"frr global ip prefix-list {line[2]}"
    return key


@dataclass(frozen=True)
class FrrFootprint(Footprint):
    """A footprint whose FRR objects are contained per object (``frr_container``)."""

    def covers(self, node: str, key: str) -> bool:
        """Whether ``key`` on ``node`` lies inside the footprint."""
        if not key.startswith("frr "):
            return super().covers(node, key)
        return key in self.keys.get(node, frozenset()) or frr_container(
            key
        ) in self.containers.get(node, frozenset())


def _of(key: str) -> str:
    return frr_container(key) if key.startswith("frr ") else container(key)


def frr_footprint(
    plan: OspfPlan,
    healthy: dict[str, NodeState],
    faulted: dict[str, NodeState],
    faults: list[dict[str, Any]],
) -> FrrFootprint:
    """The footprint of the injection that turned ``healthy`` into ``faulted``.

    Faults on a link also cover the same parameter at the link's other end (and its
    kernel link), so a mismatch may be mended at either end. A link's MTU fault also
    covers ``ip ospf mtu-ignore`` at both ends: it hides the mismatch (``masked``
    keeps it from counting as the repair) but breaks nothing else, so it is not collateral.
    """
    base = footprint(healthy, faulted)
    keys = {node: set(found) for node, found in base.keys.items()}
    containers = {node: {_of(k) for k in found} for node, found in keys.items()}
    for fault in faults:
        if fault.get("session") is not None and isinstance(plan, BgpPlan):
            session = plan.sessions[fault["session"]]
            peer = session.peer(fault["router"])
            containers.setdefault(peer, set()).add(
                f"frr router-bgp-{plan.asn[peer]} neighbor {session.addr(fault['router'])}"
            )
        if fault.get("link") is None or fault.get("intf") is None:
            continue
        link = plan.links[fault["link"]]
        router = fault["router"]
        peer = link.peer(router)
        intf, _ = link.end(router)
        peer_intf, _ = link.end(peer)
        for held in list(containers.get(router, ())):
            if held.startswith(f"frr interface-{intf} "):
                containers.setdefault(peer, set()).add(
                    held.replace(f"interface-{intf} ", f"interface-{peer_intf} ", 1)
                )
        if any(k == f"link {intf}" for k in keys.get(router, ())):
            keys.setdefault(peer, set()).add(f"link {peer_intf}")
            for node, end in ((router, intf), (peer, peer_intf)):  # hides it: not unsafe
                containers.setdefault(node, set()).add(f"frr interface-{end} ip ospf mtu-ignore")
    return FrrFootprint(
        {n: frozenset(k) for n, k in keys.items()},
        {n: frozenset(c) for n, c in containers.items()},
    )


def _mtu(state: NodeState, intf: str) -> str | None:
    words = state.get(f"link {intf}", "").split()
    return words[words.index("mtu") + 1] if "mtu" in words[:-1] else None


def masked(plan: OspfPlan, healthy: dict[str, NodeState], now: dict[str, NodeState]) -> list[str]:
    """Links whose ends' MTUs agree in the healthy network and differ now.

    OSPF refuses such a link until the MTUs agree; ``ip ospf mtu-ignore`` brings the
    adjacency up over the mismatch, and every small packet passes, but frames the larger
    end sends beyond the smaller end's MTU are lost: the fault is hidden, not repaired.
    """
    found = []
    for link in plan.links:
        ends = [(link.a, link.a_intf), (link.b, link.b_intf)]
        was = [_mtu(healthy.get(n, {}), i) for n, i in ends]
        got = [_mtu(now.get(n, {}), i) for n, i in ends]
        if was[0] == was[1] and got[0] != got[1]:
            (a, i), (b, j) = ends
            found.append(f"{a} {i} mtu {got[0]} / {b} {j} mtu {got[1]}")
    return found
