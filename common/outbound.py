"""Where a green server may send requests: the outbound policy for purple-agent URLs.

A requester names the purple agent's URL, so without a policy the green server is an open
HTTP client on the host's network: cloud metadata services (169.254.169.254), link-local
neighbours, anything the host can reach. The policy is enforced where connections are made
(``GuardedBackend``, the HTTP client's network backend): every address a host name resolves
to is checked at connect time, and the connection goes to the checked address, so DNS
rebinding and redirects cannot slip past a check made earlier.

Defaults: link-local, metadata, multicast, unspecified and reserved addresses are refused.
Loopback and private addresses are allowed, because that is where purple agents live in
every supported deployment: the AgentBeats gateway hands the green agent participant URLs on
its own loopback proxy (``http://127.0.0.1:8080/<role>``), compose scenarios use private
container addresses, and local runs and tests use 127.0.0.1. ``allow`` (``--purple-allow``,
``NETARENA_PURPLE_ALLOW``) narrows this to a list of networks and host names.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpcore

__all__ = ["OutboundPolicy", "OutboundRefused", "GuardedBackend", "same_origin"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset({
    ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack, ...
    ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
    ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
    ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
})
"""Cloud metadata services, refused even when an allowlist would admit them."""


class OutboundRefused(httpcore.ConnectError):
    """A connection the outbound policy does not allow (never retried)."""


@dataclass(frozen=True)
class OutboundPolicy:
    """Which addresses a green server may connect to.

    Args:
        allow: When non-empty, only these networks (``10.0.0.0/8``), addresses or host
            names (exact, or ``.example.org`` for a domain) are allowed.
    """

    allow: tuple[str, ...] = ()
    _networks: tuple[IPNetwork, ...] = field(init=False, repr=False, default=())
    _names: tuple[str, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        networks, names = [], []
        for item in (a.strip() for a in self.allow if a.strip()):
            try:
                networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                names.append(item.lower().rstrip("."))
        object.__setattr__(self, "_networks", tuple(networks))
        object.__setattr__(self, "_names", tuple(names))

    @classmethod
    def parse(cls, text: str | None) -> OutboundPolicy:
        """A policy from a comma-separated allowlist (empty: the defaults)."""
        return cls(tuple(a for a in (text or "").split(",") if a.strip()))

    def _name_allowed(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return any(host == n or (n.startswith(".") and host.endswith(n)) for n in self._names)

    def refusal(self, host: str, address: str) -> str | None:
        """Why connecting to ``address`` (resolved from ``host``) is refused, or ``None``."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip in METADATA_ADDRESSES:
            return f"{host} resolves to {ip}, a cloud metadata address"
        if ip.is_link_local:
            return f"{host} resolves to {ip}, a link-local address"
        if ip.is_multicast or ip.is_unspecified or (ip.is_reserved and not ip.is_loopback):
            return f"{host} resolves to {ip}, which is not a unicast host address"
        if self.allow and not (
            any(ip in net for net in self._networks) or self._name_allowed(host)
        ):
            return f"{host} ({ip}) is not in this server's purple allowlist"
        return None

    async def resolve(self, host: str, port: int) -> list[str]:
        """The addresses ``host`` resolves to that the policy allows, in resolver order.

        Raises:
            OutboundRefused: Every address is refused (the first reason is given).
        """
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        reasons = [(a, self.refusal(host, a)) for a in addresses]
        allowed = [a for a, why in reasons if why is None]
        if not allowed:
            why = next((w for _, w in reasons if w), f"{host} does not resolve")
            raise OutboundRefused(f"outbound policy refuses {host}: {why}")
        return allowed

    async def check_url(self, url: str) -> None:
        """Check a purple URL before any request (a clear early error for the requester).

        Raises:
            OutboundRefused: The URL's host is refused, or it does not resolve.
        """
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            await self.resolve(parts.hostname or "", port)
        except OSError as exc:
            raise OutboundRefused(f"cannot resolve {parts.hostname}: {exc}") from exc


def same_origin(a: str, b: str) -> bool:
    """True when two URLs share scheme, host and port."""
    pa, pb = urlsplit(a), urlsplit(b)

    def port(p: Any) -> int:
        return int(p.port or (443 if p.scheme == "https" else 80))

    return (pa.scheme, (pa.hostname or "").lower(), port(pa)) == (
        pb.scheme, (pb.hostname or "").lower(), port(pb))


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to addresses the policy allows.

    The host name is resolved here and the socket connects to the checked address; TLS
    still verifies the certificate against the host name (httpcore passes it separately).
    """

    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve, check every address, connect to the first allowed one that answers."""
        try:
            addresses = await self._policy.resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host}: {exc}") from exc
        last: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address,
                    socket_options=socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        assert last is not None
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Unix sockets are never a purple agent's address."""
        raise OutboundRefused("outbound policy refuses unix sockets")

    async def sleep(self, seconds: float) -> None:
        """Delegate to anyio."""
        await self._inner.sleep(seconds)
