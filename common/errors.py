"""The whole NetArena error tree.

Only the runner turns these into ``QueryResult.error``; everything else raises.
"""

from __future__ import annotations

__all__ = [
    "NetArenaError",
    "ConfigError",
    "InvalidAction",
    "AgentError",
    "AgentTimeout",
    "SandboxError",
    "SandboxTimeout",
    "EpisodeClosed",
    "EmulatorError",
]


class NetArenaError(Exception):
    """Base of every error NetArena raises on purpose."""


class ConfigError(NetArenaError):
    """A bad evaluation request or configuration: reject it with this message."""


class InvalidAction(NetArenaError):
    """The agent's action was rejected (unparseable, forbidden, unknown target).

    It costs the agent a turn and the reason is shown to it on the next observation.
    """


class AgentError(NetArenaError):
    """The agent under test failed to answer (transport failure, HTTP error, bad reply)."""


class AgentTimeout(AgentError):
    """The agent did not answer within the turn timeout."""


class SandboxError(NetArenaError):
    """Agent code failed inside the sandbox (exception, limit hit, bad return value)."""


class SandboxTimeout(SandboxError):
    """Agent code ran past its wall-clock or CPU limit."""


class EpisodeClosed(NetArenaError):
    """An episode was used after ``close()``."""


class EmulatorError(NetArenaError):
    """The emulator itself failed (not the agent's fault): setup, injection or probe."""
