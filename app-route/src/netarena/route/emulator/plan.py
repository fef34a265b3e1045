"""The network as its owners planned it: subnets, addresses and names (pure data).

A ``NetworkPlan`` is what an operator's inventory says: router ``r0`` with one interface
per subnet, one switch per subnet, and hosts with their addresses and gateway. It is drawn
from a seed (``draw_plan``: sizes, address family, prefix lengths, gateway position and
host numbering all vary) or read from a user's Mininet ``Topo`` (``topology.plan_of``), and
round-trips through JSON inside ``Query.truth``.

Names follow Mininet: hosts ``h1..hK`` numbered subnet by subnet, switches ``s1..sN``,
router interfaces ``r0-eth<i>`` facing ``s<i>``, host interfaces ``h<k>-eth0``; machines are
listed in Mininet's natural sort order (``h2`` before ``h10``, then ``r0``).
"""

from __future__ import annotations

import ipaddress
import random
import re
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

__all__ = ["Subnet", "HostPlan", "NetworkPlan", "draw_plan", "natural_key"]

ROUTER = "r0"
"""The router's node name (Mininet's ``linuxrouter`` example calls it ``r0``)."""


def natural_key(name: str) -> list[Any]:
    """Mininet's sort key for node names: ``h2`` before ``h10``."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@dataclass(frozen=True)
class Subnet:
    """One switch and the IPv4 subnet behind it."""

    index: int
    """1-based position; the switch is ``s<index>``."""
    switch: str
    """Switch name (``s1``)."""
    network: str
    """The subnet with its prefix length (``10.4.7.0/24``)."""
    router_intf: str
    """The router's interface on it (``r0-eth1``)."""
    gateway: str
    """The router's address on it (the hosts' gateway), without prefix length."""

    @cached_property
    def _net(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.network)

    @property
    def prefixlen(self) -> int:
        """Prefix length of the subnet."""
        return self._net.prefixlen

    def contains(self, ip: str) -> bool:
        """Whether ``ip`` lies in this subnet."""
        return ipaddress.IPv4Address(ip) in self._net


@dataclass(frozen=True)
class HostPlan:
    """One host: its interface, address and subnet."""

    name: str
    """Node name (``h3``)."""
    intf: str
    """Its interface toward the switch (``h3-eth0``)."""
    ip: str
    """Its address, without prefix length."""
    subnet: int
    """Index of its subnet."""


