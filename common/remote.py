"""``RemoteAgent``: a purple agent reached over A2A, as the runner's ``Agent``.

One A2A message per turn, text in and text out, one ``context_id`` per episode. Purple
agents are untrusted and flaky, so every failure becomes an ``AgentError`` with a clear
reason (costing that query only), timeouts are explicit (the SDK's 5 s default would fail
any real LLM), and only connection failures — where the request never reached the agent —
are retried, with exponential backoff: anything later may already have had effects.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import httpcore
import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Part, Role, SendMessageRequest, StreamResponse, TaskState

from netarena.common.a2a import data_parts, text_of
from netarena.common.agents import Observation
from netarena.common.errors import AgentError, AgentTimeout
from netarena.common.outbound import GuardedBackend, OutboundPolicy, OutboundRefused, same_origin
from netarena.common.replies import MAX_REPLY_CHARS

__all__ = ["RemoteAgent", "reply_text"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
}


MAX_REPLY_BYTES = 16 * 2**20
"""Largest HTTP body read from a purple agent; more is an error, not an out-of-memory."""


class _ReplyTooLarge(httpx.ReadError):
    """The peer sent more than the byte cap."""


class _CappedStream(httpx.AsyncByteStream):
    def __init__(self, inner: httpx.AsyncByteStream, limit: int, request: httpx.Request):
        self._inner, self._limit, self._request = inner, limit, request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        size = 0
        async for chunk in self._inner:
            size += len(chunk)
            if size > self._limit:
                raise _ReplyTooLarge(f"reply over {self._limit} bytes", request=self._request)
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
    """Stops reading a response body after ``limit`` bytes."""

    def __init__(self, limit: int, policy: OutboundPolicy | None = None) -> None:
        self._inner = _GuardedTransport(policy or OutboundPolicy())
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(
            status_code=response.status_code, headers=response.headers,
            stream=_CappedStream(response.stream, self._limit, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self._inner.aclose()


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and its causes (the SDK wraps httpx errors, httpx wraps httpcore's)."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 8:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


def _connect_failure(exc: BaseException) -> bool:
    """True when the request never reached the peer (refused, unreachable, connect timeout).

    A refusal by the outbound policy is not a connect failure: retrying cannot help.
    """
    chain = _chain(exc)
    if any(isinstance(err, OutboundRefused) for err in chain):
        return False
    return any(isinstance(err, httpx.ConnectError | httpx.ConnectTimeout) for err in chain)


def _parts_text(parts: object) -> str:
    text = text_of(parts)
    if text:
        return text
    return "\n".join(json.dumps(d) for d in data_parts(parts))


def reply_text(response: StreamResponse) -> str:
    """The answer carried by a purple agent's final reply (a Message or a Task).

    A Task's artifacts are preferred, then its status message, then its last agent message.

    Raises:
        AgentError: The task ended failed, rejected or canceled.
    """
    if response.HasField("message"):
        return _parts_text(response.message.parts)
    if not response.HasField("task"):
        raise AgentError("reply carries neither a message nor a task")
    task = response.task
    status_text = _parts_text(task.status.message.parts) if task.status.HasField("message") else ""
    if task.status.state in _FAILED:
        reason = status_text[:500] or "no reason given"
        raise AgentError(f"agent reported task {_FAILED[task.status.state]}: {reason}")
    texts = [t for t in (_parts_text(a.parts) for a in task.artifacts) if t]
    if texts:
        return "\n".join(texts)
    if status_text:
        return status_text
    agent_msgs = [m for m in task.history if m.role == Role.ROLE_AGENT]
    return _parts_text(agent_msgs[-1].parts) if agent_msgs else ""


class RemoteAgent:
    """An A2A purple agent at ``url`` (protocol 1.x or 0.3, JSON-RPC).

    Args:
        url: The agent's base URL (its card is at ``/.well-known/agent-card.json``).
        timeout_s: Longest wait for one HTTP reply; the runner's turn timeout wraps it.
        connect_timeout_s: Longest wait to open a connection.
        retries: Extra attempts after a connection failure.
        backoff_s: First retry delay; doubles each attempt.
        max_reply_bytes: Largest HTTP body accepted (the text is then cut at
            ``MAX_REPLY_CHARS``, where the apps cut it anyway).
        policy: Which addresses may be contacted (default: ``OutboundPolicy()``, which
            refuses link-local and metadata addresses). The agent's card may not move the
            conversation to another host: an interface URL on another origin is replaced
            by ``url`` itself, as the AgentBeats gateway does.
    """

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 600.0,
        connect_timeout_s: float = 10.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        policy: OutboundPolicy | None = None,
    ) -> None:
        self.url = url
        self.name = url
        self.card_name: str | None = None
        """The name the agent's card gives, once fetched."""
        self._policy = policy or OutboundPolicy()
        self._timeout = httpx.Timeout(timeout_s, connect=connect_timeout_s)
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_reply_bytes = max_reply_bytes
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._lock: asyncio.Lock | None = None

    async def act(self, observation: Observation) -> str:
        """Send the observation as one user message; return the reply's text (capped).

        Raises:
            AgentTimeout: The HTTP reply did not arrive within ``timeout_s``.
            AgentError: Any other transport, protocol or agent-reported failure.
        """
        client = await self._connected()
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            context_id=observation.context_id,
            parts=[Part(text=observation.text)],
        )
        request = SendMessageRequest(message=message)

        async def send() -> str:
            last: StreamResponse | None = None
            async for event in client.send_message(request):
                last = event
            if last is None:
                raise AgentError("agent closed the exchange without a reply")
            return reply_text(last)

        text = await self._retrying(send)
        if len(text) > MAX_REPLY_CHARS:
            log.warning("%s: reply of %d chars cut to %d", self.url, len(text), MAX_REPLY_CHARS)
            text = text[:MAX_REPLY_CHARS]
        return text

    async def aclose(self) -> None:
        """Close the HTTP connections (the agent can be used again afterwards)."""
        client, http = self._client, self._http
        self._client = self._http = None
        if client is not None:
            await client.close()
        if http is not None:
            await http.aclose()

    async def _connected(self) -> Client:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._client is None:
                if self._http is None:
                    # trust_env=False: an environment proxy would carry purple traffic
                    # past the outbound policy.
                    self._http = httpx.AsyncClient(
                        timeout=self._timeout, follow_redirects=False, trust_env=False,
                        transport=_CappedTransport(self._max_reply_bytes, self._policy),
                    )
                factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http))
                resolver = A2ACardResolver(self._http, self.url)
                card = self._pinned(await self._retrying(resolver.get_agent_card))
                self.card_name = card.name or None
                self._client = factory.create(card)
            return self._client

    def _pinned(self, card: AgentCard) -> AgentCard:
        """Keep the conversation on the participant's origin, whatever the card says."""
        for interface in card.supported_interfaces:
            if not same_origin(interface.url, self.url):
                log.warning("%s: card points to %s; using %s instead",
                            self.url, interface.url, self.url)
                interface.url = self.url
        return card

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        for attempt in range(self._retries + 1):
            try:
                return await call()
            except AgentError:
                raise
            except Exception as exc:  # noqa: BLE001 - every peer failure becomes AgentError
                if _connect_failure(exc) and attempt < self._retries:
                    delay = self._backoff_s * 2**attempt
                    log.info("%s unreachable (%s); retry in %.1fs", self.url, exc, delay)
                    await asyncio.sleep(delay)
                    continue
                raise self._error(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, exc: Exception) -> AgentError:
        """Name what went wrong from the exception chain (the SDK wraps httpx errors)."""
        chain = _chain(exc)
        detail = f"{type(exc).__name__}: {str(exc)[:300]}"
        for err in chain:
            if isinstance(err, OutboundRefused):
                return AgentError(str(err))
            if isinstance(err, _ReplyTooLarge):
                return AgentError(f"{self.url} sent a reply over {self._max_reply_bytes} bytes")
            if isinstance(err, httpx.ConnectError | httpx.ConnectTimeout):
                return AgentError(f"cannot connect to {self.url} ({err})")
            if isinstance(err, httpx.TimeoutException):
                return AgentTimeout(f"{self.url} did not answer within {self._timeout.read:g}s")
            if isinstance(err, httpx.HTTPStatusError):
                return AgentError(f"HTTP {err.response.status_code} from {self.url}")
            if isinstance(err, httpx.RemoteProtocolError | httpx.ReadError):
                return AgentError(f"{self.url} dropped the connection ({err})")
            if isinstance(err, json.JSONDecodeError):
                return AgentError(f"unparseable reply from {self.url} (not JSON: {err.msg})")
        return AgentError(f"bad reply from {self.url}: {detail}")
