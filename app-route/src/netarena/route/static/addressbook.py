"""What an operator knows about an address from the prompt's inventory alone.

The audit (``audit.py``) and the shape baseline describe the objects they read with classes
instead of raw identifiers, so what a classifier learns on one network applies to the next:
an address is a machine's own inventory address, another machine's, an unassigned address
of an inventory subnet, a CGNAT or bogon address...; a network is an inventory subnet, part
of one, one machine, a range covering subnets...; an interface is one the inventory names or
not; a port is one of the two the prompt discloses, well known or not. The classes come from
the prompt (``solver.read_inventory``), never from the hidden truth.
"""

from __future__ import annotations

import ipaddress
from functools import cached_property

from netarena.route.static.inventory import Inventory

__all__ = ["AddressBook"]

_CGNAT = ipaddress.IPv4Network("100.64.0.0/10")
_BOGONS = tuple(
    ipaddress.IPv4Network(n)
    for n in ("192.0.2.0/24", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
              "240.0.0.0/4", "0.0.0.0/8")
)
_PRIVATE = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12",
                                                     "192.168.0.0/16"))
_LOOPBACK = ipaddress.IPv4Network("127.0.0.0/8")


class AddressBook:
    """Classes of addresses, networks, interfaces and ports, from the prompt's inventory."""

    def __init__(self, inv: Inventory) -> None:
        self.inv = inv

    @cached_property
    def subnets(self) -> list[ipaddress.IPv4Network]:
        """The inventory's subnets."""
        return [ipaddress.IPv4Network(n) for n, _, _ in self.inv.subnets.values()]

    @cached_property
    def owners(self) -> dict[ipaddress.IPv4Address, str]:
        """Inventory address → the machine holding it (gateways: ``r0``)."""
        found = {ipaddress.IPv4Address(gw): "r0" for _, gw, _ in self.inv.subnets.values()}
        found |= {ipaddress.IPv4Address(ip): h for h, (_, ip, _) in self.inv.hosts.items()}
        return found

    @cached_property
    def interfaces(self) -> dict[str, str]:
        """Inventory interface → its machine."""
        found = {intf: "r0" for _, _, intf in self.inv.subnets.values()}
        return found | {intf: h for h, (intf, _, _) in self.inv.hosts.items()}

    def own_subnet(self, node: str) -> ipaddress.IPv4Network | None:
        """A host's subnet (``None`` for the router)."""
        if node not in self.inv.hosts:
            return None
        return ipaddress.IPv4Network(self.inv.subnets[self.inv.hosts[node][2]][0])

    def address(self, node: str, text: str) -> str:
        """Class of an address seen on ``node``: own, machine, gateway, subnet, cgnat, ...."""
        try:
            ip = ipaddress.IPv4Address(text.split("/")[0])
        except ValueError:
            return "unparsed"
        owner = self.owners.get(ip)
        if owner is not None:
            if owner == node:
                return "own"
            return "gateway" if owner == "r0" else "machine"
        if any(ip in net for net in self.subnets):
            return "subnet"
        return self._outside(ipaddress.IPv4Network(ip))

    def network(self, node: str, text: str | None) -> str:
        """Class of a network (a selector, a route's destination); ``any`` for none."""
        if text in (None, "", "all", "default", "0.0.0.0/0"):
            return "any"
        try:
            net = ipaddress.IPv4Network(str(text), strict=False)
        except ValueError:
            return "unparsed"
        if net.prefixlen == 32:
            kind = self.address(node, str(net.network_address))
            return "one-unassigned" if kind == "subnet" else f"one-{kind}"
        for subnet in self.subnets:
            if net == subnet:
                return "subnet"
            if net.subnet_of(subnet):
                return "subnet-part"
        if any(subnet.subnet_of(net) for subnet in self.subnets):
            return "covers-subnets"
        return self._outside(net)

    def prefix_delta(self, text: str | None) -> int | None:
        """Prefix length minus that of the inventory subnet the network lies in (or covers)."""
        if text in (None, "", "all", "default"):
            return None
        try:
            net = ipaddress.IPv4Network(str(text), strict=False)
        except ValueError:
            return None
        for subnet in self.subnets:
            if net.network_address in subnet or subnet.network_address in net:
                return net.prefixlen - subnet.prefixlen
        return None

    def in_own_subnet(self, node: str, text: str | None) -> bool:
        """Whether a host's network or address lies in its own subnet."""
        own = self.own_subnet(node)
        if own is None or text in (None, "", "all", "default"):
            return False
        try:
            net = ipaddress.IPv4Network(str(text), strict=False)
        except ValueError:
            return False
        return net.subnet_of(own) or own.subnet_of(net)

    def interface(self, name: str) -> str:
        """``inventory``, ``lo`` or ``other``."""
        name = name.split("@")[0].rstrip(":")
        if name == "lo":
            return "lo"
        return "inventory" if name in self.interfaces else "other"

    def port(self, text: str | None, proto: str | None = None) -> str:
        """``tcp-service``/``udp-service`` (disclosed), ``well-known``, ``registered``, ...."""
        if text is None:
            return "none"
        try:
            port = int(str(text).split(":")[0].split(",")[0])
        except ValueError:
            return "list"
        if port == self.inv.ports[0] and proto != "udp":
            return "tcp-service"
        if port == self.inv.ports[1] and proto != "tcp":
            return "udp-service"
        return "well-known" if port < 1024 else "registered" if port < 49152 else "dynamic"

    @staticmethod
    def _outside(net: ipaddress.IPv4Network) -> str:
        if net.subnet_of(_CGNAT):
            return "cgnat"
        if any(net.subnet_of(b) for b in _BOGONS):
            return "bogon"
        if net.subnet_of(_LOOPBACK):
            return "loopback"
        if any(net.subnet_of(p) for p in _PRIVATE):
            return "private"
        return "public"
