"""Real HTTP servers on loopback ephemeral ports for the A2A tests.

``serving`` runs any ASGI app under uvicorn; ``raw_server`` is a tiny hand-written HTTP/1.1
server whose POST handler can misbehave in ways a framework would not allow (drop the
connection, send garbage), while serving a protocol-0.3 agent card like AgentBeats'
purple agents do.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import uvicorn

from netarena.common.launch.smoke_client import gateway_records
from netarena.common.serving.a2a import listen_socket
from netarena.common.serving.connections import fair_protocol
from netarena.common.serving.limits import ServerLimits

__all__ = ["listen_socket", "serving", "raw_server", "stream_03", "card_v03", "http_response",
           "message_result", "prompt_of", "gateway_records"]

Handler = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]


def _socket() -> socket.socket:
    return listen_socket("127.0.0.1", 0)


@contextlib.asynccontextmanager
async def serving(build: Callable[[str], Any],
                  limits: ServerLimits | None = None) -> AsyncIterator[str]:
    """Serve ``build(url)`` on 127.0.0.1:<ephemeral>; yield its base URL.

    With ``limits``, connections are admitted as ``netarena serve`` admits them
    (``netarena.common.serving.connections``).
    """
    sock = _socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    fair: dict[str, Any] = {} if limits is None else {
        "http": fair_protocol(limits), "ws": "none", "limit_concurrency": limits.max_connections}
    server = uvicorn.Server(uvicorn.Config(
        build(url), log_level="warning", timeout_graceful_shutdown=1, lifespan="off", **fair,
    ))
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield url
    finally:
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)
        sock.close()


def card_v03(url: str) -> dict[str, Any]:
    """A protocol-0.3 agent card, as AgentBeats-era purple agents serve."""
    return {
        "name": "raw-purple", "description": "misbehaving test agent", "url": url,
        "version": "0.0.1", "protocolVersion": "0.3.0", "preferredTransport": "JSONRPC",
        "capabilities": {"streaming": False}, "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "x", "name": "x", "description": "x", "tags": ["x"]}],
    }


def http_response(status: int, body: bytes, ctype: str = "application/json") -> bytes:
    head = (f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n")
    return head.encode() + body


def message_result(request_id: Any, text: str) -> bytes:
    """A 0.3 JSON-RPC ``message/send`` result carrying one agent text part."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {
        "kind": "message", "messageId": "r1", "role": "agent",
        "parts": [{"kind": "text", "text": text}],
    }}).encode()


def prompt_of(rpc: dict[str, Any]) -> str:
    parts = rpc["params"]["message"]["parts"]
    return "\n".join(p.get("text", "") for p in parts)


@contextlib.asynccontextmanager
async def raw_server(on_post: Handler, card_url: str | None = None) -> AsyncIterator[str]:
    """A hand-rolled HTTP server: GET serves a 0.3 card, POST calls ``on_post(rpc, writer)``.

    The card advertises ``card_url`` when given (an agent claiming to live elsewhere).
    """
    sock = _socket()
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            if lines[0].startswith("GET"):
                writer.write(http_response(200, json.dumps(card_v03(card_url or url)).encode()))
            else:
                await on_post(json.loads(body), writer)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, sock=sock)
    try:
        yield url
    finally:
        server.close()
        sock.close()


async def stream_03(url: str, request: Any, timeout_s: float = 60) -> list[dict[str, Any]]:
    """Send ``message/stream`` exactly as the AgentBeats gateway does (protocol 0.3, plain
    httpx, parts carrying ``kind``) and return every SSE result object in order."""
    text = request if isinstance(request, str) else json.dumps(request)
    body = {"jsonrpc": "2.0", "id": "gw-1", "method": "message/stream", "params": {"message": {
        "kind": "message", "role": "user", "messageId": "gw-m1",
        "parts": [{"kind": "text", "text": text}],
    }}}
    events: list[dict[str, Any]] = []
    async with httpx.AsyncClient(timeout=timeout_s) as client:
        async with client.stream("POST", url, json=body) as resp:
            assert resp.status_code == 200, resp.status_code
            assert resp.headers["content-type"].startswith("text/event-stream")
            data: list[str] = []
            async for line in resp.aiter_lines():
                if line.startswith("data:"):
                    data.append(line[5:].strip())
                elif not line and data:
                    payload = json.loads("\n".join(data))
                    data = []
                    assert "error" not in payload, payload
                    events.append(payload["result"])
    return events
