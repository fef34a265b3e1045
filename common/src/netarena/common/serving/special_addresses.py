"""Addresses a green server never connects to: special-purpose blocks and cloud services.

The table follows IANA's special-purpose address registries (``iana-ipv4-special-registry``
and ``iana-ipv6-special-registry``): every block whose "Globally Reachable" entry is not
``True`` is listed, except loopback and private networks (RFC 1918, IPv6 unique local),
which is where purple agents live (the AgentBeats gateway's loopback proxy, compose
networks). Multicast, the limited broadcast address and the reserved ``240.0.0.0/4`` are
added: none of them is a host. A few globally reachable assignments inside a listed block
(the anycast services in ``192.0.0.0/24`` and ``2001::/23``) are refused with it: they are
protocol services, never an agent.

Separately, the addresses of cloud metadata and wire-server endpoints: some are public
(Azure's WireServer at 168.63.129.16) or unique-local (AWS's ``fd00:ec2::254``), so no block
rule catches them.

IPv6 forms that carry an IPv4 address (IPv4-mapped, 6to4, NAT64, Teredo) are judged by
the IPv4 address they carry, where a connection could end up.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

__all__ = ["SpecialBlock", "SPECIAL_BLOCKS", "SERVICE_ADDRESSES", "special_block",
           "service_address", "embedded_ipv4"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class SpecialBlock:
    """One refused block."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    name: str
    """What the registry calls it."""
    host_like: bool = True
    """Whether a host could sit there on some network (an explicit allowlist entry may
    then admit it, e.g. ``100.64.0.0/10`` for a carrier-grade NAT or Tailscale network);
    ``False`` for link-local, multicast, unspecified and broadcast, never admitted."""


def _b(network: str, name: str, host_like: bool = True) -> SpecialBlock:
    return SpecialBlock(ipaddress.ip_network(network), name, host_like)


SPECIAL_BLOCKS: tuple[SpecialBlock, ...] = (
    _b("0.0.0.0/8", "'this network' (unspecified)", False),
    _b("100.64.0.0/10", "shared address space (carrier-grade NAT)"),
    _b("169.254.0.0/16", "link-local", False),
    _b("192.0.0.0/24", "IETF protocol assignments"),
    _b("192.0.2.0/24", "documentation (TEST-NET-1)"),
    _b("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    _b("198.18.0.0/15", "benchmarking"),
    _b("198.51.100.0/24", "documentation (TEST-NET-2)"),
    _b("203.0.113.0/24", "documentation (TEST-NET-3)"),
    _b("224.0.0.0/4", "multicast", False),
    _b("240.0.0.0/4", "reserved"),
    _b("255.255.255.255/32", "limited broadcast", False),
    _b("::/128", "unspecified", False),
    _b("::/96", "deprecated IPv4-compatible"),
    _b("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
    _b("100::/64", "discard-only"),
    _b("100:0:0:1::/64", "dummy IPv6 prefix"),
    _b("2001::/23", "IETF protocol assignments (Teredo, ORCHID, ...)"),
    _b("2001:db8::/32", "documentation"),
    _b("3fff::/20", "documentation"),
    _b("5f00::/16", "segment routing (SRv6) SIDs"),
    _b("fe80::/10", "link-local", False),
    _b("fec0::/10", "deprecated site-local"),
    _b("ff00::/8", "multicast", False),
)
"""Refused blocks (loopback and private networks are not among them)."""


SERVICE_ADDRESSES: dict[IPAddress, str] = {
    ipaddress.ip_address(a): what for a, what in (
        ("169.254.169.254", "cloud metadata (AWS, GCP, Azure, OpenStack, Oracle, ...)"),
        ("169.254.170.2", "cloud metadata (AWS ECS task metadata)"),
        ("169.254.169.253", "cloud metadata (AWS DNS resolver)"),
        ("169.254.169.123", "cloud metadata (AWS time sync)"),
        ("169.254.0.23", "cloud metadata (Tencent Cloud)"),
        ("169.254.42.42", "cloud metadata (Scaleway)"),
        ("100.100.100.200", "cloud metadata (Alibaba Cloud)"),
        ("192.0.0.192", "cloud metadata (Oracle Cloud, legacy)"),
        ("168.63.129.16", "cloud wire server (Azure WireServer)"),
        ("fd00:ec2::254", "cloud metadata (AWS over IPv6)"),
        ("fd00:ec2::253", "cloud metadata (AWS DNS resolver over IPv6)"),
        ("fd00:ec2::123", "cloud metadata (AWS time sync over IPv6)"),
        ("fd20:ce::254", "cloud metadata (GCP over IPv6)"),
        ("fd00:c1::a9fe:a9fe", "cloud metadata (Oracle Cloud over IPv6)"),
        ("fd00:42::42", "cloud metadata (Scaleway over IPv6)"),
    )
}
"""Cloud metadata and wire-server endpoints, refused even when an allowlist admits them."""


_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_6TO4 = ipaddress.ip_network("2002::/16")
_TEREDO = ipaddress.ip_network("2001::/32")


def embedded_ipv4(ip: IPAddress) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 one carries and the form's name, or ``None``.

    Teredo carries two (server and client); the client's is where traffic ends up.
    """
    if not isinstance(ip, ipaddress.IPv6Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped"
    if ip in _6TO4:
        return ipaddress.IPv4Address((int(ip) >> 80) & 0xFFFFFFFF), "6to4"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64"
    if ip in _TEREDO:
        return ipaddress.IPv4Address(~int(ip) & 0xFFFFFFFF), "Teredo"
    return None


def service_address(ip: IPAddress) -> str | None:
    """What cloud service ``ip`` is (also inside an IPv6 embedding), or ``None``."""
    embedded = embedded_ipv4(ip)
    return SERVICE_ADDRESSES.get(embedded[0] if embedded else ip)


def special_block(ip: IPAddress) -> SpecialBlock | None:
    """The narrowest refused block ``ip`` lies in (an embedded IPv4 judged first), or ``None``."""
    if ip.is_loopback:  # ::1 lies in ::/96
        return None
    embedded = embedded_ipv4(ip)
    if embedded is not None:
        found = special_block(embedded[0])
        if found is not None:
            return found
    blocks = [b for b in SPECIAL_BLOCKS if ip in b.network]
    return max(blocks, key=lambda b: b.network.prefixlen) if blocks else None
