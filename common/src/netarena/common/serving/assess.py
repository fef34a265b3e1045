"""``netarena assess``: drive a green agent the way the AgentBeats gateway does.

The gateway sends one user message whose text is the request,
``{"participants": {"<role>": "<url>"}, "config": {...}}``, with JSON-RPC ``message/stream``
to the green agent's base URL (protocol 0.3: parts carry ``kind``), follows the task's status
updates, and on ``completed`` keeps every DataPart of the artifacts and every text part that
parses as JSON. ``protocol="0.3"`` does exactly that with plain HTTP; ``protocol="1.0"`` sends
the same request through the a2a-sdk 1.x client (for green agents that speak only 1.x).

The records come back as ``netarena run --out`` writes them: ``results.jsonl`` (one query per
line, readable by ``netarena report``), ``summary.json`` (the green agent's summary), and
``agentbeats.json`` (``{status, participants, results}``, the leaderboard's file, readable by
``netarena leaderboard``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from netarena.common.core.errors import AgentError, ConfigError
from netarena.common.core.result_files import write_atomic
from netarena.common.core.summary import RunSummary
from netarena.common.serving.outbound import public_url

__all__ = ["Assessment", "assess", "write_assessment", "TERMINAL"]

TERMINAL = ("completed", "failed", "rejected", "canceled")
"""Task states that end an assessment (0.3 spelling)."""

_STATES_1X = {"TASK_STATE_COMPLETED": "completed", "TASK_STATE_FAILED": "failed",
              "TASK_STATE_REJECTED": "rejected", "TASK_STATE_CANCELED": "canceled",
              "TASK_STATE_WORKING": "working", "TASK_STATE_SUBMITTED": "submitted",
              "TASK_STATE_INPUT_REQUIRED": "input-required",
              "TASK_STATE_AUTH_REQUIRED": "auth-required"}


@dataclass
class Assessment:
    """What a green agent sent back."""

    participants: dict[str, str]
    state: str = "submitted"
    """The task's last state (``completed``, ``failed``, ``rejected``, ``canceled``, ...)."""
    messages: list[str] = field(default_factory=list)
    """Status messages, in order (the last one says how it ended)."""
    records: list[Any] = field(default_factory=list)
    """Every JSON object of the artifacts, as the gateway keeps them."""

    @property
    def queries(self) -> list[dict[str, Any]]:
        """The per-query records."""
        return [r for r in self.records if isinstance(r, dict) and r.get("kind") == "query"]

    @property
    def summary(self) -> RunSummary | None:
        """The green agent's last summary record.

        Raises:
            pydantic.ValidationError: The record is not a summary of this build's format.
        """
        found = [r for r in self.records if isinstance(r, dict) and r.get("kind") == "summary"]
        return RunSummary.model_validate(found[-1]) if found else None


def _gateway_records(parts: list[dict[str, Any]]) -> list[Any]:
    """Each DataPart's data and each text part that parses as JSON (the gateway's rule)."""
    records: list[Any] = []
    for part in parts:
        if part.get("kind") == "data" and "data" in part:
            records.append(part["data"])
        elif part.get("kind") == "text":
            try:
                records.append(json.loads(part.get("text", "")))
            except json.JSONDecodeError:
                continue
    return records


def _text(parts: list[dict[str, Any]]) -> str:
    return "\n".join(p.get("text", "") for p in parts if p.get("kind") == "text")


