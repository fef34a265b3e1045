"""``netarena run`` and ``netarena rollouts``: play a run's queries and score or record them."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from netarena.common.cli.console import err, print_summary, setup_logging
from netarena.common.cli.options import (
    AdaptiveOpt,
    AgentOpt,
    AxisOpt,
    ConcurrencyOpt,
    EpisodeTimeoutOpt,
    ExecutorOpt,
    FloorOpt,
    JsonOpt,
    LabelsOpt,
    LevelsOpt,
    MaxTurnsOpt,
    ParamOpt,
    RayAddressOpt,
    SeedOpt,
    TurnTimeoutOpt,
    parse_levels,
    parse_params,
    parse_value,
)
from netarena.common.core.agents import Agent, LiteLLMAgent
from netarena.common.core.app import load_app
from netarena.common.core.errors import AgentUnavailable, ConfigError
from netarena.common.core.plan import QueryPlan, fresh_seed
from netarena.common.core.replay import CALLS_FILE, Tape
from netarena.common.core.result_files import UnsafeResultsFile, write_atomic
from netarena.common.core.runner import ResultCallback, RunConfig, Runner
from netarena.common.core.signals import run_until_stopped
from netarena.common.core.stats import solved_safely, summarize
from netarena.common.core.types import Query, QueryResult
from netarena.common.reporting.results import load_results
from netarena.common.serving.agent_spec import make_agent
from netarena.common.training.runspec import (
    Executor,
    Play,
    RunSpec,
    annotate_summary,
    play_all,
    replay_setup,
    uniform_summary,
)

__all__ = ["check_model", "register", "rollouts", "run"]


def _parse_axes(pairs: list[str]) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, values = pair.partition("=")
        if not sep or not values:
            raise typer.BadParameter(f"--adaptive-axis expects KEY=V1,V2,..., got {pair!r}")
        axes[key] = [parse_value(v) for v in values.split(",")]
    return axes


def _run_spec(
    app_name: str, agent: str, queries: int, levels: str, labels: str | None,
    seed: int | None, run_config: RunConfig, param: list[str],
    adaptive: list[Path] | None, floor: float, axes: list[str],
) -> RunSpec:
    """The spec of a new run from command-line options (adaptive when results are given)."""
    plan = QueryPlan(
        num_queries=queries,
        levels=parse_levels(levels),
        labels=tuple(labels.split(",")) if labels else None,
        seed=fresh_seed() if seed is None else seed,
    )
    spec = RunSpec(app=app_name, params=parse_params(param), agent=agent, plan=plan,
                   run=run_config)
    check_model(make_agent(agent, load_app(app_name, spec.params)))  # fail before query 1
    if adaptive:
        source = ", ".join(str(p) for p in adaptive)
        spec = spec.with_adaptive(load_results(adaptive), source, floor, _parse_axes(axes))
    return spec


def check_model(agent: Agent) -> None:
    """Before the first query, one one-token call checks a LiteLLM agent's model.

    Credentials, endpoint and model name are checked in seconds instead of failing every
    query one after the other (other agents need no check).

    Raises:
        AgentUnavailable: The model cannot be used (the message says what to fix).
    """
    if isinstance(agent, LiteLLMAgent):
        asyncio.run(agent.check())


def _play_with_progress(
    spec: RunSpec, play: Play, executor: Executor, tape: Tape | None, ray_address: str | None,
    transient: bool,
) -> list[QueryResult]:
    groups = spec.groups()
    name = spec.agent_name()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=transient) as progress:
        task = progress.add_task(f"{spec.app} · {name}", total=sum(len(q) for _, q in groups))
        correct = 0

        def tick(result: QueryResult, done: int, total: int) -> None:
            nonlocal correct
            correct += int(result.correct)
            progress.update(task, completed=done,
                            description=f"{spec.app} · {name} · correctness {correct / done:.2f}")

        try:
            return run_until_stopped(play_all(spec, play, executor=executor, tape=tape,
                                              ray_address=ray_address, on_result=tick,
                                              groups=groups))
        except UnsafeResultsFile as exc:
            err.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from exc
        except KeyboardInterrupt as exc:  # SIGINT or SIGTERM: open episodes are closed
            err.print("stopped: every open episode was closed; finished queries are saved")
            raise typer.Exit(130) from exc


def _executor(name: str) -> Executor:
    if name not in ("local", "ray"):
        raise typer.BadParameter(f"--executor must be local or ray, got {name!r}")
    if name == "ray" and importlib.util.find_spec("ray") is None:
        raise typer.BadParameter("--executor ray needs Ray: pip install 'netarena[ray]'")
    return "ray" if name == "ray" else "local"


def run(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    agent: AgentOpt = "reference",
    queries: Annotated[int, typer.Option("--queries", "-n", min=1)] = 10,
    levels: LevelsOpt = "1,2,3",
    labels: LabelsOpt = None,
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = 4,
    max_turns: MaxTurnsOpt = None,
    turn_timeout: TurnTimeoutOpt = 120.0,
    episode_timeout: EpisodeTimeoutOpt = None,
    param: ParamOpt = [],  # noqa: B006
    out: Annotated[
        Path | None,
        typer.Option(help="directory for results.jsonl, summary.json, run.json, llm_calls.jsonl"),
    ] = None,
    as_json: JsonOpt = False,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    adaptive: AdaptiveOpt = None,
    adaptive_floor: FloorOpt = 0.2,
    adaptive_axis: AxisOpt = [],  # noqa: B006
    replay: Annotated[
        Path | None,
        typer.Option(help="re-run a run folder from its run.json and recorded LLM calls, "
                          "with no network (results go to --out, default DIR/replay)"),
    ] = None,
    verify: Annotated[
        bool,
        typer.Option("--verify", help="first play the run's queries with the reference solver "
                                      "and refuse to score the agent unless it solves them all"),
    ] = False,
) -> None:
    """Evaluate an agent on an app and print scores with 95% intervals."""
    setup_logging(logging.WARNING)
    where = _executor(executor)
    run_config = RunConfig(concurrency=concurrency, max_turns=max_turns,
                           turn_timeout_s=turn_timeout, episode_timeout_s=episode_timeout)
    tape: Tape | None = None
    try:
        if replay is not None:
            spec, out, tape = replay_setup(replay, app_name, out)
        else:
            spec = _run_spec(app_name, agent, queries, levels, labels, seed, run_config, param,
                             adaptive, adaptive_floor, adaptive_axis)
            tape = Tape(sink=out / CALLS_FILE) if out else None
        uniform = uniform_summary(spec, load_results(adaptive)) if adaptive else None
    except (ConfigError, ValueError, AgentUnavailable) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    if verify:
        _verify_plan(spec)
    if out:
        spec.write(out)
    results_path = out / "results.jsonl" if out else None

    async def evaluate(runner: Runner, qs: Sequence[Query], tick: ResultCallback) -> Any:
        return await runner.run(qs, out=results_path, on_result=tick)

    results = _play_with_progress(spec, evaluate, where, tape, ray_address, as_json)
    summary = summarize(results, app=spec.app, agent=spec.agent_name(), seed=spec.plan.seed)
    summary = annotate_summary(summary, spec, results, tape, replay)
    if out:
        write_atomic(out / "summary.json", json.dumps(summary.model_dump(mode="json"), indent=2))
    print_summary(summary, as_json, uniform)
    _check_errors(results)


def _verify_plan(spec: RunSpec) -> None:
    """Exit 3 unless the reference solves every query of ``spec`` correctly and safely.

    The same queries, app parameters and run settings (turn limits included), so a plan the
    build cannot solve under this configuration is refused before any agent is scored on it
    (ABC T.8: each task verified solvable).
    """
    missed: list[str] = []
    total = 0
    for params, queries in spec.groups():
        app = load_app(spec.app, params)
        results = run_until_stopped(Runner(app, app.reference_agent(), spec.run).run(queries))
        missed += [r.query_id for r in results if not solved_safely(r)]
        total += len(results)
    if missed:
        err.print(f"[red]error:[/red] the reference solver does not solve {len(missed)} of the "
                  f"run's {total} queries ({', '.join(missed[:5])}): not scoring the agent "
                  "on a plan this build cannot solve")
        raise typer.Exit(3)
    err.print(f"verified: the reference solver solves all {total} queries of this plan")


def _check_errors(results: Sequence[QueryResult]) -> None:
    """Warn when half the queries or more ended in an error; exit 1 when all of them did.

    An unreachable agent or model API fails every query with the same reason, and its rates
    then measure the connection, not the agent (ABC T.3): say so instead of passing them off.
    Unscored queries (the model could not be used, the emulator failed) are named apart:
    the same command with the same ``--out`` plays them again.
    """
    unscored = [r.error or "unscored" for r in results if not r.scored]
    if unscored:
        reason, count = Counter(unscored).most_common(1)[0]
        err.print(f"[yellow]warning:[/yellow] {len(unscored)} of {len(results)} queries are "
                  f"unscored ({count}x: {escape(reason[:200])}); they are left out of the "
                  "rates, and the same command with the same --out plays them again",
                  highlight=False)
    failed = [r.error for r in results if r.error]
    if not results or 2 * len(failed) < len(results):
        return
    reason, count = Counter(failed).most_common(1)[0]
    err.print(f"[yellow]warning:[/yellow] {len(failed)} of {len(results)} queries ended in an "
              f"error ({count}x: {escape(reason[:200])}); the rates above measure that "
              "failure, not the agent", highlight=False)
    if len(failed) == len(results):
        raise typer.Exit(1)


def rollouts(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    out: Annotated[Path, typer.Option(help="JSONL file of trajectories (appended; resumes)")],
    agent: AgentOpt = "reference",
    n: Annotated[int, typer.Option("--n", "-n", min=1, help="episodes")] = 20,
    levels: LevelsOpt = "1,2,3",
    labels: LabelsOpt = None,
    seed: SeedOpt = None,
    concurrency: ConcurrencyOpt = 4,
    max_turns: MaxTurnsOpt = None,
    turn_timeout: TurnTimeoutOpt = 120.0,
    episode_timeout: EpisodeTimeoutOpt = None,
    param: ParamOpt = [],  # noqa: B006
    as_json: JsonOpt = False,
    executor: ExecutorOpt = "local",
    ray_address: RayAddressOpt = None,
    adaptive: AdaptiveOpt = None,
    adaptive_floor: FloorOpt = 0.2,
    adaptive_axis: AxisOpt = [],  # noqa: B006
) -> None:
    """Play episodes and write one trajectory per line (chat format for TRL, verl, OpenRLHF)."""
    from netarena.common.training.rollouts import collect

    setup_logging(logging.WARNING)
    where = _executor(executor)
    run_config = RunConfig(concurrency=concurrency, max_turns=max_turns,
                           turn_timeout_s=turn_timeout, episode_timeout_s=episode_timeout)
    try:
        spec = _run_spec(app_name, agent, n, levels, labels, seed, run_config, param,
                         adaptive, adaptive_floor, adaptive_axis)
    except (ConfigError, ValueError, AgentUnavailable) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc

    async def record(runner: Runner, qs: Sequence[Query], tick: ResultCallback) -> Any:
        return await collect(runner, qs, out, tick)

    results = _play_with_progress(spec, record, where, None, ray_address, as_json)
    summary = summarize(results, app=spec.app, agent=spec.agent_name(), seed=spec.plan.seed)
    summary = annotate_summary(summary, spec, results, None, None)
    err.print(f"rollouts: {len(results)} episodes played, appended to {out}")
    print_summary(summary, as_json, None)


def register(cli: typer.Typer) -> None:
    """Add ``run`` and ``rollouts`` to the ``netarena`` command."""
    cli.command()(run)
    cli.command()(rollouts)
