"""Where a green server may send requests: the outbound policy for purple-agent URLs.

A requester names the purple agent's URL, so without a policy the green server is an open
HTTP client on the host's network: cloud metadata services (169.254.169.254), link-local
neighbours, anything the host can reach. The policy is enforced where connections are made
(``GuardedBackend``, the HTTP client's network backend): every address a host name resolves
to is checked at connect time, and the connection goes to the checked address, so DNS
rebinding and redirects cannot slip past a check made earlier.

Defaults: every special-purpose block that is not globally reachable (IANA's registries),
and cloud metadata and wire-server addresses, are refused
(``netarena.common.serving.special_addresses``
lists each). Loopback and private addresses are allowed, because that is where purple agents live in
every supported deployment: the AgentBeats gateway hands the green agent participant URLs on
its own loopback proxy (``http://127.0.0.1:8080/<role>``), compose scenarios use private
container addresses, and local runs and tests use 127.0.0.1. ``allow`` (``--purple-allow``,
``NETARENA_PURPLE_ALLOW``) narrows this to a list of networks and host names.

``purple_client`` is the HTTP client on that backend. It also bounds what comes back: a
reply's body is read up to ``MAX_REPLY_BYTES`` *after* decompression (httpx would inflate a
gzip body whole: 300 KB of gzip is 300 MB of text), redirects are not followed, and proxy
settings in the environment are ignored.
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import zlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpcore
import httpx

from netarena.common.serving.special_addresses import (
    IPAddress,
    SpecialBlock,
    embedded_ipv4,
    service_address,
    special_block,
)

__all__ = ["OutboundPolicy", "OutboundRefused", "GuardedBackend", "same_origin",
           "purple_client", "ReplyTooLarge", "BadEncoding", "MAX_REPLY_BYTES", "public_url",
           "public_text", "bare_url"]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


class OutboundRefused(httpcore.ConnectError):
    """A connection the outbound policy does not allow (never retried)."""


@dataclass(frozen=True)
class OutboundPolicy:
    """Which addresses a green server may connect to.

    Args:
        allow: When non-empty, only these networks (``10.0.0.0/8``), addresses or host
            names (exact, or ``.example.org`` for a domain) are allowed. A network entry
            inside a refused special-purpose block (``100.64.0.0/10`` for a carrier-grade
            NAT or Tailscale network) admits that part of it; link-local, multicast,
            unspecified and cloud-service addresses are never admitted.
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

    def _admits_block(self, ip: IPAddress, block: SpecialBlock) -> bool:
        """Whether the allowlist names a network inside ``block`` that holds ``ip``."""
        return block.host_like and any(
            net.version == ip.version and ip in net
            and net.subnet_of(block.network)  # type: ignore[arg-type]
            for net in self._networks)

    def refusal(self, host: str, address: str) -> str | None:
        """Why connecting to ``address`` (resolved from ``host``) is refused, or ``None``."""
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        what = f"{host} resolves to {ip}"
        embedded = embedded_ipv4(ip)
        if embedded is not None:
            what += f" (the {embedded[1]} form of {embedded[0]})"
        service = service_address(ip)
        if service is not None:
            return f"{what}, a {service} address"
        block = special_block(ip)
        if block is not None and not self._admits_block(ip, block):
            return (f"{what}, in {block.network} ({block.name}), a special-purpose block "
                    "that is not globally reachable")
        if embedded is not None and embedded[1] != "IPv4-mapped" and not embedded[0].is_global:
            return f"{what}: a translated form of a non-global address"
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