async def _sse(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON-RPC results of a ``message/stream`` answer, in order."""
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            payload = json.loads("\n".join(data))
            data = []
            if "error" in payload:
                error = payload["error"]
                raise AgentError(f"green agent answered with error {error.get('code')}: "
                                 f"{str(error.get('message'))[:500]}")
            yield payload.get("result") or {}


async def _stream_03(http: httpx.AsyncClient, url: str, text: str, run: Assessment,
                     on_status: Callable[[str, str], None]) -> None:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/stream", "params": {
        "message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                    "parts": [{"kind": "text", "text": text}]}}}
    async with http.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise AgentError(f"green agent answered HTTP {response.status_code}: "
                             f"{(await response.aread())[:300]!r}")
        async for event in _sse(response):
            kind = event.get("kind")
            if kind == "artifact-update":
                run.records.extend(_gateway_records(event.get("artifact", {}).get("parts", [])))
            elif kind in ("task", "status-update"):
                if kind == "task":
                    for artifact in event.get("artifacts") or []:
                        run.records.extend(_gateway_records(artifact.get("parts", [])))
                status = event.get("status") or {}
                run.state = status.get("state", run.state)
                message = _text((status.get("message") or {}).get("parts", []))
                if message:
                    run.messages.append(message)
                    on_status(run.state, message)
            elif kind == "message":
                run.messages.append(_text(event.get("parts", [])))
            if run.state in TERMINAL:
                return


async def _stream_1x(http: httpx.AsyncClient, url: str, text: str, run: Assessment,
                     on_status: Callable[[str, str], None]) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

    from netarena.common.serving.a2a import json_records, text_of

    card = await A2ACardResolver(http, url).get_agent_card()
    for interface in card.supported_interfaces:  # the base URL, as the gateway does
        interface.url = url
    client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    request = SendMessageRequest(message=Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)]))
    async for event in client.send_message(request):
        if event.HasField("artifact_update"):
            run.records.extend(json_records(event.artifact_update.artifact.parts))
            continue
        if event.HasField("message"):
            run.messages.append(text_of(event.message.parts))
            continue
        status = event.task.status if event.HasField("task") else event.status_update.status
        if event.HasField("task"):
            for artifact in event.task.artifacts:
                run.records.extend(json_records(artifact.parts))
        run.state = _STATES_1X.get(TaskState.Name(status.state), run.state)
        message = text_of(status.message.parts) if status.HasField("message") else ""
        if message:
            run.messages.append(message)
            on_status(run.state, message)
        if run.state in TERMINAL:
            return


async def assess(
    green_url: str,
    participants: dict[str, str],
    config: dict[str, Any] | None = None,
    *,
    protocol: str = "0.3",
    idle_timeout_s: float = 900.0,
    token: str | None = None,
    on_status: Callable[[str, str], None] = lambda state, text: None,
) -> Assessment:
    """Send one assessment request to a green agent and follow it to its end.

    Args:
        green_url: The green agent's base URL (where it serves JSON-RPC).
        participants: Role → purple agent URL.
        config: The assessment config (``num_queries``, ``seed``, ...).
        protocol: ``"0.3"`` (the AgentBeats gateway's way) or ``"1.0"`` (a2a-sdk 1.x).
        idle_timeout_s: Longest wait for the next event (a green agent sends progress).
        token: The green server's bearer token, if it has one.
        on_status: Called with the state and text of each status update that has a text
            (progress: ``query 12/200 · correctness 0.58``).

    Raises:
        ConfigError: No participant, or an unknown protocol.
        AgentError: The green agent could not be reached or broke the protocol.
    """
    if not participants:
        raise ConfigError("name at least one participant (--participant ROLE=URL)")
    if protocol not in ("0.3", "1.0"):
        raise ConfigError(f"protocol must be 0.3 or 1.0, not {protocol!r}")
    text = json.dumps({"participants": participants, "config": config or {}})
    run = Assessment({role: public_url(url) for role, url in participants.items()})
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    timeout = httpx.Timeout(30.0, read=idle_timeout_s)
    stream = _stream_03 if protocol == "0.3" else _stream_1x
    async with httpx.AsyncClient(timeout=timeout, headers=headers, trust_env=False) as http:
        try:
            await stream(http, green_url, text, run, on_status)
        except httpx.HTTPError as exc:
            raise AgentError(f"green agent at {public_url(green_url)}: "
                             f"{type(exc).__name__}: {exc}") from exc
    if run.state not in TERMINAL:
        raise AgentError(f"the green agent's stream ended in state {run.state!r}, "
                         "before the task ended")
    return run


def write_assessment(run: Assessment, out: Path) -> list[Path]:
    """Write ``results.jsonl``, ``summary.json`` and ``agentbeats.json`` into ``out``.

    ``results.jsonl`` holds one ``QueryResult`` per line, as ``netarena run --out`` writes
    it (``netarena report`` reads it); records that are not NetArena query records are left
    out of it (they stay in ``agentbeats.json``).
    """
    from netarena.common.reporting.results import record_result

    out.mkdir(parents=True, exist_ok=True)
    written = []
    lines = []
    for record in run.queries:
        try:
            lines.append(record_result(record).model_dump_json())
        except ValueError:
            continue
    write_atomic(out / "results.jsonl", "".join(f"{line}\n" for line in lines))
    written.append(out / "results.jsonl")
    if run.summary is not None:
        write_atomic(out / "summary.json",
                     json.dumps(run.summary.model_dump(mode="json"), indent=2))
        written.append(out / "summary.json")
    write_atomic(out / "agentbeats.json", json.dumps(
        {"status": run.state, "participants": run.participants, "results": run.records},
        indent=2))
    written.append(out / "agentbeats.json")
    return written
