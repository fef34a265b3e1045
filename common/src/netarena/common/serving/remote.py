"""``RemoteAgent``: a purple agent reached over A2A, as the runner's ``Agent``.

One A2A message per turn, text in and text out, one ``context_id`` per episode. Purple
agents are untrusted and flaky, so every failure becomes an ``AgentError`` with a clear
reason (costing that query only), timeouts are explicit (the SDK's 5 s default would fail
any real LLM), and only connection failures — where the request never reached the agent —
are retried, with exponential backoff: anything later may already have had effects.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)

from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError, AgentTimeout
from netarena.common.core.replies import MAX_REPLY_CHARS
from netarena.common.serving.a2a import data_parts, text_of
from netarena.common.serving.outbound import (
    MAX_REPLY_BYTES,
    BadEncoding,
    OutboundPolicy,
    OutboundRefused,
    ReplyTooLarge,
    bare_url,
    public_text,
    public_url,
    purple_client,
    same_origin,
)

__all__ = ["RemoteAgent", "reply_text"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_FAILED = {
    TaskState.TASK_STATE_FAILED: "failed",
    TaskState.TASK_STATE_REJECTED: "rejected",
    TaskState.TASK_STATE_CANCELED: "canceled",
}
_WAITING = frozenset({TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING})
"""States of a task still being worked on: the client polls it until it leaves them."""
POLL_FIRST_S = 0.1
"""First delay before polling a task still being worked on; it doubles each poll..."""
POLL_MAX_S = 2.0
"""...up to this. The runner's turn timeout bounds the whole wait."""
_TEXT_MEDIA = ("text/", "application/json", "application/x-python", "application/x-yaml",
               "application/yaml", "application/xml")


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


def _parts_text(parts: Any) -> str:
    """The answer in a list of parts: text parts, else data parts as JSON, else files."""
    text = text_of(parts)
    if text:
        return text
    data = data_parts(parts)
    if data:
        return "\n".join(json.dumps(d) for d in data)
    return _file_text(parts)


def _file_text(parts: Any) -> str:
    """The text of inline text files; an error when files the judge cannot read are all.

    Raises:
        AgentError: The parts hold only files by URL (never fetched: the green server
            makes no request a purple agent chooses) or only binary files.
    """
    texts: list[str] = []
    urls: list[str] = []
    binary: list[str] = []
    for part in parts:
        if part.HasField("raw"):
            media = part.media_type or "application/octet-stream"
            try:
                if not media.startswith(_TEXT_MEDIA) and not media.endswith(("+json", "+xml")):
                    raise UnicodeDecodeError("utf-8", b"", 0, 0, media)
                texts.append(part.raw.decode("utf-8"))
            except UnicodeDecodeError:
                binary.append(media)
        elif part.HasField("url"):
            urls.append(part.url)
    if texts:
        return "\n".join(texts)
    if urls:
        raise AgentError(f"reply has only files by URL, which are never fetched "
                         f"({urls[0][:200]}); answer with text")
    if binary:
        raise AgentError(f"reply has only binary files ({', '.join(sorted(set(binary)))}); "
                         "answer with text")
    return ""