def public_url(url: str) -> str:
    """``url`` without user info, query string or fragment (``?``/``#`` kept as a hint)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<unparseable URL>"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return urlunsplit((parts.scheme, netloc, parts.path, "…" if parts.query else "",
                       "…" if parts.fragment else ""))


_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>]+")


def public_text(text: str) -> str:
    """``text`` with every URL in it replaced by its ``public_url``."""
    return _URL.sub(lambda m: public_url(m.group(0)), text)




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


MAX_REPLY_BYTES = 16 * 2**20
"""Largest HTTP body read from a purple agent; more is an error, not an out-of-memory."""


_ENCODINGS = ("gzip", "x-gzip", "deflate")
"""Content encodings decoded (within the cap); others are refused, and not asked for."""


class ReplyTooLarge(httpx.ReadError):
    """The peer sent more than the byte cap."""


class BadEncoding(httpx.DecodingError):
    """The peer compressed its reply in a way this client does not decode."""


class _CappedStream(httpx.AsyncByteStream):
    """The body, decoded here when compressed, cut off after ``limit`` *decoded* bytes.

    httpx would decode a compressed body itself, whole and uncapped: a 100 KB gzip body
    can inflate to 100 MB, so the decoding happens here instead, ``limit`` bytes at most.
    """

    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request,
                 encoding: str):
        self._inner, self._limit, self._request = inner, limit, request
        self._decoder = zlib.decompressobj(wbits=zlib.MAX_WBITS | 32) if encoding else None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for raw in self._inner:
            try:
                chunk = self._decoder.decompress(raw, self._limit - size + 1) if (
                    self._decoder) else raw
            except zlib.error as exc:
                raise BadEncoding(f"undecodable compressed reply: {exc}",
                                   request=self._request) from exc
            size += len(chunk)
            if size > self._limit:
                raise ReplyTooLarge(f"reply over {self._limit} bytes", request=self._request)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a ``GuardedBackend`` (outbound policy at connect time)."""

    def __init__(self, policy: OutboundPolicy) -> None:
        super().__init__()
        # httpx has no public way to pass httpcore a network backend; the pool it builds
        # here is the same, plus ours (tests/a2a/test_outbound.py fails if this stops
        # taking effect).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(), network_backend=GuardedBackend(policy))


class _CappedTransport(httpx.AsyncBaseTransport):
    """Guarded connections; response bodies decoded here and cut off after ``limit`` bytes."""

    def __init__(self, limit: int, policy: OutboundPolicy | None = None) -> None:
        self._inner = _GuardedTransport(policy or OutboundPolicy())
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        request.headers["accept-encoding"] = "gzip, deflate"
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding in ("", "identity"):
            encoding = ""
        elif encoding not in _ENCODINGS:
            await response.aclose()
            raise BadEncoding(f"unsupported content encoding {encoding!r}", request=request)
        headers = [(k, v) for k, v in response.headers.raw
                   if not encoding or k.lower() not in (b"content-encoding", b"content-length")]
        return httpx.Response(
            status_code=response.status_code, headers=headers,
            stream=_CappedStream(response.stream, self._limit, request, encoding),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def purple_client(policy: OutboundPolicy, *, timeout: httpx.Timeout,
                  max_reply_bytes: int = MAX_REPLY_BYTES,
                  credentials_from: str | None = None) -> httpx.AsyncClient:
    """The HTTP client for purple agents: the policy at connect time, bodies capped.

    It follows no redirect, and ignores proxy settings in the environment (a proxy would
    carry purple traffic past the policy).

    Args:
        policy: Which addresses may be contacted.
        timeout: httpx timeouts.
        max_reply_bytes: Largest response body read, after decompression.
        credentials_from: A participant URL whose user info (HTTP basic auth) and query
            parameters (``?key=...``) go with every request, the card's and the messages'
            alike (an agent card names its endpoint without them).
    """
    auth: httpx.BasicAuth | None = None
    params = httpx.QueryParams()
    if credentials_from:
        parts = urlsplit(credentials_from)
        if parts.username is not None:
            auth = httpx.BasicAuth(unquote(parts.username), unquote(parts.password or ""))
        params = httpx.QueryParams(parts.query)
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False,
                             transport=_CappedTransport(max_reply_bytes, policy),
                             auth=auth, params=params)


def bare_url(url: str) -> str:
    """``url`` without user info, query and fragment (what ``purple_client`` adds back)."""
    parts = urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))

