"""A2A plumbing shared by the green server, the purple server and the remote client.

Everything that depends on the a2a-sdk 1.3 wire types lives here, so the rest of the code
speaks plain ``str`` and ``dict``. Two facts drive the design:

* AgentBeats' gateway still speaks protocol 0.3. A 1.3 server serves it only when the card
  lists a second ``AgentInterface(protocol_version="0.3")`` *and* the JSON-RPC routes run
  with ``enable_v0_3_compat=True``; ``a2a_routes`` always does both.
* DataPart numbers travel as protobuf ``Value`` doubles, so integers come back as floats
  (on the JSON wire too: ``level: 1.0``). Records whose integers matter (results) therefore
  travel as JSON *text* parts (``json_part``, media type ``application/json``): every
  client, protobuf- or JSON-based, reads ``1`` as an integer, and AgentBeats' gateway and
  client keep a text part that parses as JSON exactly like a DataPart. ``json_records``
  reads both kinds back.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import socket
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ListTasksRequest,
    ListTasksResponse,
    Part,
    Task,
    TaskState,
)
from a2a.utils.errors import UnsupportedOperationError
from starlette.routing import BaseRoute

__all__ = [
    "agent_card",
    "a2a_routes",
    "BoundedTaskStore",
    "card_url_warning",
    "default_card_url",
    "listen_socket",
    "text_of",
    "data_parts",
    "data_part",
    "json_part",
    "json_records",
    "whole_numbers",
]

log = logging.getLogger(__name__)


def default_card_url(host: str, port: int) -> str:
    """The URL a card advertises when ``--card-url`` is not given.

    A wildcard bind address is not reachable by peers, so it is replaced by loopback;
    containers should pass ``--card-url`` with the name peers resolve.
    """
    reachable = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://{reachable}:{port}/"


def _loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def card_url_warning(host: str, card_url: str) -> str | None:
    """Why peers may not reach a server listening on ``host`` that advertises ``card_url``.

    Listening beyond loopback (``--host 0.0.0.0``, an interface address) says others should
    reach the server, while a loopback card URL sends every one of them to their own
    machine: clients that follow the card (the A2A SDK's) then fail. ``None`` when the two
    agree.
    """
    advertised = urlsplit(card_url).hostname or ""
    if _loopback(host) or not _loopback(advertised):
        return None
    return (f"listening on {host} but the agent card advertises {card_url}, a loopback "
            "address other machines and containers cannot reach: pass --card-url with the "
            "address peers use (e.g. http://<this host's name>:PORT/)")


def agent_card(
    name: str, description: str, url: str, skill: str, *, streaming: bool = True
) -> AgentCard:
    """An agent card advertising JSON-RPC at ``url`` for protocol 1.0 and 0.3.

    Args:
        name: Agent name shown to peers.
        description: What the agent does.
        url: Public base URL (the card itself is served under ``/.well-known/``).
        skill: One-line description of the single skill the agent offers.
        streaming: Whether ``message/stream`` is advertised.
    """
    return AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id=name, name=name, description=skill, tags=["netarena"])],
    )


_TERMINAL = frozenset({
    TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
})


class BoundedTaskStore(TaskStore):
    """The SDK's in-memory task store, bounded in tasks and in bytes.

    Each task keeps its request and artifacts (a green agent's ``Result`` holds 1.3-1.9 KB
    per query), so an unbounded store grows with every request ever sent. When a save goes
    over ``max_tasks`` or ``max_bytes`` (the tasks' serialized size), the oldest *finished*
    tasks are evicted (a later ``tasks/get`` for them answers "task not found"); running
    tasks are never evicted (their number is bounded by the server's ``max_running``).
    Listing tasks is refused (see ``list``).
    """

    def __init__(self, max_tasks: int, max_bytes: int = 256 << 20) -> None:
        self.max_tasks = max_tasks
        self.max_bytes = max_bytes
        self.total_bytes = 0
        """The serialized size of the tasks held."""
        self._inner = InMemoryTaskStore()
        self._order: OrderedDict[str, tuple[ServerCallContext, bool, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._order)

    def _over(self) -> bool:
        return len(self._order) > self.max_tasks or self.total_bytes > self.max_bytes

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save, then evict the oldest finished tasks while over a bound."""
        await self._inner.save(task, context)
        _, _, old_size = self._order.pop(task.id, (context, False, 0))
        size = task.ByteSize()
        self._order[task.id] = (context, task.status.state in _TERMINAL, size)
        self.total_bytes += size - old_size
        for task_id in [k for k, (_, done, _) in self._order.items() if done]:
            if not self._over():
                break
            await self.delete(task_id, self._order[task_id][0])

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """As the SDK's store."""
        return await self._inner.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """Refused: it would hand anyone every task id.

        Without authentication every requester is the same owner, and a task id is the
        capability to read or cancel that task.

        Raises:
            UnsupportedOperationError: Always.
        """
        raise UnsupportedOperationError(
            message="listing tasks is not offered: a task id is known only to its requester")

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """As the SDK's store."""
        _, _, size = self._order.pop(task_id, (context, False, 0))
        self.total_bytes -= size
        await self._inner.delete(task_id, context)


def a2a_routes(
    executor: AgentExecutor, card: AgentCard, task_store: TaskStore
) -> tuple[list[BaseRoute], list[BaseRoute]]:
    """The card routes and the JSON-RPC routes at ``/`` (1.0 and 0.3 on one endpoint)."""
    handler = DefaultRequestHandler(agent_executor=executor, task_store=task_store, agent_card=card)
    return (list(create_agent_card_routes(card)),
            list(create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True)))


def listen_socket(host: str, port: int) -> socket.socket:
    """A bound TCP socket with ``TCP_NODELAY`` (inherited by accepted connections).

    Without it, uvicorn's replies meet the client's delayed ACK: measured here, every
    loopback request took 44 ms instead of 0.7 ms, i.e. 44 ms added to every agent turn.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    return sock


def text_of(parts: Any) -> str:
    """Concatenate the text parts of a message or artifact (newline-separated)."""
    return "\n".join(t for t in get_text_parts(parts) if t)


def whole_numbers(value: Any) -> Any:
    """Recursively turn floats with no fractional part into ints (undo protobuf doubles)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def data_parts(parts: Any) -> list[Any]:
    """The data parts of a message or artifact as Python objects, whole floats as ints."""
    return [whole_numbers(d) for d in get_data_parts(parts)]


def data_part(data: dict[str, Any]) -> Part:
    """A DataPart holding ``data`` (a JSON object; numbers become doubles on the wire)."""
    return new_data_part(data)


def json_part(data: dict[str, Any]) -> Part:
    """A text part holding ``data`` as JSON (media type ``application/json``).

    Unlike a DataPart, its integers stay integers for every client (see the module doc).
    """
    return Part(text=json.dumps(data, allow_nan=False), media_type="application/json")


def json_records(parts: Any) -> list[Any]:
    """The JSON objects a message or artifact carries, in order, as AgentBeats reads them.

    Each DataPart (whole floats as ints) and each text part that parses as a JSON object.
    """
    records: list[Any] = []
    for part in parts:
        if part.HasField("data"):
            records.extend(data_parts([part]))
        elif part.HasField("text"):
            try:
                value = json.loads(part.text)
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                records.append(value)
    return records
