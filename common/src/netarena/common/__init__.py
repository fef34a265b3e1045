"""NetArena's core: the App/Episode contracts, agents, runner and statistics.

Users need only this package plus app ids (``malt``, ``route``, ``k8s``).
"""

from netarena.common.core.agents import Agent, LiteLLMAgent, NullAgent, Observation
from netarena.common.core.app import App, AppConfig, Episode, app_names, load_app
from netarena.common.core.errors import (
    AgentError,
    AgentTimeout,
    ConfigError,
    EmulatorError,
    EpisodeClosed,
    ForbiddenCommand,
    InvalidAction,
    NetArenaError,
    SandboxError,
    SandboxTimeout,
)
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.reactive import Command, ReactiveEpisode, RewardConfig
from netarena.common.core.runner import RunConfig, Runner, read_results
from netarena.common.core.stats import overlap, summarize, wald, wilson
from netarena.common.core.summary import RunSummary
from netarena.common.core.types import Query, QueryResult, Score, StepResult
from netarena.common.serving.agent_spec import make_agent

__all__ = [
    "Agent",
    "AgentError",
    "AgentTimeout",
    "App",
    "AppConfig",
    "Command",
    "ConfigError",
    "EmulatorError",
    "Episode",
    "EpisodeClosed",
    "ForbiddenCommand",
    "InvalidAction",
    "LiteLLMAgent",
    "NetArenaError",
    "NullAgent",
    "Observation",
    "Query",
    "QueryPlan",
    "QueryResult",
    "ReactiveEpisode",
    "RewardConfig",
    "RunConfig",
    "RunSummary",
    "Runner",
    "SandboxError",
    "SandboxTimeout",
    "Score",
    "StepResult",
    "app_names",
    "load_app",
    "make_agent",
    "overlap",
    "plan_queries",
    "read_results",
    "summarize",
    "wald",
    "wilson",
]
