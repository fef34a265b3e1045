"""A2A plumbing shared by the green server, the purple server and the remote client.

Everything that depends on the a2a-sdk 1.3 wire types lives here, so the rest of the code
speaks plain ``str`` and ``dict``. Two facts drive the design:

* AgentBeats' gateway still speaks protocol 0.3. A 1.3 server serves it only when the card
  lists a second ``AgentInterface(protocol_version="0.3")`` *and* the JSON-RPC routes run
  with ``enable_v0_3_compat=True``; ``a2a_app`` always does both.
* DataPart numbers travel as protobuf ``Value`` doubles, so integers come back as floats;
  ``data_parts`` narrows whole floats back to ``int`` for callers that validate types.
"""

from __future__ import annotations

import logging
import socket
from typing import Any

import uvicorn
from a2a.helpers.proto_helpers import get_data_parts, get_text_parts, new_data_part
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Part
from starlette.applications import Starlette

__all__ = [
    "agent_card",
    "a2a_app",
    "default_card_url",
    "listen_socket",
    "serve",
    "text_of",
    "data_parts",
    "data_part",
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


def a2a_app(executor: AgentExecutor, card: AgentCard) -> Starlette:
    """A Starlette app serving ``card`` and JSON-RPC (1.0 and 0.3 on the same endpoint)."""
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, "/", enable_v0_3_compat=True
    )
    return Starlette(routes=routes)


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


def serve(app: Starlette, host: str, port: int) -> None:
    """Serve ``app`` until interrupted (blocking; used by the CLI)."""
    log.info("serving on %s:%d", host, port)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=5)
    uvicorn.Server(config).run(sockets=[listen_socket(host, port)])


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
    """A DataPart holding ``data`` (a JSON object)."""
    return new_data_part(data)
