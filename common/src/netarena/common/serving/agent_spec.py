"""Agents named by a spec string: what ``--agent`` and a run's ``agent`` field accept.

``reference``, ``null``, ``baseline:NAME``, ``litellm:MODEL`` and ``http(s)://`` A2A URLs.
This is the one place that knows every kind of agent, remote ones included, so it lives
beside the A2A client rather than in the core loop (which only sees the ``Agent`` protocol).
"""

from __future__ import annotations

from netarena.common.core.agents import Agent, LiteLLMAgent, NullAgent, completion_settings
from netarena.common.core.app import App, find_baseline
from netarena.common.core.errors import ConfigError

__all__ = ["make_agent"]


def make_agent(spec: str, app: App) -> Agent:
    """Build an agent from a CLI/API spec.

    Args:
        spec: ``reference``, ``null``, ``baseline:NAME`` (one of ``app.baselines()``),
            ``litellm:MODEL`` (with ``completion_settings()`` from the environment) or an
            ``http(s)://`` A2A URL.
        app: The app being evaluated (for its reference solver and baselines).

    Raises:
        ConfigError: The spec names no known agent.
    """
    if spec == "reference":
        return app.reference_agent()
    if spec == "null":
        return NullAgent()
    if spec.startswith("baseline:"):
        return find_baseline(app, spec.removeprefix("baseline:")).make()
    if spec.startswith("litellm:"):
        return LiteLLMAgent(spec.removeprefix("litellm:"), **completion_settings())
    if spec.startswith(("http://", "https://")):
        # Deferred: the A2A SDK takes ~1.5 s to import, which only remote agents need.
        from netarena.common.serving.remote import RemoteAgent

        return RemoteAgent(spec)
    raise ConfigError(
        f"unknown agent {spec!r}: use reference, null, baseline:NAME, litellm:MODEL or an "
        "http(s):// A2A URL"
    )
