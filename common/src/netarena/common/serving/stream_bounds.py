"""Bounds on what a client reads from a green agent: bytes per event, per artifact, in all.

``netarena assess`` follows a green agent it may not trust (any URL on the command line): an
endless artifact stream once took it to 903 MB in 12 s and one endless SSE line to 1.3 GB.
``BoundedTransport`` wraps httpx's transport and counts the bytes of every response as they
arrive, before anything buffers them: past ``max_stream_bytes`` in all, past
``max_event_bytes`` without an event boundary (a blank line), or past ``max_parsed_bytes``
of estimated memory once parsed, it stops the read with ``StreamOverflow``. It asks for
uncompressed replies and refuses compressed ones, so the bytes counted are the bytes
parsed. The per-artifact count and the time without progress are kept by the reader
(``netarena.common.serving.assess``), which knows what an event is.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx

__all__ = ["StreamLimits", "StreamOverflow", "BoundedTransport"]

_MIB = 1 << 20


@dataclass(frozen=True)
class StreamLimits:
    """What a client accepts from one green agent's answer before it stops reading.

    The defaults hold a finished evaluation of about 1,700 queries (a ``Result`` record is
    1.3-1.9 KB of JSON, about 2.3 KB once escaped as a text part, and the whole ``Result``
    arrives as one event; an unauthenticated request to a NetArena server plays at most
    1,000) and keep the client under 100 MB of memory whatever arrives; raise them for
    larger runs.
    """

    max_event_bytes: int = 4 * _MIB
    """Largest single event (the ``Result`` artifact arrives as one event)."""
    max_artifact_bytes: int = 8 * _MIB
    """Largest artifact, summed over the events that append to it."""
    max_stream_bytes: int = 16 * _MIB
    """Largest whole answer."""
    max_parsed_bytes: int = 32 * _MIB
    """Largest estimated size of the whole answer once parsed: its bytes plus
    ``VALUE_BYTES`` per JSON value (counted from its commas, braces and brackets), since a
    few bytes of JSON (``{},``) become a 64-byte object in memory."""
    idle_timeout_s: float = 900.0
    """Longest time without a complete event (a green agent sends progress)."""

    VALUE_BYTES = 100
    """What one parsed JSON value is counted at (a CPython dict is 64 bytes, a str 49 and
    up, a float 24, plus the slot that holds it)."""

    def __post_init__(self) -> None:
        """Refuse bounds that are not positive."""
        if min(self.max_event_bytes, self.max_artifact_bytes, self.max_stream_bytes,
               self.max_parsed_bytes) < 1 or not self.idle_timeout_s > 0:
            raise ValueError("stream limits must be positive")


class StreamOverflow(Exception):
    """A response passed one of the ``StreamLimits`` byte bounds (the message says which)."""


class _Meter:
    """Counts one response's bytes against the limits, event by event."""

    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self.total = 0
        self.parsed = 0
        self.since_boundary = 0
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        limits = self.limits
        self.total += len(chunk)
        if self.total > limits.max_stream_bytes:
            raise StreamOverflow(f"the answer passed {limits.max_stream_bytes:,} bytes "
                                 "(max_stream_bytes)")
        values = chunk.count(b",") + chunk.count(b"{") + chunk.count(b"[")
        self.parsed += len(chunk) + limits.VALUE_BYTES * values
        if self.parsed > limits.max_parsed_bytes:
            raise StreamOverflow(f"the answer would take over {limits.max_parsed_bytes:,} "
                                 "bytes once parsed (max_parsed_bytes)")
        data = self._tail + chunk
        after = [len(data) - i - len(mark) for mark in (b"\n\n", b"\n\r\n")
                 if (i := data.rfind(mark)) >= 0]
        self.since_boundary = min(after) if after else self.since_boundary + len(chunk)
        self._tail = data[-2:]
        if self.since_boundary > self.limits.max_event_bytes:
            raise StreamOverflow(f"one event passed {self.limits.max_event_bytes:,} bytes "
                                 "(max_event_bytes)")


class _MeteredStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, meter: _Meter) -> None:
        self.inner = inner
        self.meter = meter

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self.inner:
            self.meter.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, with every response body counted against ``limits``.

    Pair it with the header ``Accept-Encoding: identity`` (``HEADERS``); a compressed
    response is refused with ``StreamOverflow``, since its size after decompression is
    unknown until it is too late.
    """

    HEADERS = {"Accept-Encoding": "identity"}

    def __init__(self, limits: StreamLimits) -> None:
        self.limits = limits
        self._inner = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; return its response with a metered body."""
        response = await self._inner.handle_async_request(request)
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            raise StreamOverflow(f"the answer is {encoding}-compressed, which this client "
                                 "does not accept (it asked for identity)")
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(response.status_code, headers=response.headers,
                              stream=_MeteredStream(response.stream, _Meter(self.limits)),
                              extensions=response.extensions)

    async def aclose(self) -> None:
        """Close the connections."""
        await self._inner.aclose()
