"""Mininet topologies: the built-in ``RouterTopo`` and reading any user ``Topo`` as a plan.

``RouterTopo`` is Mininet's ``linuxrouter`` example generalised: a ``LinuxRouter`` node
``r0`` linked to one switch per subnet, each switch linked to that subnet's hosts, every
host with a default route via the router. A user may bring their own ``Topo`` class
(``--param topo=module:Class`` or ``path/to/file.py:Class``): any topology of that shape
works (a router ``r0`` whose links each lead to one switch, hosts with an ``ip`` parameter
hanging off the switches); ``plan_of`` reads it back as a ``NetworkPlan`` so faults,
intents and probes work on it unchanged.
"""

from __future__ import annotations

import importlib
import importlib.util
import ipaddress
import os
import re
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

with warnings.catch_warnings():  # mininet imports distutils, which warns on Python 3.11
    warnings.simplefilter("ignore")
    from mininet.link import Intf
    from mininet.net import Mininet
    from mininet.node import Node
    from mininet.nodelib import LinuxBridge
    from mininet.topo import Topo
    from mininet.util import macColonHex

from netarena.common.core.errors import ConfigError
from netarena.common.core.types import Query
from netarena.route.emulator.intent import Intent
from netarena.route.emulator.plan import ROUTER, HostPlan, NetworkPlan, Subnet, natural_key

__all__ = [
    "LinuxRouter", "Bridge", "Intf", "Mininet", "Topo", "RouterTopo", "plan_of",
    "load_topo_class", "topology_of",
]

_SPEC = re.compile(r"^(?P<module>[A-Za-z_][\w.]*|[^:]+\.py):(?P<cls>[A-Za-z_]\w*)$")


class LinuxRouter(Node):
    """A node with IP forwarding on (as in Mininet's ``examples/linuxrouter.py``)."""

    def config(self, **params: Any) -> Any:
        """Configure addresses as any node, then turn forwarding on."""
        result = super().config(**params)
        self.cmd("sysctl -w net.ipv4.ip_forward=1")
        return result


class Bridge(LinuxBridge):
    """Mininet's ``LinuxBridge`` (``--switch lxbr``), started with one shell command.

    ``LinuxBridge.start`` spends nine round trips to the switch's shell on a bridge that
    does not exist yet in a fresh namespace; this does the same ``brctl`` work in one.
    """

    def start(self, _controllers: list[Any]) -> None:
        """Create the bridge, add this switch's ports, bring it up (no STP)."""
        ports = [str(i) for i in self.intfList() if self.name in i.name]
        self.cmd(f"brctl addbr {self} && brctl addif {self} {' '.join(ports)}")
        self.cmd(f"ifconfig {self} up")


class RouterTopo(Topo):
    """Router ``r0`` and one switch per subnet of ``plan``, hosts behind the switches."""

    def build(self, plan: NetworkPlan) -> None:
        """Add the nodes and links of ``plan`` (Mininet calls this from ``__init__``).

        MAC addresses follow ``Mininet(autoSetMacs=True)``: the k-th machine in natural
        order gets ``00:00:00:00:00:0k`` on its first interface. They are given to the
        links rather than set afterwards, which would take each interface down and up
        again and make the bridge forget the port a moment later.
        """
        mac = {name: macColonHex(k) for k, name in enumerate(plan.nodes, 1)}
        first = plan.subnets[0]
        router = self.addNode(ROUTER, cls=LinuxRouter, ip=f"{first.gateway}/{first.prefixlen}")
        for subnet in plan.subnets:
            switch = self.addSwitch(subnet.switch)
            self.addLink(
                switch,
                router,
                intfName2=subnet.router_intf,
                addr1=_port_mac() if subnet is first else None,
                addr2=mac[ROUTER] if subnet is first else None,
                params2={"ip": f"{subnet.gateway}/{subnet.prefixlen}"},
            )
            for host in plan.hosts_in(subnet.index):
                self.addHost(
                    host.name,
                    ip=f"{host.ip}/{subnet.prefixlen}",
                    defaultRoute=f"via {subnet.gateway}",
                )
                self.addLink(
                    host.name, switch, intfName1=host.intf, addr1=mac[host.name], addr2=_port_mac()
                )


def _port_mac() -> str:
    """A random locally administered MAC, as the kernel gives a switch port."""
    octets = bytearray(os.urandom(6))
    octets[0] = (octets[0] & 0xFE) | 0x02
    return ":".join(f"{b:02x}" for b in octets)


