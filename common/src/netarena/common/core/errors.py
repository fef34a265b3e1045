"""The whole NetArena error tree.

Only the runner turns these into ``QueryResult.error``; everything else raises.
"""

from __future__ import annotations

__all__ = [
    "NetArenaError",
    "ConfigError",
    "InvalidAction",
    "ForbiddenCommand",
    "AgentError",
    "AgentTimeout",
    "AgentUnavailable",
    "BrokenReply",
    "SandboxError",
    "SandboxTimeout",
    "SandboxUnavailable",
    "EpisodeClosed",
    "EmulatorError",
    "EmulatorUnavailable",
    "UnfitSeed",
    "LaunchError",
    "EngineUnavailable",
    "ImageMissing",
    "PrivilegeRefused",
    "ContainerFailed",
]


class NetArenaError(Exception):
    """Base of every error NetArena raises on purpose."""


class ConfigError(NetArenaError):
    """A bad evaluation request or configuration: reject it with this message."""


class InvalidAction(NetArenaError):
    """The agent's action was refused: unparseable, unsupported or malformed.

    It costs the agent a turn and a small negative reward, and the reason is shown to it on
    the next observation. A refusal is information, not harm: it never makes an episode
    unsafe (nothing ran). Raise ``ForbiddenCommand`` for an attempted forbidden change.

    Args:
        message: Why the action was rejected, addressed to the agent.
        action: The offending command as the agent wrote it, when it could be read; the
            history shows it instead of the raw reply (which may be long reasoning).
    """

    def __init__(self, message: str = "", *, action: str | None = None) -> None:
        super().__init__(message)
        self.action = action


class ForbiddenCommand(InvalidAction):
    """An attempted change the task forbids: refused, and counted against safety.

    For example deleting a workload, writing outside the task's namespace, reaching
    another episode or the host, a packet flood. It costs a turn like any
    ``InvalidAction`` and also makes the episode unsafe, because the agent *tried* to do
    harm. Reads and unsupported tools are ``InvalidAction``, never this.
    """


class AgentError(NetArenaError):
    """The agent under test failed to answer (transport failure, HTTP error, bad reply)."""


class AgentTimeout(AgentError):
    """The agent did not answer within the turn timeout."""


class AgentUnavailable(AgentError):
    """The model behind a local agent could not be used (credentials, endpoint, name, quota).

    Refused or missing credentials, an endpoint that does not answer, an unknown model,
    rate limits after retries: that says nothing about the agent, so the runner leaves the
    query unscored and a resume plays it again. Only local agents raise it
    (``litellm:MODEL``): a remote purple agent's failures are its own, whatever reason it
    gives.
    """


class BrokenReply(AgentError):
    """An agent's answer broke the protocol or one of the client's bounds (size, time).

    Args:
        message: What was wrong, quoting the start of what arrived.
        partial: What had arrived before (``netarena assess``: an ``Assessment``), so the
            caller can keep it.
    """

    def __init__(self, message: str = "", *, partial: object = None) -> None:
        super().__init__(message)
        self.partial = partial


class SandboxError(NetArenaError):
    """Agent code failed inside the sandbox (exception, limit hit, bad return value)."""


class SandboxTimeout(SandboxError):
    """Agent code ran past its wall-clock or CPU limit."""


class EpisodeClosed(NetArenaError):
    """An episode was used after ``close()``."""


class EmulatorError(NetArenaError):
    """The emulator itself failed (not the agent's fault): setup, injection or probe."""


class UnfitSeed(EmulatorError):
    """A seed's instance cannot carry the label asked of it.

    No fault set of the label could be made there; a plan draws that query from another
    seed (``plan.py``).
    """


class EmulatorUnavailable(EmulatorError):
    """The emulator stopped answering mid-episode (kubectl cannot reach its own server).

    What followed says nothing about the agent, so the runner leaves the episode unscored
    with this reason, however many turns were played.
    """


class SandboxUnavailable(SandboxError, EmulatorUnavailable):
    """A sandbox worker never became ready: the host's failure, before any agent code ran.

    A worker starts with no answer in it, so however it fails (slow start on a loaded host,
    a crash in the app's own setup) says nothing about the agent: the query is unscored.
    """


class LaunchError(NetArenaError):
    """``netarena up`` could not run its containers (the message says what to do)."""


class EngineUnavailable(LaunchError):
    """No container engine answers where the Docker client looked (socket or DOCKER_HOST)."""


class ImageMissing(LaunchError):
    """An image is neither present on the engine nor pullable."""


class PrivilegeRefused(LaunchError):
    """The engine or host refused a privilege a container needs (route's capabilities)."""


class ContainerFailed(LaunchError):
    """A container exited or never became healthy; the message ends with its last log lines."""
