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

The green agent is not trusted: every byte read is counted against ``StreamLimits`` (per
event, per artifact, in all, and the time without progress), every reply is checked to be
what the protocol says, and a reply that breaks either ends the assessment with
``BrokenReply`` holding what arrived before (the CLI saves it and exits 2).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from netarena.common.core.errors import AgentError, BrokenReply, ConfigError
from netarena.common.core.result_files import write_atomic
from netarena.common.core.summary import RunSummary
from netarena.common.serving.outbound import public_url
from netarena.common.serving.request import check_role
from netarena.common.serving.stream_bounds import BoundedTransport, StreamLimits, StreamOverflow

__all__ = ["Assessment", "assess", "write_assessment", "TERMINAL", "StreamLimits"]

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
    error: str | None = None
    """Why the answer was broken off (``BrokenReply``), when it was; ``None`` otherwise."""

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


class _Malformed(Exception):
    """A reply that is not what the protocol says (turned into ``BrokenReply``)."""


def _obj(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{what} is not an object: {_quote(value)}")
    return value


def _parts(holder: dict[str, Any], what: str) -> list[dict[str, Any]]:
    parts = holder.get("parts", [])
    if not isinstance(parts, list) or not all(isinstance(p, dict) for p in parts):
        raise _Malformed(f"the parts of {what} are not a list of objects: {_quote(parts)}")
    if any(not isinstance(p.get("text", ""), str) for p in parts):
        raise _Malformed(f"a text part of {what} is not a string")
    return parts


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)[:300]
    return repr(text[:200]) + ("..." if len(text) > 200 else "")


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


def _rpc_result(text: str) -> dict[str, Any]:
    """The ``result`` of one JSON-RPC reply, checked to be what the protocol says."""
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Malformed(f"an event is not JSON ({exc.msg} at char {exc.pos}): "
                         f"{_quote(text)}") from exc
    payload = _obj(payload, "a JSON-RPC reply")
    if payload.get("error") is not None:
        error = payload["error"] if isinstance(payload["error"], dict) else {}
        raise _Malformed(f"the green agent answered with error {error.get('code')}: "
                         f"{str(error.get('message', payload['error']))[:500]}")
    return _obj(payload.get("result"), "a JSON-RPC result")


async def _events_03(response: httpx.Response) -> AsyncIterator[tuple[dict[str, Any], int]]:
    """The JSON-RPC results of a ``message/stream`` answer, with each event's size.

    An ``application/json`` answer (a server that does not stream) is one event.
    """
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        body = (await response.aread()).decode("utf-8", "replace")
        yield _rpc_result(body), len(body)
        return
    data: list[str] = []
    async for line in response.aiter_lines():
        if line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and data:
            text = "\n".join(data)
            data = []
            yield _rpc_result(text), len(text)
    if data:
        text = "\n".join(data)
        yield _rpc_result(text), len(text)


class _Reader:
    """Applies events to an ``Assessment`` within the per-artifact and idle bounds."""

    def __init__(self, run: Assessment, limits: StreamLimits,
                 on_status: Callable[[str, str], None]) -> None:
        self.run, self.limits, self.on_status = run, limits, on_status
        self.artifact_bytes: dict[str, int] = {}
        self.deadline: asyncio.Timeout | None = None

    def progress(self) -> None:
        """A complete event arrived: the idle clock starts again."""
        if self.deadline is not None:
            self.deadline.reschedule(asyncio.get_running_loop().time()
                                     + self.limits.idle_timeout_s)

    def artifact(self, artifact_id: str, size: int) -> None:
        total = self.artifact_bytes[artifact_id] = self.artifact_bytes.get(artifact_id, 0) + size
        if total > self.limits.max_artifact_bytes:
            raise StreamOverflow(f"artifact {artifact_id[:80]!r} passed "
                                 f"{self.limits.max_artifact_bytes:,} bytes (max_artifact_bytes)")

    def status(self, state: Any, message: str) -> None:
        if not isinstance(state, str):
            raise _Malformed(f"a task state is not a string: {_quote(state)}")
        self.run.state = state
        if message:
            self.run.messages.append(message)
            self.on_status(state, message)

    def apply_03(self, event: dict[str, Any], size: int) -> None:
        kind, run = event.get("kind"), self.run
        if kind == "artifact-update":
            artifact = _obj(event.get("artifact"), "an artifact")
            self.artifact(str(artifact.get("artifactId", "")), size)
            run.records.extend(_gateway_records(_parts(artifact, "an artifact")))
        elif kind in ("task", "status-update"):
            artifacts = event.get("artifacts") or [] if kind == "task" else []
            if not isinstance(artifacts, list):
                raise _Malformed(f"a task's artifacts are not a list: {_quote(artifacts)}")
            for artifact in artifacts:
                artifact = _obj(artifact, "an artifact")
                self.artifact(str(artifact.get("artifactId", "")), size)
                run.records.extend(_gateway_records(_parts(artifact, "an artifact")))
            status = _obj(event.get("status") or {}, "a task status")
            message = _obj(status.get("message") or {}, "a status message")
            self.status(status.get("state", run.state), _text(_parts(message, "a message")))
        elif kind == "message":
            run.messages.append(_text(_parts(event, "a message")))


