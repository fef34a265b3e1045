"""Fixtures: the apps the A2A layer is tested with, and a 1.3 SDK client helper."""

from __future__ import annotations

import importlib
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from netarena.common.core.app import App
from netarena.common.serving.a2a import json_records, text_of
from tests.helpers.toy import ToyApp


def _installed_apps() -> list[Any]:
    """Toy always; real apps once they exist (no app-specific A2A code is needed)."""
    params: list[Any] = [pytest.param(ToyApp, id="toy")]
    for name, cls in (("malt", "MaltApp"), ("route", "RouteApp"), ("k8s", "K8sApp")):
        try:
            module = importlib.import_module(f"netarena.{name}")
        except ImportError:  # an app still being built must not break the A2A tests
            continue
        if hasattr(module, cls):
            marks = [pytest.mark.slow] + ([pytest.mark.root] if name == "route" else [])
            params.append(pytest.param(getattr(module, cls), id=name, marks=marks))
    return params


APPS = _installed_apps()


@dataclass
class Outcome:
    """What a client saw for one evaluation request."""

    state: int = TaskState.TASK_STATE_UNSPECIFIED
    statuses: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    artifact_names: list[str] = field(default_factory=list)
    first_event: str = ""

    @property
    def queries(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("kind") == "query"]

    @property
    def summary(self) -> dict[str, Any]:
        (summary,) = [r for r in self.records if r.get("kind") == "summary"]
        return summary


async def evaluate(url: str, request: Any, timeout_s: float = 120,
                   context_id: str = "") -> Outcome:
    """Send one request to a green agent with the a2a-sdk 1.3 streaming client."""
    import json

    text = request if isinstance(request, str) else json.dumps(request)
    out = Outcome()
    async with httpx.AsyncClient(timeout=timeout_s) as http:
        factory = ClientFactory(ClientConfig(streaming=True, httpx_client=http))
        client = await factory.create_from_url(url)
        msg = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)],
                      context_id=context_id)
        async for event in client.send_message(SendMessageRequest(message=msg)):
            kind = event.WhichOneof("payload")
            out.first_event = out.first_event or kind
            if kind == "status_update":
                out.state = event.status_update.status.state
                if event.status_update.status.HasField("message"):
                    out.statuses.append(text_of(event.status_update.status.message.parts))
            elif kind == "artifact_update":
                out.artifact_names.append(event.artifact_update.artifact.name)
                out.records += json_records(event.artifact_update.artifact.parts)
            elif kind == "task":
                out.state = event.task.status.state
    return out


def leaderboard_request(url: str, role: str, config: dict[str, Any]) -> dict[str, Any]:
    return {"participants": {role: url}, "config": config}


def reference_agent(app_cls: type[App]) -> Any:
    return app_cls().reference_agent()
