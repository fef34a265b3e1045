"""Path intent, checked with real probes: the routers a flow's packets cross, by traceroute.

The ticket names flows that must follow their designed path. Equal routing tables imply
equal paths, but the judge does not take that on trust: once routing equals the healthy
routing, it traces each named flow from its source host (``traceroute``, run by the judge in
the host's namespace, never in the agent's sandbox) and maps every hop's address to the
machine that owns it. A hop that does not answer is traced again; a path with a silent hop
after the last try is unknown, which does not count as held.
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from netarena.common.core.errors import EmulatorError
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.routing import Routing

if TYPE_CHECKING:
    from netarena.route.emulator.live import LiveNetwork

__all__ = ["Path", "owners", "traced_path", "fib_path"]

Path = tuple[str, ...]
"""The routers a flow crosses, in order."""

TRIES = 3
"""Traces of one flow before a silent hop makes its path unknown."""
_HOP = re.compile(r"^\s*\d+\s+(\S+)")


def owners(plan: OspfPlan) -> dict[str, str]:
    """Address → the machine it belongs to (link ends, stub gateways, loopbacks, hosts)."""
    found = {ip: node for node, ip in plan.loopbacks.items()}
    for link in plan.links:
        found[link.a_ip], found[link.b_ip] = link.a, link.b
    for stub in plan.stubs:
        found[stub.gateway], found[stub.host_ip] = stub.router, stub.host
    return found


def _trace(net: LiveNetwork, plan: OspfPlan, src: str, dst: str) -> list[str]:
    """One trace: each hop's machine, ``*`` for silence, ``?`` for an address not ours."""
    argv = ["traceroute", "-n", "-q", "1", "-w", "1", "-m", "12", plan.address(dst)]
    try:
        output = net.exec(src, argv, timeout_s=15.0).output
    except EmulatorError:
        return ["*"]
    where = owners(plan)
    hops = [m.group(1) for line in output.splitlines()[1:] if (m := _HOP.match(line))]
    return [hop if hop == "*" else where.get(hop, "?") for hop in hops]


def traced_path(net: LiveNetwork, plan: OspfPlan, src: str, dst: str) -> Path | None:
    """The routers between host ``src`` and host ``dst``, probed; ``None`` when unknown.

    Unknown: a hop stayed silent in every try, or the trace never reached ``dst``.
    """
    for _ in range(TRIES):
        hops = _trace(net, plan, src, dst)
        if "*" not in hops and hops and hops[-1] == dst:
            return tuple(hops[:-1])
    return None


def fib_path(plan: OspfPlan, routing: Routing, src: str, dst_ip: str) -> list[str]:
    """The routers a packet from router ``src`` to ``dst_ip`` crosses, per the kernel FIBs."""
    owner = {
        ip: link.b if ip == link.b_ip else link.a
        for link in plan.links
        for ip in (link.a_ip, link.b_ip)
    }
    address = ipaddress.IPv4Address(dst_ip)
    path, node = [src], src
    while len(path) <= len(plan.routers):
        best = None
        for key, value in routing.get(node, {}).items():
            if key.startswith("hop ") and key[4:] != "default":
                net = ipaddress.IPv4Network(key[4:], strict=False)
                if address in net and (best is None or net.prefixlen > best[0].prefixlen):
                    best = (net, value)
        if best is None:
            return [*path, "(no route)"]
        hops = best[1].split(",")
        gateway = hops[0].split("@")[0]
        if gateway == "direct":
            return path
        node = owner.get(gateway, gateway)
        path.append(node)
    return [*path, "(loop)"]