def load_topo_class(spec: str) -> type[Topo]:
    """Import ``module:Class`` or ``path/to/file.py:Class``; it must subclass ``Topo``.

    Raises:
        ConfigError: Malformed spec, import failure, or not a ``Topo`` subclass.
    """
    match = _SPEC.match(spec.strip())
    if match is None:
        raise ConfigError(f"topo must be 'module:Class' or 'file.py:Class', not {spec!r}")
    module_name, cls_name = match.group("module"), match.group("cls")
    try:
        if module_name.endswith(".py"):
            path = Path(module_name).expanduser().resolve()
            loader = importlib.util.spec_from_file_location(f"netarena_topo_{path.stem}", path)
            if loader is None or loader.loader is None:
                raise ConfigError(f"cannot load topology file {path}")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except (ImportError, OSError, SyntaxError) as exc:
        raise ConfigError(f"cannot import topology {spec!r}: {exc}") from exc
    cls = getattr(module, cls_name, None)
    if not (isinstance(cls, type) and issubclass(cls, Topo)):
        raise ConfigError(f"{spec!r} is not a mininet.topo.Topo subclass")
    return cls


def _intf_name(topo: Topo, node: str, other: str, info: dict[str, Any]) -> str:
    """The interface ``node`` gets on its link to ``other`` (Mininet's naming)."""
    side = "1" if info["node1"] == node else "2"
    return info.get(f"intfName{side}") or f"{node}-eth{info[f'port{side}']}"


def _intf_ip(topo: Topo, node: str, info: dict[str, Any], first: bool) -> str | None:
    side = "1" if info["node1"] == node else "2"
    ip = (info.get(f"params{side}") or {}).get("ip")
    if ip is None and first:
        ip = topo.nodeInfo(node).get("ip")
    return ip


def _router_links(topo: Topo) -> list[tuple[int, str, str, str]]:
    """``(port, switch, interface, address/len)`` of each router link, in port order."""
    links = []
    for a, b, info in topo.links(sort=True, withInfo=True):
        if ROUTER not in (a, b):
            continue
        other = b if a == ROUTER else a
        if not topo.isSwitch(other):
            raise ConfigError(f"router link to {other}: each router link must lead to a switch")
        port = info["port1"] if info["node1"] == ROUTER else info["port2"]
        links.append((port, other, _intf_name(topo, ROUTER, other, info), info))
    links.sort()
    result = []
    for rank, (port, switch, intf, info) in enumerate(links):
        ip = _intf_ip(topo, ROUTER, info, first=rank == 0)
        if ip is None or "/" not in ip:
            raise ConfigError(f"router interface {intf} needs an 'ip' parameter like 10.0.1.1/24")
        result.append((port, switch, intf, ip))
    return result


def plan_of(topo: Topo) -> NetworkPlan:
    """Read a router-and-subnets ``Topo`` as the plan faults and probes work on.

    Raises:
        ConfigError: The topology is not of that shape (no ``r0``, a router link that does
            not end at a switch, a host without an address in its switch's subnet, ...).
    """
    if ROUTER not in topo.nodes():
        raise ConfigError(f"a route topology needs a router node named {ROUTER!r}")
    subnets: list[Subnet] = []
    hosts: list[HostPlan] = []
    seen: set[str] = set()
    for index, (_, switch, intf, cidr) in enumerate(_router_links(topo), 1):
        iface = ipaddress.ip_interface(cidr)
        subnet = Subnet(index, switch, str(iface.network), intf, str(iface.ip))
        subnets.append(subnet)
        for a, b, info in topo.links(sort=True, withInfo=True):
            if switch not in (a, b) or ROUTER in (a, b):
                continue
            host = b if a == switch else a
            if topo.isSwitch(host):
                raise ConfigError(f"switch {switch} links to switch {host}: one switch per subnet")
            if host in seen:
                raise ConfigError(f"host {host} has more than one link")
            seen.add(host)
            cidr_h = topo.nodeInfo(host).get("ip")
            if not cidr_h or ipaddress.ip_interface(cidr_h).network != iface.network:
                raise ConfigError(f"host {host} needs an 'ip' parameter inside {iface.network}")
            address = str(ipaddress.ip_interface(cidr_h).ip)
            hosts.append(HostPlan(host, _intf_name(topo, host, switch, info), address, index))
    if not hosts:
        raise ConfigError("the topology has no hosts behind the router's switches")
    missing = [h for h in topo.hosts() if h != ROUTER and h not in seen]
    if missing:
        raise ConfigError(f"hosts not behind a router switch: {', '.join(missing)}")
    hosts.sort(key=lambda h: natural_key(h.name))
    return NetworkPlan(tuple(subnets), tuple(hosts))


def topology_of(query: Query) -> tuple[NetworkPlan, Intent, Callable[[], Topo]]:
    """The plan, intent and a topology factory of a generated query.

    Raises:
        ConfigError: A user topology no longer matches the plan it was generated with.
    """
    plan = NetworkPlan.from_dict(query.truth["plan"])
    intent = Intent.from_dict(query.truth["intent"])
    spec = query.truth.get("topo")
    if spec is None:
        return plan, intent, partial(RouterTopo, plan)
    cls = load_topo_class(spec)
    if plan_of(cls()) != plan:
        raise ConfigError(f"topology {spec} changed since the query was generated")
    return plan, intent, partial(cls)
