"""Every shape of reply an A2A purple agent can send, read by ``RemoteAgent``.

Agents built on other SDKs answer with Messages or Tasks, in any task state, with text,
data or file parts. Each reply either yields the answer the agent meant, or an
``AgentError`` naming what was wrong (costing that query only).
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import time
from typing import Any

import pytest

from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError
from netarena.common.serving.remote import RemoteAgent
from tests.a2a.servers import http_response, raw_server


def _result(rpc_id: Any, result: Any) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rpc_id, "result": result}).encode()


def _message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "message", "role": "agent", "messageId": "m", "parts": list(parts)}


def _task(state: str, *parts: dict[str, Any], artifact: str | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"kind": "task", "id": "t1", "contextId": "c",
                            "status": {"state": state}}
    if parts:
        task["status"]["message"] = {**_message(*parts), "taskId": "t1", "contextId": "c"}
    if artifact is not None:
        task["artifacts"] = [{"artifactId": "a", "parts": [{"kind": "text", "text": artifact}]}]
    return task


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _file(media_type: str, *, raw: bytes | None = None, uri: str | None = None) -> dict:
    file: dict[str, Any] = {"mimeType": media_type, "name": "answer"}
    if raw is not None:
        file["bytes"] = base64.b64encode(raw).decode()
    if uri is not None:
        file["uri"] = uri
    return {"kind": "file", "file": file}


REPLIES: dict[str, tuple[dict[str, Any], str]] = {
    "input-required": (_task("input-required", _text("add 3")), "add 3"),
    # An executor that returns without completing its task (the 0.3 SDK then answers a
    # blocking send with the task as it is): its artifact is the answer; no polling.
    "working with artifact": (_task("working", _text("Thinking..."), artifact="add 3"),
                              "add 3"),
    "data only": (_message({"kind": "data", "data": {"machine": "r0", "command": "ip a"}}),
                  '{"machine": "r0", "command": "ip a"}'),
    "text file": (_message(_file("text/x-python", raw=b"def process_graph(g):\n  return 1\n")),
                  "def process_graph(g):\n  return 1\n"),
    "json file": (_message(_file("application/json", raw=b'{"command": "ip a"}')),
                  '{"command": "ip a"}'),
    "auth-required": (_task("auth-required", _text("log in at http://x")),
                      "agent needs authentication"),
    "file by URL": (_message(_file("text/plain", uri="http://169.254.169.254/latest")),
                    "only files by URL, which are never fetched"),
    "binary file": (_message(_file("image/png", raw=b"\x89PNG\r\n\x1a\n" + bytes(64))),
                    "only binary files \\(image/png\\)"),
}


@pytest.mark.parametrize("name", list(REPLIES))
async def test_reply_shapes(name: str) -> None:
    reply, expected = REPLIES[name]

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        writer.write(http_response(200, _result(rpc["id"], reply)))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=5, retries=0)
        try:
            if expected.startswith(("agent ", "only ")):
                with pytest.raises(AgentError, match=expected):
                    await agent.act(Observation("reach 3", "c", 0))
            elif name == "data only":  # a protobuf Struct keeps no key order
                answer = await agent.act(Observation("reach 3", "c", 0))
                assert json.loads(answer) == json.loads(expected)
            else:
                assert await agent.act(Observation("reach 3", "c", 0)) == expected
        finally:
            await agent.aclose()


async def test_a_task_still_working_is_polled_until_it_ends() -> None:
    """A non-blocking agent answers ``message/send`` with a working task; the client
    polls ``tasks/get`` (backing off) until the task ends, within the turn's time."""
    calls: list[str] = []

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        calls.append(rpc["method"])
        polls = calls.count("tasks/get")
        if rpc["method"] == "message/send":
            reply = _task("working", _text("Thinking..."))
        elif polls < 3:
            reply = _task("working", _text(f"still thinking {polls}"))
        else:
            assert rpc["params"]["id"] == "t1"
            reply = _task("completed", artifact="add 3")
        writer.write(http_response(200, _result(rpc["id"], reply)))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=5, retries=0)
        assert await agent.act(Observation("reach 3", "c", 0)) == "add 3"
        await agent.aclose()
    assert calls == ["message/send"] + ["tasks/get"] * 3


async def test_a_task_that_never_ends_is_polled_gently_until_the_turn_times_out() -> None:
    calls: list[float] = []

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        calls.append(time.monotonic())
        writer.write(http_response(200, _result(rpc["id"], _task("submitted"))))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=5, retries=0)
        with pytest.raises(TimeoutError):  # the runner's turn timeout
            await asyncio.wait_for(agent.act(Observation("reach 3", "c", 0)), 3)
        await agent.aclose()
    assert 3 <= len(calls) <= 12, len(calls)  # polled, backing off, never a busy loop


async def test_a_redirect_is_refused_with_the_reason() -> None:
    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 307 X\r\nLocation: http://127.0.0.2:1/\r\n"
                     b"Content-Length: 0\r\nConnection: close\r\n\r\n")

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=5, retries=0)
        with pytest.raises(AgentError, match=r"redirected to http://127\.0\.0\.2:1/; "
                                             r"redirects are not followed"):
            await agent.act(Observation("reach 3", "c", 0))
        await agent.aclose()


def _compressed(rpc_id: Any, text: str, encoding: str = "gzip") -> bytes:
    body = _result(rpc_id, _message(_text(text)))
    packed = gzip.compress(body, 9) if encoding == "gzip" else body
    return (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Encoding: {encoding}\r\nContent-Length: {len(packed)}\r\n"
            f"Connection: close\r\n\r\n").encode() + packed


async def test_compressed_replies_are_capped_after_decompression() -> None:
    """A 100 KB gzip body can inflate to 100 MB: the byte cap applies to what is read."""
    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        prompt = rpc["params"]["message"]["parts"][0]["text"]
        if prompt == "bomb":
            writer.write(_compressed(rpc["id"], "a" * 100_000_000))
        elif prompt == "brotli":
            writer.write(_compressed(rpc["id"], "add 3", "br"))
        else:
            writer.write(_compressed(rpc["id"], "add 3"))

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=30, retries=0, max_reply_bytes=2_000_000)
        try:
            assert await agent.act(Observation("small", "c", 0)) == "add 3"
            with pytest.raises(AgentError, match="sent a reply over 2000000 bytes"):
                await agent.act(Observation("bomb", "c", 1))
            with pytest.raises(AgentError, match="unsupported content encoding 'br'"):
                await agent.act(Observation("brotli", "c", 2))
        finally:
            await agent.aclose()


async def test_an_endless_trickle_costs_only_the_turn_timeout() -> None:
    """Bytes that keep coming never trip a read timeout; the turn timeout ends the wait and
    the connection is dropped (the peer sees it close)."""
    closed = asyncio.Event()

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            while True:
                writer.write(b"3\r\n: \n\r\n")
                await writer.drain()
                await asyncio.sleep(0.05)
        except ConnectionError:
            closed.set()

    async with raw_server(on_post) as url:
        agent = RemoteAgent(url, timeout_s=0.5, retries=0)  # a read timeout shorter than gaps
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(agent.act(Observation("reach 3", "c", 0)), 1.5)
        await agent.aclose()
        await asyncio.wait_for(closed.wait(), 5)
