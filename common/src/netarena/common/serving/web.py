"""The HTTP server around an A2A agent: FastAPI, guards, health, metrics and the status page.

``agent_web_app`` mounts an agent's A2A routes (card at ``/.well-known/agent-card.json``,
JSON-RPC 1.0 and 0.3 at ``POST /``) in FastAPI next to ``GET /`` (status page),
``/healthz``, ``/readyz``, ``/metrics`` (Prometheus text) and ``/evaluations`` (JSON, and a
small HTML report per evaluation). ``GET /`` never collides with A2A: AgentBeats' gateway
and clients POST JSON-RPC to the base URL and GET only the card; Amber checks readiness by
TCP. ``serve`` runs it under uvicorn with fair connection admission
(``netarena.common.serving.connections``), header and body deadlines and a graceful SIGTERM.

``_Guard``, a plain ASGI middleware, does per request what must happen before the SDK sees
it: the optional bearer token, a JSON content type on every POST (no cross-site "simple"
requests), the body size and time limits, the agent's screen (HTTP 400 for a request the
green agent refuses before any task exists: a role that is not a name), and the ``Requester``
context (``netarena.common.serving.requester``) whose ``gone`` event cancels an evaluation when
its client disconnects before the answer is complete.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import resource
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any

import uvicorn
from a2a.server.routes.fastapi_routes import add_a2a_routes_to_fastapi
from fastapi import FastAPI, HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from netarena.common.serving.a2a import listen_socket
from netarena.common.serving.connections import fair_protocol
from netarena.common.serving.limits import ServerLimits
from netarena.common.serving.requester import Requester, current_requester
from netarena.common.serving.status import Board
from netarena.common.serving.status_page import render_page, render_report

__all__ = ["WebOptions", "agent_web_app", "serve"]

log = logging.getLogger(__name__)

_OPEN_PATHS = ("/.well-known/", "/healthz", "/readyz")
"""Paths served without the bearer token (peers must read the card to talk at all)."""


@dataclass(frozen=True)
class WebOptions:
    """Settings of the HTTP layer."""

    limits: ServerLimits
    """Body size and time limits (and, for the green agent, everything else)."""
    token: str | None = None
    """When set, every request but the card and health checks must carry
    ``Authorization: Bearer <token>``; token holders get ``limits.trusted()``."""
    screen: Callable[[bytes], str | None] | None = None
    """Looks at each POST body before the agent does; a reason it returns is answered
    with HTTP 400 and a JSON-RPC error (the green agent's role-name check)."""


async def _respond(send: Send, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": text.encode()})


async def _refuse_rpc(send: Send, body: bytes, reason: str) -> None:
    """HTTP 400 with a JSON-RPC "invalid params" error answering the call in ``body``."""
    try:
        call = json.loads(body)
        call_id = call.get("id") if isinstance(call, dict) else None
    except ValueError:
        call_id = None
    if not isinstance(call_id, str | int) or isinstance(call_id, bool):
        call_id = None
    reply = json.dumps({"jsonrpc": "2.0", "id": call_id,
                        "error": {"code": -32602, "message": reason}}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(reply)).encode())]})
    await send({"type": "http.response.body", "body": reply})


def _json_content(scope: Scope) -> bool:
    """Whether a request says its body is JSON.

    A web page may POST ``text/plain`` or a form to a server on its visitor's machine with
    no CORS preflight; a JSON body type needs one, which this server never grants. So a
    page cannot start evaluations (or send anything) through a visitor's browser.
    """
    headers: dict[bytes, bytes] = dict(scope.get("headers") or [])
    media = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower()
    return media == b"application/json" or (media.startswith(b"application/")
                                             and media.endswith(b"+json"))


class _InFlight:
    """How many HTTP requests are being answered (a stopping server waits for them)."""

    def __init__(self) -> None:
        self.count = 0