@dataclass(frozen=True)
class NetworkPlan:
    """The intended addressing of a router-and-subnets network."""

    subnets: tuple[Subnet, ...]
    """Subnets in router-interface order (the first one carries ``r0``'s main address)."""
    hosts: tuple[HostPlan, ...]
    """Hosts in natural name order."""

    @cached_property
    def nodes(self) -> tuple[str, ...]:
        """Every machine in Mininet's ``pingall`` order: hosts by natural sort, then ``r0``."""
        return tuple(sorted([*(h.name for h in self.hosts), ROUTER], key=natural_key))

    @cached_property
    def _by_name(self) -> dict[str, HostPlan]:
        return {h.name: h for h in self.hosts}

    def host(self, name: str) -> HostPlan:
        """The host called ``name``."""
        return self._by_name[name]

    def subnet(self, index: int) -> Subnet:
        """The subnet with 1-based ``index``."""
        return next(s for s in self.subnets if s.index == index)

    def hosts_in(self, index: int) -> list[HostPlan]:
        """Hosts attached to subnet ``index``."""
        return [h for h in self.hosts if h.subnet == index]

    def subnet_of_ip(self, ip: str) -> Subnet | None:
        """The subnet containing ``ip``, if any."""
        address = ipaddress.IPv4Address(ip)
        return next((s for s in self.subnets if address in s._net), None)

    @property
    def router_ip(self) -> str:
        """``r0.IP()`` in Mininet: the address of the router's first interface."""
        return self.subnets[0].gateway

    def address(self, node: str) -> str:
        """The address other machines ping to reach ``node`` (Mininet's ``node.IP()``)."""
        return self.router_ip if node == ROUTER else self.host(node).ip

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for ``Query.truth``)."""
        return {
            "subnets": [asdict(s) for s in self.subnets],
            "hosts": [asdict(h) for h in self.hosts],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NetworkPlan:
        """Inverse of ``to_dict``."""
        return cls(
            tuple(Subnet(**s) for s in data["subnets"]), tuple(HostPlan(**h) for h in data["hosts"])
        )


def _third_octets(rng: random.Random, count: int) -> list[int]:
    """Distinct third octets for ``count`` subnets: consecutive, strided or scattered."""
    style = rng.choice(("consecutive", "strided", "scattered"))
    if style == "scattered":
        return sorted(rng.sample(range(0, 255), count))
    step = 1 if style == "consecutive" else rng.choice((2, 4, 8, 10, 16, 20))
    base = rng.randrange(0, 255 - step * (count - 1))
    return [base + step * i for i in range(count)]


def _family(rng: random.Random) -> str:
    """The first two octets of a private range."""
    kind = rng.choice(("10", "172", "192"))
    if kind == "10":
        return f"10.{rng.randrange(0, 256)}"
    if kind == "172":
        return f"172.{rng.randrange(16, 32)}"
    return "192.168"


def _subnet_block(rng: random.Random, prefix: str, octet: int) -> ipaddress.IPv4Network:
    """A /24../27 block inside ``prefix.octet.0/24`` (aligned)."""
    length = rng.choices((24, 25, 26, 27), weights=(6, 2, 1, 1))[0]
    size = 1 << (32 - length)
    offset = size * rng.randrange(0, 256 // size)
    return ipaddress.IPv4Network(f"{prefix}.{octet}.{offset}/{length}")


def _host_addresses(
    rng: random.Random, block: ipaddress.IPv4Network, gateway: ipaddress.IPv4Address, count: int
) -> list[str]:
    """``count`` host addresses in ``block``, avoiding the gateway: a run with a stride."""
    usable = [a for a in block.hosts() if a != gateway]
    for _ in range(32):
        step = rng.choice((1, 1, 1, 2, 5, 10))
        if step * (count - 1) >= len(usable):
            continue
        start = rng.randrange(0, len(usable) - step * (count - 1))
        return [str(usable[start + step * i]) for i in range(count)]
    return [str(a) for a in rng.sample(usable, count)]


def draw_plan(rng: random.Random, host_counts: list[int]) -> NetworkPlan:
    """Draw an addressing plan with ``len(host_counts)`` subnets.

    Args:
        rng: The query's random source.
        host_counts: Hosts per subnet, in subnet order (at most 29 each: a /27 holds 30).

    Returns:
        The plan: a private range (10/8, 172.16/12 or 192.168/16), /24 to /27 subnets whose
        third octets run consecutively, strided or scattered, the gateway at the first or
        last usable address, and hosts numbered from a random offset with a random stride.
    """
    prefix = _family(rng)
    subnets: list[Subnet] = []
    hosts: list[HostPlan] = []
    octets = _third_octets(rng, len(host_counts))
    for i, (octet, count) in enumerate(zip(octets, host_counts, strict=True), 1):
        block = _subnet_block(rng, prefix, octet)
        while block.num_addresses - 3 < count:
            block = block.supernet()
        usable = list(block.hosts())
        gateway = usable[0] if rng.random() < 0.75 else usable[-1]
        subnets.append(Subnet(i, f"s{i}", str(block), f"{ROUTER}-eth{i}", str(gateway)))
        for ip in _host_addresses(rng, block, gateway, count):
            k = len(hosts) + 1
            hosts.append(HostPlan(f"h{k}", f"h{k}-eth0", ip, i))
    return NetworkPlan(tuple(subnets), tuple(hosts))
