"""The checks of AgentBeats' agent templates (``tests/test_agent.py``, which take
``--agent-url``), over the protocol-0.3 wire those templates' SDK speaks, for our green and
purple servers: the card's required fields, and the shape of every event a plain "Hello"
gets back, streaming or not."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from netarena.a2a_llm import purple_app
from netarena.common.serving.server import green_app
from tests.helpers.toy import ToyApp

CARD_FIELDS = ("name", "description", "url", "version", "capabilities", "defaultInputModes",
               "defaultOutputModes", "skills")


def _event_problems(event: dict[str, Any]) -> list[str]:
    kind = event.get("kind")
    if kind == "task":
        return [] if event.get("id") and event.get("status", {}).get("state") else ["task"]
    if kind == "status-update":
        return [] if event.get("status", {}).get("state") else ["status-update"]
    if kind == "artifact-update":
        return [] if event.get("artifact", {}).get("parts") else ["artifact-update"]
    if kind == "message":
        ok = event.get("parts") and event.get("role") == "agent"
        return [] if ok else ["message"]
    return [f"unknown kind {kind!r}"]


async def _hello(http: httpx.AsyncClient, url: str, streaming: bool) -> list[dict[str, Any]]:
    body = {"jsonrpc": "2.0", "id": "h", "method": "message/stream" if streaming else
            "message/send", "params": {"message": {
                "kind": "message", "role": "user", "messageId": "hello",
                "parts": [{"kind": "text", "text": "Hello"}]}}}
    if not streaming:
        return [(await http.post(url, json=body)).json()["result"]]
    events = []
    async with http.stream("POST", url, json=body) as reply:
        async for line in reply.aiter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line[5:])["result"])
    return events


@pytest.mark.parametrize("side", ["green", "purple"])
async def test_card_and_events_pass_the_template_checks(side: str) -> None:
    from tests.a2a.servers import serving

    def build(url: str):
        if side == "green":
            return green_app(ToyApp, url)
        return purple_app(ToyApp().reference_agent(), url)

    async with serving(build) as url, httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(url + ".well-known/agent-card.json")).json()
        replies = {streaming: await _hello(http, url, streaming) for streaming in (False, True)}
    assert [f for f in CARD_FIELDS if f not in card] == []
    assert card["url"].startswith(("http://", "https://")) and card["skills"]
    assert all(isinstance(m, str) for m in card["defaultInputModes"] + card["defaultOutputModes"])
    assert card["capabilities"]["streaming"] is True  # the gateway and many clients stream
    for streaming, events in replies.items():
        assert events, streaming
        assert [p for e in events for p in _event_problems(e)] == [], events
    if side == "green":  # "Hello" is not an evaluation request: rejected, with the reason
        final = replies[True][-1]
        assert final["status"]["state"] == "rejected" and final.get("final") is True
        assert "request is not JSON" in final["status"]["message"]["parts"][0]["text"]