class _Guard:
    """Token check, JSON POSTs, bounded bodies, requester liveness, requests in flight.

    See the module doc; the in-flight count is what a stopping server waits for.
    """

    def __init__(self, app: ASGIApp, options: WebOptions, inflight: _InFlight) -> None:
        self.app = app
        self.options = options
        self.inflight = inflight

    def _authenticated(self, scope: Scope) -> bool:
        if self.options.token is None:
            return False
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        return hmac.compare_digest(given, f"Bearer {self.options.token}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.inflight.count += 1
        try:
            await self._serve(scope, receive, send)
        finally:
            self.inflight.count -= 1

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        authenticated = self._authenticated(scope)
        path = scope.get("path", "")
        if self.options.token and not authenticated and not path.startswith(_OPEN_PATHS):
            await _respond(send, 401, "missing or wrong bearer token")
            return
        if scope.get("method") == "POST" and not _json_content(scope):
            await _respond(send, 415, "JSON-RPC requests need Content-Type: application/json")
            return
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        if self.options.screen is not None and scope.get("method") == "POST":
            problem = self.options.screen(body)
            if problem is not None:
                await _refuse_rpc(send, body, problem)
                return
        requester = Requester(authenticated=authenticated)
        replayed = False
        complete = False
        disconnected = asyncio.Event()

        async def watch() -> None:
            message = await receive()
            while message["type"] != "http.disconnect":
                message = await receive()
            disconnected.set()
            if not complete:
                requester.gone.set()

        async def app_receive() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await disconnected.wait()
            return {"type": "http.disconnect"}

        async def app_send(message: Message) -> None:
            nonlocal complete
            if message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        watcher = asyncio.create_task(watch())
        token = current_requester.set(requester)
        try:
            await self.app(scope, app_receive, app_send)
        finally:
            current_requester.reset(token)
            complete = True
            watcher.cancel()

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> bytes | None:
        """The whole body within the size and time limits, or ``None`` after refusing it."""
        limits = self.options.limits
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limits.max_body_bytes:
            await _respond(send, 413, f"request body over {limits.max_body_bytes} bytes")
            return None
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(limits.body_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        return None
                    chunks.append(message.get("body", b""))
                    size += len(chunks[-1])
                    if size > limits.max_body_bytes:
                        await _respond(send, 413,
                                       f"request body over {limits.max_body_bytes} bytes")
                        return None
                    if not message.get("more_body"):
                        return b"".join(chunks)
        except TimeoutError:
            await _respond(send, 408,
                           f"request body not received within {limits.body_timeout_s:g}s")
            return None


def agent_web_app(
    card_routes: list[BaseRoute],
    rpc_routes: list[BaseRoute],
    *,
    title: str,
    options: WebOptions,
    board: Board | None = None,
    ready: Callable[[], bool] = lambda: True,
) -> FastAPI:
    """The FastAPI app of one agent (see the module doc for its routes).

    Args:
        card_routes: The SDK's agent-card routes.
        rpc_routes: The SDK's JSON-RPC routes (at ``/``).
        title: Shown on the status page.
        options: Guards and limits.
        board: The green agent's evaluations (purple agents have none).
        ready: Whether the agent can take work now (``/readyz``).
    """
    board = board or Board()
    api = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    add_a2a_routes_to_fastapi(api, agent_card_routes=card_routes, jsonrpc_routes=rpc_routes)
    api.state.inflight = _InFlight()
    api.add_middleware(_Guard, options=options, inflight=api.state.inflight)
    api.state.board = board

    @api.get("/", response_class=HTMLResponse)
    async def status_page() -> HTMLResponse:
        return HTMLResponse(render_page(title, board))

    @api.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/readyz")
    async def readyz() -> JSONResponse:
        ok = ready()
        return JSONResponse({"ready": ok, "running": board.running_count()},
                            status_code=200 if ok else 503)

    @api.get("/metrics")
    async def metrics() -> PlainTextResponse:
        return PlainTextResponse(generate_latest(board.registry),
                                 media_type=CONTENT_TYPE_LATEST)

    # With a token every request here carries it; without one, anyone reads these pages.
    detail = options.token is not None

    @api.get("/evaluations")
    async def evaluations() -> list[dict[str, Any]]:
        return [e.as_dict(detail=detail) for e in reversed(board.entries.values())]

    @api.get("/evaluations/{public_id}")
    async def evaluation(public_id: str) -> dict[str, Any]:
        entry = board.entries.get(public_id)
        if entry is None:
            raise HTTPException(404, f"no evaluation {public_id} (finished ones are kept "
                                     f"for the last {board.keep})")
        return entry.as_dict(detail=detail)

    @api.get("/evaluations/{public_id}/report", response_class=HTMLResponse)
    async def report(public_id: str) -> HTMLResponse:
        entry = board.entries.get(public_id)
        if entry is None:
            raise HTTPException(404, f"no evaluation {public_id}")
        return HTMLResponse(render_report(entry, detail=detail))

    return api


class _GracefulServer(uvicorn.Server):
    """uvicorn's server, ending running evaluations first on SIGTERM/SIGINT.

    Each finished query is already saved. On the first signal the server refuses new
    evaluations, cancels the running ones and waits (up to ``drain_s``) until every request
    in flight has been answered — the cancelled evaluations' final events included — and
    only then stops as uvicorn does: stopping at once would let the SSE layer cut the
    streams before those events (an episode may take a while to close). A second signal
    stops at once.
    """

    drain_s = 8.0

    def __init__(self, config: uvicorn.Config, board: Board, inflight: _InFlight) -> None:
        super().__init__(config)
        self.board = board
        self.inflight = inflight
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task[None] | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:  # noqa: D102
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Like uvicorn's, but exit with status 0 after a graceful stop.

        uvicorn re-raises the signal once it has stopped, so the process dies of it.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit)
                    for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:  # noqa: D102
        if self._loop is None or self._draining is not None or self.should_exit:
            super().handle_exit(sig, frame)
            return
        self._loop.call_soon_threadsafe(self._drain_then_exit, sig, frame)

    def _drain_then_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._draining is not None:
            return
        cancelled = self.board.cancel_all()
        log.warning("signal %s: stopping; %d running evaluation(s) cancelled",
                    signal.Signals(sig).name, cancelled)
        self._draining = asyncio.ensure_future(self._drain(sig, frame))

    async def _drain(self, sig: int, frame: FrameType | None) -> None:
        deadline = time.monotonic() + self.drain_s
        while self.inflight.count and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        if self.inflight.count:
            log.warning("%d request(s) still in flight after %gs; stopping anyway",
                        self.inflight.count, self.drain_s)
        super().handle_exit(sig, frame)


def serve(app: FastAPI, host: str, port: int, limits: ServerLimits) -> None:
    """Serve ``app`` until SIGTERM/SIGINT (blocking; used by the CLI).

    Connections are admitted by ``netarena.common.serving.connections`` (per-address caps,
    a deadline to the first complete request); uvicorn's own limit is ``max_connections``.
    """
    _raise_open_files(limits.max_connections)
    config = uvicorn.Config(
        # No WebSocket upgrades: an upgraded connection would leave the connection ledger.
        app, http=fair_protocol(limits), ws="none", log_level="warning", lifespan="off",
        timeout_keep_alive=5, timeout_graceful_shutdown=10,
        limit_concurrency=limits.max_connections, backlog=min(limits.max_connections, 2048),
        h11_max_incomplete_event_size=16 * 1024,
    )
    server = _GracefulServer(config, app.state.board, app.state.inflight)
    log.info("serving on %s:%d", host, port)
    with contextlib.closing(listen_socket(host, port)) as sock:
        server.run(sockets=[sock])


def _raise_open_files(connections: int) -> None:
    """Lift the soft limit on open files to the hard one: each connection holds one.

    Past the limit ``accept`` fails and asyncio stops accepting for a second, for everyone.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
    if soft != resource.RLIM_INFINITY and soft < connections + 64:
        log.warning("only %d open files allowed; max_connections is %d: raise the limit "
                    "(ulimit -n) or lower max_connections", soft, connections)
