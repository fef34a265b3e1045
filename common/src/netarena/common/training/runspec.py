"""A run as data: what ``netarena run`` and ``netarena rollouts`` play, stored as ``run.json``.

``RunSpec`` holds everything that decides a run's outcome: the app and its parameters, the
agent, the query plan (uniform, or the drawn slots of a failure-targeted plan) and how
episodes play. Written into the run folder, it is what ``--replay DIR`` re-runs; the
executor (in process or Ray) is not part of it, since it does not change results.

``play_all`` plays a spec's queries, one group per app configuration (a uniform plan is one
group; an adaptive plan with parameter axes has one per combination of axis values), on the
chosen executor, handing each group's runner to a ``Play`` function (an evaluation appends
results; rollouts append trajectories).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from netarena.common.core.agents import Agent, LiteLLMAgent
from netarena.common.core.app import App, load_app
from netarena.common.core.environment import environment
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.replay import CALLS_FILE, Tape, usage_summary
from netarena.common.core.result_files import read_regular, write_atomic
from netarena.common.core.runner import ResultCallback, RunConfig, Runner
from netarena.common.core.stats import summarize
from netarena.common.core.summary import RunSummary
from netarena.common.core.types import Query, QueryResult
from netarena.common.serving.agent_spec import make_agent
from netarena.common.training.adaptive import (
    ADAPTIVE_SUFFIX,
    AdaptivePlan,
    adaptive_plan,
    generate,
    strata,
)
from netarena.common.training.executors import AgentSource, RayRunner

__all__ = [
    "RUN_FILE",
    "Executor",
    "Play",
    "RunSpec",
    "annotate_summary",
    "play_all",
    "replay_setup",
    "uniform_summary",
]

RUN_FILE = "run.json"
"""The spec of the run a folder holds."""

Executor = Literal["local", "ray"]
Play = Callable[[Runner, Sequence[Query], ResultCallback], Awaitable[list[QueryResult]]]
"""Plays one group of queries on a runner, reporting each result to the callback."""


def _adaptive_agent(spec: str, app: App) -> Agent:
    """The agent ``spec`` names, its records marked as the failure-targeted set."""
    agent = make_agent(spec, app)
    agent.name += ADAPTIVE_SUFFIX
    return agent


class RunSpec(BaseModel):
    """Everything that decides a run's results (stored as ``run.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    app: str
    params: dict[str, Any] = {}
    """App parameters (``--param``)."""
    agent: str
    """Agent spec: ``reference``, ``null``, ``litellm:MODEL`` or an A2A URL."""
    plan: QueryPlan
    run: RunConfig = RunConfig()
    adaptive: AdaptivePlan | None = None
    """The failure-targeted plan, when the run is adaptive (its slots replace ``plan``'s)."""

    def with_adaptive(
        self,
        results: Sequence[QueryResult],
        source: str,
        floor: float,
        axes: dict[str, list[Any]] | None = None,
    ) -> RunSpec:
        """This run made failure-targeted from an agent's earlier ``results``.

        Results of this app only count; when they hold several agents, only this run's
        agent's (an earlier adaptive run of it included).

        Raises:
            ConfigError: Several agents' results, none of them this run's agent.
        """
        app = load_app(self.app, self.params)
        mine = [r for r in results if r.app == self.app]
        agents = {r.agent.removesuffix(ADAPTIVE_SUFFIX) for r in mine}
        if len(agents) > 1:
            name = make_agent(self.agent, app).name
            mine = [r for r in mine if r.agent.removesuffix(ADAPTIVE_SUFFIX) == name]
            if not mine:
                raise ConfigError(f"the results hold agents {sorted(agents)}, not {name}: "
                                  "give the results of the agent under test")
        drawn = adaptive_plan(app, self.plan, mine, source=source, floor=floor, axes=axes)
        return self.model_copy(update={"adaptive": drawn})

    def groups(self) -> list[tuple[dict[str, Any], list[Query]]]:
        """The queries to play, grouped by the app parameters they need (this shard's)."""
        if self.adaptive is None:
            return [(self.params, plan_queries(load_app(self.app, self.params), self.plan))]
        shard, shards = self.plan.shard_index, self.plan.num_shards
        mine = [s for i, s in enumerate(self.adaptive.slots) if i % shards == shard]
        groups = []
        for axis_values, slots in strata(mine):
            params = {**self.params, **axis_values}
            groups.append((params, generate(load_app(self.app, params), slots)))
        return groups

    def agent_source(self) -> AgentSource:
        """How executors build the agent (renamed for an adaptive run)."""
        if self.adaptive is None:
            return self.agent
        return functools.partial(_adaptive_agent, self.agent)

    def agent_name(self) -> str:
        """The name the run's records carry for its agent."""
        source = self.agent_source()
        app = load_app(self.app, self.params)
        return (make_agent(source, app) if isinstance(source, str) else source(app)).name

    def write(self, folder: Path) -> Path:
        """Write ``run.json`` into ``folder``."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RUN_FILE
        write_atomic(path, self.model_dump_json(indent=1))
        return path

    @classmethod
    def load(cls, folder: Path) -> RunSpec:
        """The spec stored in a run folder.

        Raises:
            ConfigError: No ``run.json`` there, or not a run spec.
        """
        path = folder / RUN_FILE
        data = read_regular(path)
        if data is None:
            raise ConfigError(f"{folder} holds no {RUN_FILE}: not a run folder of this version")
        try:
            return cls.model_validate(json.loads(data))
        except ValueError as exc:
            raise ConfigError(f"{path} is not a run spec: {exc}") from exc


def replay_setup(folder: Path, app: str, out: Path | None) -> tuple[RunSpec, Path, Tape | None]:
    """What ``--replay folder`` re-runs: the spec, where results go, the replaying tape.

    Results go to ``out`` (default ``folder/replay``); the tape is ``None`` for an agent that
    makes no LLM calls.

    Raises:
        ConfigError: Not a run folder, another app's run, ``out`` is ``folder`` itself, or
            an LLM run without a recording.
    """
    spec = RunSpec.load(folder)
    if spec.app != app:
        raise ConfigError(f"{folder} is a {spec.app} run, not {app}")
    out = out or folder / "replay"
    if out.resolve() == folder.resolve():
        raise ConfigError("--out must differ from the replayed run folder")
    if (folder / CALLS_FILE).is_file():
        return spec, out, Tape.from_file(folder)
    if spec.agent.startswith("litellm:"):
        raise ConfigError(f"{folder} has no {CALLS_FILE}: the LLM run was not recorded")
    return spec, out, None


def _runner(
    spec: RunSpec, params: dict[str, Any], executor: Executor, tape: Tape | None,
    ray_address: str | None,
) -> Runner:
    source = spec.agent_source()
    if executor == "ray":
        return RayRunner(spec.app, params, source, spec.run, address=ray_address, tape=tape)
    app = load_app(spec.app, params)
    agent = make_agent(source, app) if isinstance(source, str) else source(app)
    if tape is not None and isinstance(agent, LiteLLMAgent):
        agent.tape = tape
    return Runner(app, agent, spec.run)


async def play_all(
    spec: RunSpec,
    play: Play,
    *,
    executor: Executor = "local",
    tape: Tape | None = None,
    ray_address: str | None = None,
    on_result: ResultCallback | None = None,
    groups: list[tuple[dict[str, Any], list[Query]]] | None = None,
) -> list[QueryResult]:
    """Play every group of ``spec`` (or the ``groups`` given) and return all results.

    ``on_result`` sees ``(result, done, total)`` counted over the whole run.
    """
    groups = spec.groups() if groups is None else groups
    total = sum(len(qs) for _, qs in groups)
    results: list[QueryResult] = []
    for params, queries in groups:
        offset = len(results)

        def report(result: QueryResult, done: int, _: int, offset: int = offset) -> Any:
            return on_result(result, offset + done, total) if on_result else None

        runner = _runner(spec, params, executor, tape, ray_address)
        try:
            results += await play(runner, queries, report)
        finally:
            if isinstance(runner, RayRunner):
                runner.close()
    return results


def annotate_summary(
    summary: RunSummary,
    spec: RunSpec,
    results: Sequence[QueryResult],
    tape: Tape | None,
    replayed: Path | None,
) -> RunSummary:
    """The summary with the environment, LLM usage, adaptive sampling and replay source added."""
    return summary.model_copy(update={
        "environment": environment(),
        "usage": usage_summary(results) or None,
        "sampling": None if spec.adaptive is None else
        {"mode": "adaptive", **spec.adaptive.model_dump(exclude={"slots"})},
        "replay": None if replayed is None else
        {"from": str(replayed), "drift": tape.drift if tape else 0},
    })


def uniform_summary(spec: RunSpec, source: Sequence[QueryResult]) -> RunSummary | None:
    """For an adaptive run, the summary of the results its draw came from (else ``None``)."""
    if spec.adaptive is None:
        return None
    mine = [r for r in source if r.app == spec.app]
    agents = ", ".join(sorted({r.agent for r in mine}))
    return summarize(mine, app=spec.app, agent=agents, seed=None)