def reply_text(response: StreamResponse) -> str:
    """The answer carried by a purple agent's final reply (a Message or a Task).

    A Task's artifacts are preferred, then its status message, then its last agent message
    (a task waiting for input has its question, i.e. the agent's turn, in its status).
    Within a message or artifact: text parts, else data parts as JSON, else text files.

    Raises:
        AgentError: The task ended failed, rejected or canceled, needs authentication or
            has no state; or the reply holds only files that cannot be read as text.
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
    if task.status.state == TaskState.TASK_STATE_AUTH_REQUIRED:
        raise AgentError(f"agent needs authentication: {status_text[:500] or 'no details'}")
    if task.status.state == TaskState.TASK_STATE_UNSPECIFIED:
        raise AgentError("agent's task has no known state")
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
        self.name = public_url(url)  # records and pages never carry its credentials
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

        async def send() -> StreamResponse:
            last: StreamResponse | None = None
            async for event in client.send_message(request):
                last = event
            if last is None:
                raise AgentError("agent closed the exchange without a reply")
            return last

        text = reply_text(await self._settled(client, await self._retrying(send)))
        if len(text) > MAX_REPLY_CHARS:
            log.warning("%s: reply of %d chars cut to %d", self.name, len(text), MAX_REPLY_CHARS)
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
                    self._http = purple_client(self._policy, timeout=self._timeout,
                                               max_reply_bytes=self._max_reply_bytes,
                                               credentials_from=self.url)
                factory = ClientFactory(ClientConfig(streaming=False, httpx_client=self._http))
                resolver = A2ACardResolver(self._http, bare_url(self.url))
                card = self._pinned(await self._retrying(resolver.get_agent_card))
                self.card_name = card.name or None
                self._client = factory.create(card)
            return self._client

    async def _settled(self, client: Client, reply: StreamResponse) -> StreamResponse:
        """Poll a task still being worked on (and with no artifact yet) until it ends.

        Polls back off from ``POLL_FIRST_S`` to ``POLL_MAX_S``. A working task that already
        has an artifact is taken as it is: an executor that returns without completing its
        task gets that reply to a blocking send, for ever. Only the idempotent ``tasks/get``
        is retried here: the message was delivered.
        """
        delay = POLL_FIRST_S
        while (reply.HasField("task") and reply.task.status.state in _WAITING
               and not reply.task.artifacts):
            await asyncio.sleep(delay)
            delay = min(2 * delay, POLL_MAX_S)
            poll = functools.partial(client.get_task, GetTaskRequest(id=reply.task.id))
            reply = StreamResponse(task=await self._retrying(poll))
        return reply

    def _pinned(self, card: AgentCard) -> AgentCard:
        """Keep the conversation on the participant's origin, whatever the card says."""
        for interface in card.supported_interfaces:
            if not same_origin(interface.url, self.url):
                log.warning("%s: card points to %r; using it instead",
                            self.name, interface.url[:200])
                interface.url = bare_url(self.url)
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
                    log.info("%s unreachable (%s); retry in %.1fs", self.name, exc, delay)
                    await asyncio.sleep(delay)
                    continue
                raise self._error(exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _error(self, exc: Exception) -> AgentError:
        """Name what went wrong from the exception chain (the SDK wraps httpx errors)."""
        chain = _chain(exc)
        detail = public_text(f"{type(exc).__name__}: {str(exc)[:300]}")
        for err in chain:
            if isinstance(err, OutboundRefused):
                return AgentError(public_text(str(err)))
            if isinstance(err, ReplyTooLarge):
                return AgentError(f"{self.name} sent a reply over {self._max_reply_bytes} bytes")
            if isinstance(err, BadEncoding):
                return AgentError(f"{self.name} sent a reply this client cannot read: "
                                  f"{public_text(str(err))}")
            if isinstance(err, httpx.ConnectError | httpx.ConnectTimeout):
                return AgentError(f"cannot connect to {self.name} ({public_text(str(err))})")
            if isinstance(err, httpx.TimeoutException):
                return AgentTimeout(f"{self.name} did not answer within {self._timeout.read:g}s")
            if isinstance(err, httpx.HTTPStatusError):
                status, where = err.response.status_code, err.response.headers.get("location")
                if err.response.is_redirect and where:
                    return AgentError(f"HTTP {status} from {self.name}: redirected to "
                                      f"{public_text(where[:200])}; redirects are not followed")
                return AgentError(f"HTTP {status} from {self.name}")
            if isinstance(err, httpx.RemoteProtocolError | httpx.ReadError):
                return AgentError(f"{self.name} dropped the connection ({public_text(str(err))})")
            if isinstance(err, json.JSONDecodeError):
                return AgentError(f"unparseable reply from {self.name} (not JSON: {err.msg})")
        return AgentError(f"bad reply from {self.name}: {detail}")
