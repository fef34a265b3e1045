"""Connection fairness, enforced where connections are accepted, before any application code.

uvicorn counts every open connection against one global limit and answers 503 past it
before anything else runs: a slowloris client that keeps reopening connections which never
finish a request fills that limit and locks every other client out, the agent card
included, token or not. ``FairProtocol`` (uvicorn's h11 protocol) shares one
``ConnectionLedger`` among the connections of a server and, when a connection is accepted:

* resets it at once when its client address (IPv6: its /64) already holds
  ``max_pending_per_address`` connections that have not completed a request, or
  ``max_connections_per_address`` connections in all;
* when ``max_pending`` connections are pending in all, closes the oldest pending
  connection of the address holding the most pending ones, so a newcomer always gets a
  slot and a flood from few addresses evicts itself;
* closes it when its first request (headers and body) is not complete within
  ``first_request_timeout_s`` of being accepted, and when a later request's headers are
  not complete within ``header_timeout_s`` of its first byte.

``max_connections`` (uvicorn's ``limit_concurrency``) stays far above ``max_pending``,
so pending connections alone can never reach it. One machine cannot tell many attacking
addresses from many clients: a public deployment runs behind a reverse proxy that limits
per client (docs/deployment.md).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import struct
import time
from collections import OrderedDict
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from netarena.common.serving.limits import ServerLimits

__all__ = ["ConnectionLedger", "FairProtocol", "fair_protocol", "client_key"]

log = logging.getLogger(__name__)

_REPORT_EVERY_S = 10.0
"""Refused and evicted connections are logged as a count at most this often."""


def client_key(client: tuple[str, int] | None) -> str:
    """The address a connection is counted under: the IP, or its /64 for IPv6.

    One IPv6 host usually holds a whole /64, so counting single IPv6 addresses would let
    it open as many connections as it likes; an IPv4-mapped address counts as IPv4.
    """
    if client is None:
        return "?"
    host = client[0]
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class ConnectionLedger:
    """Who holds which connections of one server (see the module doc).

    Args:
        limits: The server's limits (the connection fields are read).
    """

    def __init__(self, limits: ServerLimits) -> None:
        self.limits = limits
        self.connections: dict[str, int] = {}
        """Open connections per address."""
        self.pending: dict[str, OrderedDict[FairProtocol, None]] = {}
        """Per address, its pending connections, oldest first."""
        self.pending_total = 0
        self.refused = 0
        """Connections reset at once since the server started (over a per-address cap)."""
        self.evicted = 0
        """Pending connections closed to admit newer ones (``max_pending`` reached)."""
        self.expired = 0
        """Connections closed for a request not complete within its deadline."""
        self._reported = (0, 0, 0)
        self._report_at = 0.0

    def admit(self, conn: FairProtocol, key: str) -> bool:
        """Count a new connection as pending; ``False`` when ``key`` is over a cap."""
        limits = self.limits
        pending = self.pending.get(key)
        if (self.connections.get(key, 0) >= limits.max_connections_per_address
                or (pending is not None and len(pending) >= limits.max_pending_per_address)):
            self.refused += 1
            self._report()
            return False
        while self.pending_total >= limits.max_pending:
            self._evict()
        self.connections[key] = self.connections.get(key, 0) + 1
        self.pending.setdefault(key, OrderedDict())[conn] = None
        self.pending_total += 1
        return True

    def settle(self, conn: FairProtocol, key: str) -> None:
        """The connection completed a request: it no longer counts as pending."""
        pending = self.pending.get(key)
        if pending is None or conn not in pending:
            return
        del pending[conn]
        self.pending_total -= 1
        if not pending:
            del self.pending[key]

    def close(self, conn: FairProtocol, key: str) -> None:
        """The connection is gone."""
        self.settle(conn, key)
        left = self.connections.get(key, 0) - 1
        if left > 0:
            self.connections[key] = left
        else:
            self.connections.pop(key, None)

    def _evict(self) -> None:
        key = max(self.pending, key=lambda k: len(self.pending[k]))
        oldest = next(iter(self.pending[key]))
        self.settle(oldest, key)
        oldest.reset()
        self.evicted += 1
        self._report()

    def _report(self) -> None:
        now = time.monotonic()
        if now < self._report_at:
            return
        self._report_at = now + _REPORT_EVERY_S
        now_counts = (self.refused, self.evicted, self.expired)
        refused, evicted, expired = (a - b for a, b in zip(now_counts, self._reported,
                                                           strict=True))
        self._reported = now_counts
        busiest = sorted(self.pending, key=lambda k: -len(self.pending[k]))[:3]
        log.warning("connection limits since the last report: %d connection(s) reset over a "
                    "per-address cap, %d pending one(s) evicted, %d closed at a request "
                    "deadline; most pending: %s", refused, evicted, expired,
                    ", ".join(f"{k} ({len(self.pending[k])})" for k in busiest) or "none")

    def expire(self) -> None:
        """Count a connection closed at a deadline."""
        self.expired += 1
        self._report()


class FairProtocol(H11Protocol):
    """uvicorn's h11 protocol under a ``ConnectionLedger`` (see the module doc).

    Build one per server with ``fair_protocol``: the ledger and the deadlines are class
    attributes, because uvicorn instantiates the protocol class itself.
    """

    ledger: ConnectionLedger
    header_timeout_s = 10.0
    first_request_timeout_s = 15.0
    _admitted = False
    _pending = False
    _key = "?"
    _header_timer: asyncio.TimerHandle | None = None
    _first_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: Any) -> None:  # noqa: D102 - uvicorn's hook
        super().connection_made(transport)
        self._key = client_key(self.client)
        if not self.ledger.admit(self, self._key):
            self.reset()
            return
        self._admitted = self._pending = True
        self._first_timer = self.loop.call_later(self.first_request_timeout_s,
                                                 self._first_expired)
        self._arm()

    def reset(self) -> None:
        """Drop the connection at once with a TCP reset (no FIN wait, no TIME_WAIT here)."""
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        self.transport.abort()

    def _first_expired(self) -> None:
        self._first_timer = None
        if self._pending and not self.transport.is_closing():
            log.debug("closing a connection from %s that sent no complete request in %gs",
                      self._key, self.first_request_timeout_s)
            self.ledger.expire()
            self.transport.close()

    def _arm(self) -> None:
        if self._header_timer is None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._expired)

    def _expired(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.debug("closing a connection from %s that sent no complete headers in %gs",
                      self._key, self.header_timeout_s)
            self.ledger.expire()
            self.transport.close()

    def data_received(self, data: bytes) -> None:  # noqa: D102 - uvicorn's hook
        if not self._admitted:
            return
        if self.conn.their_state is h11.IDLE:
            self._arm()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        if self._pending and self.cycle is not None and not self.cycle.more_body:
            self._settle()

    def _settle(self) -> None:
        self._pending = False
        self.ledger.settle(self, self._key)
        if self._first_timer is not None:
            self._first_timer.cancel()
            self._first_timer = None

    def connection_lost(self, exc: Exception | None) -> None:  # noqa: D102 - uvicorn's hook
        for timer in (self._header_timer, self._first_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._first_timer = None
        if self._admitted:
            self._admitted = self._pending = False
            self.ledger.close(self, self._key)
        super().connection_lost(exc)


def fair_protocol(limits: ServerLimits) -> type[FairProtocol]:
    """A ``FairProtocol`` class with a fresh ledger and ``limits``' deadlines (one server)."""
    return type("FairProtocol", (FairProtocol,), {
        "ledger": ConnectionLedger(limits),
        "header_timeout_s": limits.header_timeout_s,
        "first_request_timeout_s": limits.first_request_timeout_s,
    })
