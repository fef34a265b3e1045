"""Who sent the request being served, and whether they are still there.

The HTTP layer (``netarena.common.serving.web``) sets ``current_requester`` around each request;
the SDK starts the executor's work as a task *inside* that request, and asyncio copies
context variables into new tasks, so the executor sees the same ``Requester``. When the
client disconnects before its answer is complete, ``gone`` is set and the evaluation is
cancelled: nobody is left to read its result.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from dataclasses import dataclass, field

__all__ = ["Requester", "current_requester"]


@dataclass
class Requester:
    """One HTTP request's origin and liveness."""

    authenticated: bool = False
    """The request carried the server's bearer token (work caps are lifted)."""
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the client disconnected before its response was complete."""


current_requester: ContextVar[Requester | None] = ContextVar("netarena_requester", default=None)
"""The requester of the request being served (``None`` outside the HTTP layer)."""
