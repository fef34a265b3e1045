"""The network as the prompt states it, and the flows that must pass through each machine.

``read_inventory`` reads the prompt's inventory (subnets, gateways, hosts, the restricted
subnet's peers, the router's pingall address, the service ports); ``must_work`` turns the
expected matrix into the packets each machine must let through, for the reference's
diagnosis (``repairs.py``, ``filters.py``) — what every repair is judged by.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from netarena.route.emulator.plan import NetworkPlan

__all__ = ["Inventory", "Packet", "read_inventory", "planned_inventory", "must_work", "published"]


@dataclass(frozen=True)
class Inventory:
    """What the prompt says about the network (read by the solver)."""

    subnets: dict[str, tuple[str, str, str]]
    """switch → (network, gateway, router interface)."""
    hosts: dict[str, tuple[str, str, str]]
    """host → (interface, address, switch)."""
    restricted: dict[str, list[str]]
    """restricted switch → networks its hosts are routed to."""
    router_ip: str
    """The address pingall uses for the router."""
    ports: tuple[int, int] = (5001, 5002)
    """The TCP and UDP service ports every machine listens on."""
    published: frozenset[str] = frozenset()
    """The router's addresses it forwards a service at (its NAT table, once read; the
    prompt does not say): a host holding one connects to itself instead."""

    def in_subnets(self, ip: str) -> bool:
        """Whether ``ip`` lies in one of the inventory's subnets."""
        address = ipaddress.ip_address(ip)
        return any(address in ipaddress.ip_network(n) for n, _, _ in self.subnets.values())


    def subnet_of(self, ip: str) -> str | None:
        """The switch whose subnet holds ``ip``."""
        address = ipaddress.ip_address(ip)
        return next((sw for sw, (n, _, _) in self.subnets.items()
                     if address in ipaddress.ip_network(n)), None)

    def address(self, machine: str) -> str:
        """The address the judge probes ``machine`` at (``r0``: its pingall address)."""
        return self.router_ip if machine == "r0" else self.hosts[machine][1]


_SUBNET = re.compile(r"^- (\S+): (\S+), gateway (\S+) on (\S+); hosts (.*)$")
_HOST = re.compile(r"(\S+) (\d+\.\d+\.\d+\.\d+) \((\S+)\)")
_ROUTER_IP = re.compile(r"pings r0 at (\S+) ")
_PORTS = re.compile(r"TCP service on port (\d+) and a UDP service on port (\d+)")
_RESTRICTED = re.compile(r"^- (\S+) \(\S+\) is the .*?, routed only to (.*?): its hosts")


def read_inventory(text: str) -> Inventory:
    """The network and intent as the prompt states them."""
    subnets, hosts, restricted = {}, {}, {}
    router_ip = ""
    ports = (5001, 5002)
    for line in text.splitlines():
        if m := _SUBNET.match(line):
            switch = m.group(1)
            subnets[switch] = (m.group(2), m.group(3), m.group(4))
            for name, ip, intf in _HOST.findall(m.group(5)):
                hosts[name] = (intf, ip, switch)
        elif m := _RESTRICTED.match(line):
            restricted[m.group(1)] = re.findall(r"\((\d+\.\d+\.\d+\.\d+/\d+)\)", m.group(2))
        elif m := _ROUTER_IP.search(line):
            router_ip = m.group(1)
        if m := _PORTS.search(line):
            ports = (int(m.group(1)), int(m.group(2)))
    return Inventory(subnets, hosts, restricted, router_ip, ports)


def planned_inventory(plan: NetworkPlan) -> Inventory:
    """The inventory a prompt would state for ``plan`` (for the generator's own classes)."""
    subnets = {s.switch: (s.network, s.gateway, s.router_intf) for s in plan.subnets}
    hosts = {h.name: (h.intf, h.ip, plan.subnet(h.subnet).switch) for h in plan.hosts}
    return Inventory(subnets, hosts, {}, plan.router_ip)


def published(router_read: str) -> frozenset[str]:
    """The addresses the router forwards a service at: its DNAT rules' destinations.

    Read from the ``iptables-save`` lines of the router's diagnostic output.
    """
    found = set()
    for line in router_read.splitlines():
        words = line.split()
        if "PREROUTING" in words and "DNAT" in words and "-d" in words[:-1]:
            found.add(words[words.index("-d") + 1].removesuffix("/32"))
    return frozenset(found)


@dataclass(frozen=True)
class Packet:
    """One packet of a flow that must pass, as a machine's packet filter sees it."""

    chain: str
    """``INPUT``, ``FORWARD`` or ``OUTPUT``."""
    src: str
    dst: str
    in_intf: str | None
    """Where it arrives (``None``: made by the machine itself)."""
    out_intf: str | None
    """Where it leaves (``None``: delivered to the machine itself)."""
    reply: bool
    """A reply of an established flow (else a new request)."""
    proto: str = "icmp"
    sport: int | None = None
    """Source port (``None``: ICMP, or a port no rule names)."""
    dport: int | None = None


def _paths(inv: Inventory, machine: str, src: str, dst: str
           ) -> list[tuple[str, str, str, str, str | None, str | None]]:
    """``(chain, back_chain, src_ip, dst_ip, in, out)`` of a flow through ``machine``."""
    router = machine == "r0"
    dst_ip = inv.address(dst)
    dst_sw = inv.subnet_of(dst_ip)
    if src == "r0":
        if dst_sw is None:
            return []
        src_ip, intf = inv.subnets[dst_sw][1], inv.subnets[dst_sw][2]
        if router:
            return [("OUTPUT", "INPUT", src_ip, dst_ip, None, intf)]
        if dst != machine:
            return []
        return [("INPUT", "OUTPUT", src_ip, dst_ip, inv.hosts[dst][0], None)]
    src_ip, src_sw = inv.hosts[src][1], inv.hosts[src][2]
    if not router:
        if dst == machine:
            return [("INPUT", "OUTPUT", src_ip, dst_ip, inv.hosts[machine][0], None)]
        if src == machine:
            return [("OUTPUT", "INPUT", src_ip, dst_ip, None, inv.hosts[machine][0])]
        return []
    in_intf = inv.subnets[src_sw][2]
    if dst == "r0":
        return [("INPUT", "OUTPUT", src_ip, dst_ip, in_intf, None)]
    if dst_sw is not None and dst_sw != src_sw:
        return [("FORWARD", "FORWARD", src_ip, dst_ip, in_intf, inv.subnets[dst_sw][2])]
    return []


def must_work(inv: Inventory, machine: str, pairs: set[tuple[str, str]]) -> list[Packet]:
    """The packets ``machine`` must let through.

    Both directions of every intended flow that crosses it, on ICMP and on TCP and UDP
    (the disclosed ports, and a port no rule names: the judge probes ports it does not
    announce).
    """
    found = []
    ports: dict[str, list[int | None]] = {"icmp": [None], "tcp": [inv.ports[0], None],
                                          "udp": [inv.ports[1], None]}
    for src, dst in sorted(pairs):
        for chain, back, src_ip, dst_ip, via_in, via_out in _paths(inv, machine, src, dst):
            for proto, choices in ports.items():
                for port in choices:
                    found.append(Packet(chain, src_ip, dst_ip, via_in, via_out, False, proto,
                                        None, port))
                    found.append(Packet(back, dst_ip, src_ip, via_out, via_in, True, proto,
                                        port, None))
    return found