async def _stream_03(http: httpx.AsyncClient, url: str, text: str, reader: _Reader) -> None:
    body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/stream", "params": {
        "message": {"kind": "message", "role": "user", "messageId": uuid.uuid4().hex,
                    "parts": [{"kind": "text", "text": text}]}}}
    async with http.stream("POST", url, json=body) as response:
        if response.status_code != 200:
            raise AgentError(f"green agent answered HTTP {response.status_code}: "
                             f"{(await response.aread())[:300]!r}")
        async for event, size in _events_03(response):
            reader.progress()
            reader.apply_03(event, size)
            if reader.run.state in TERMINAL:
                return


async def _stream_1x(http: httpx.AsyncClient, url: str, text: str, reader: _Reader) -> None:
    from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
    from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

    from netarena.common.serving.a2a import json_records, text_of

    card = await A2ACardResolver(http, url).get_agent_card()
    for interface in card.supported_interfaces:  # the base URL, as the gateway does
        interface.url = url
    client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
    request = SendMessageRequest(message=Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)]))
    run = reader.run
    async for event in client.send_message(request):
        reader.progress()
        if event.HasField("artifact_update"):
            artifact = event.artifact_update.artifact
            reader.artifact(artifact.artifact_id, artifact.ByteSize())
            run.records.extend(json_records(artifact.parts))
            continue
        if event.HasField("message"):
            run.messages.append(text_of(event.message.parts))
            continue
        status = event.task.status if event.HasField("task") else event.status_update.status
        if event.HasField("task"):
            for artifact in event.task.artifacts:
                reader.artifact(artifact.artifact_id, artifact.ByteSize())
                run.records.extend(json_records(artifact.parts))
        message = text_of(status.message.parts) if status.HasField("message") else ""
        reader.status(_STATES_1X.get(TaskState.Name(status.state), run.state), message)
        if run.state in TERMINAL:
            return


async def assess(
    green_url: str,
    participants: dict[str, str],
    config: dict[str, Any] | None = None,
    *,
    protocol: str = "0.3",
    limits: StreamLimits | None = None,
    token: str | None = None,
    on_status: Callable[[str, str], None] = lambda state, text: None,
) -> Assessment:
    """Send one assessment request to a green agent and follow it to its end.

    Everything read is bounded (``StreamLimits``): bytes per event, per artifact and in all,
    and the time without a complete event; the reply is checked to be what the protocol
    says before anything in it is used.

    Args:
        green_url: The green agent's base URL (where it serves JSON-RPC).
        participants: Role → purple agent URL.
        config: The assessment config (``num_queries``, ``seed``, ...).
        protocol: ``"0.3"`` (the AgentBeats gateway's way) or ``"1.0"`` (a2a-sdk 1.x).
        limits: The bounds (default ``StreamLimits()``).
        token: The green server's bearer token, if it has one.
        on_status: Called with the state and text of each status update that has a text
            (progress: ``query 12/200 · correctness 0.58``).

    Raises:
        ConfigError: No participant, a role that is not a name, or an unknown protocol.
        BrokenReply: The answer broke the protocol or a bound, or ended before the task
            did; ``partial`` holds the ``Assessment`` received so far.
        AgentError: The green agent could not be reached.
    """
    if not participants:
        raise ConfigError("name at least one participant (--participant ROLE=URL)")
    for role in participants:
        check_role(role)
    if protocol not in ("0.3", "1.0"):
        raise ConfigError(f"protocol must be 0.3 or 1.0, not {protocol!r}")
    limits = limits or StreamLimits()
    text = json.dumps({"participants": participants, "config": config or {}})
    run = Assessment({role: public_url(url) for role, url in participants.items()})
    reader = _Reader(run, limits, on_status)
    headers = {**BoundedTransport.HEADERS,
               **({"Authorization": f"Bearer {token}"} if token else {})}
    timeout = httpx.Timeout(30.0, read=limits.idle_timeout_s)
    stream = _stream_03 if protocol == "0.3" else _stream_1x
    where = f"the green agent at {public_url(green_url)}"
    async with httpx.AsyncClient(timeout=timeout, headers=headers, trust_env=False,
                                 transport=BoundedTransport(limits)) as http:
        try:
            async with asyncio.timeout(limits.idle_timeout_s) as reader.deadline:
                await stream(http, green_url, text, reader)
        except (StreamOverflow, _Malformed) as exc:
            raise _broken(f"{where}: {exc}", run) from exc
        except TimeoutError as exc:
            raise _broken(f"{where}: no complete event for {limits.idle_timeout_s:g}s "
                          "(idle_timeout_s)", run) from exc
        except httpx.HTTPError as exc:
            if run.records or run.messages:
                raise _broken(f"{where}: {type(exc).__name__}: {exc}", run) from exc
            raise AgentError(f"{where}: {type(exc).__name__}: {exc}") from exc
        except AgentError:
            raise
        except Exception as exc:  # noqa: BLE001 - a2a-sdk's own errors on a malformed reply
            raise _broken(f"{where}: {type(exc).__name__}: {str(exc)[:500]}", run) from exc
    if run.state not in TERMINAL:
        raise _broken(f"{where}: its stream ended in state {run.state!r}, before the task "
                      "ended", run)
    return run


def _broken(message: str, run: Assessment) -> BrokenReply:
    run.error = message
    return BrokenReply(message, partial=run)


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
    doc: dict[str, Any] = {"status": run.state, "participants": run.participants,
                           "results": run.records}
    if run.error is not None:  # a broken answer: the status never says "completed"
        doc["error"] = run.error
    write_atomic(out / "agentbeats.json", json.JSONEncoder(indent=2).iterencode(doc))
    written.append(out / "agentbeats.json")
    return written
