"""The ``netarena`` command line. The only module that prints."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
from collections import Counter
from collections.abc import Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from netarena.common.agents import make_agent
from netarena.common.app import load_app
from netarena.common.cli_publish import register as register_publish_commands
from netarena.common.cli_up import register as register_up_commands
from netarena.common.cli_validity import register as register_validity_commands
from netarena.common.errors import ConfigError
from netarena.common.replay import CALLS_FILE, Tape
from netarena.common.report import SCORECARD_COLUMNS, load_results, scorecard_cells
from netarena.common.result_files import UnsafeResultsFile, write_atomic
from netarena.common.runner import QueryPlan, ResultCallback, RunConfig, Runner, fresh_seed
from netarena.common.runspec import (
    Executor,
    Play,
    RunSpec,
    annotate_summary,
    play_all,
    replay_setup,
    uniform_summary,
)
from netarena.common.signals import run_until_stopped
from netarena.common.stats import solved_safely, summarize
from netarena.common.types import Query, QueryResult

__all__ = ["main", "cli", "parse_levels", "parse_params", "render_summary"]

cli = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="NetArena: benchmark AI agents that operate networks.",
)
err = Console(stderr=True)


@cli.callback()
def _root() -> None:
    """NetArena: benchmark AI agents that operate networks."""


def parse_levels(text: str) -> tuple[int, ...]:
    """Parse ``--levels 1,2,3`` for every command that takes levels."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}") from exc


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """Parse repeated ``--param KEY=VALUE`` options (values as JSON when they parse)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = _value(value)
    return params


def _value(text: str) -> Any:
    """A command-line value: JSON when it parses (numbers, lists), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def render_summary(summary: dict[str, Any]) -> Table:
    """A rich table of a run summary: overall, per level and per label, with 95% CIs.

    The headline column is ``solved safely`` (correct, safe, no collateral damage);
    ``safe|changed`` is safety among the episodes in which the agent changed something. Rows
    ``states Q`` cover the queries that state qualifier ``Q``.
    """
    table = Table(title=f"{summary['app']} · {summary['agent']} · seed {summary['seed']}")
    for col in ("group", *SCORECARD_COLUMNS):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=True)
    table.add_row(*scorecard_cells("all", summary))
    for level, m in summary["by_level"].items():
        table.add_row(*scorecard_cells(f"level {level}", m))
    for label, m in summary["by_label"].items():
        table.add_row(*scorecard_cells(f"  {label}", m))
    for qualifier, m in summary.get("by_qualifier", {}).items():
        table.add_row(*scorecard_cells(f"states {qualifier}", m))
    return table


AgentOpt = Annotated[
    str, typer.Option(help="reference, null, baseline:NAME, litellm:MODEL or an A2A URL")
]
LevelsOpt = Annotated[str, typer.Option(help="comma-separated levels")]
LabelsOpt = Annotated[
    str | None, typer.Option(help="comma-separated labels or label sets (malt: original)")
]
SeedOpt = Annotated[int | None, typer.Option(help="base seed (random when absent)")]
ConcurrencyOpt = Annotated[int, typer.Option(min=1)]
MaxTurnsOpt = Annotated[int | None, typer.Option(min=1)]
TurnTimeoutOpt = Annotated[float, typer.Option(help="seconds per agent answer")]
EpisodeTimeoutOpt = Annotated[
    float | None, typer.Option(help="seconds per episode, checked between turns")
]
ParamOpt = Annotated[list[str], typer.Option("--param", "-p", help="app parameter KEY=VALUE")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the summary as JSON on stdout")]
ExecutorOpt = Annotated[
    str, typer.Option(help="where episodes play: local (this process) or ray (a Ray cluster)")
]
RayAddressOpt = Annotated[
    str | None, typer.Option(help="Ray cluster to join (default: start a local one)")
]
AdaptiveOpt = Annotated[
    list[Path] | None,
    typer.Option(help="earlier results of this agent (files or run dirs): draw where it fails"),
]
FloorOpt = Annotated[
    float, typer.Option(min=0, max=1, help="adaptive: share of queries spread evenly")
]
AxisOpt = Annotated[
    list[str], typer.Option(help="adaptive: app parameter to vary per query, KEY=V1,V2,...")
]


def _parse_axes(pairs: list[str]) -> dict[str, list[Any]]:
    axes: dict[str, list[Any]] = {}
    for pair in pairs:
        key, sep, values = pair.partition("=")
        if not sep or not values:
            raise typer.BadParameter(f"--adaptive-axis expects KEY=V1,V2,..., got {pair!r}")
        axes[key] = [_value(v) for v in values.split(",")]
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
    make_agent(agent, load_app(app_name, spec.params))  # fail early on a bad spec
    if adaptive:
        source = ", ".join(str(p) for p in adaptive)
        spec = spec.with_adaptive(load_results(adaptive), source, floor, _parse_axes(axes))
    return spec


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


def _print_summary(summary: dict[str, Any], as_json: bool, uniform: dict[str, Any] | None) -> None:
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
        return
    wide = Console()
    wide.width = max(wide.width, 180)  # keep each interval on one line in logs and pipes
    if uniform is not None:
        wide.print("uniform set (the results the adaptive draw came from):")
        wide.print(render_summary(uniform))
        wide.print("adaptive set (failure-targeted; not comparable with uniform rates):")
    wide.print(render_summary(summary))
    if "usage" in summary:
        u = summary["usage"]
        wide.print(f"LLM: {u['llm_calls']} calls, {u['prompt_tokens']} prompt + "
                   f"{u['completion_tokens']} completion tokens, ${u['cost_usd']:.6f}")


@cli.command()
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
    logging.basicConfig(level=logging.WARNING)
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
    except (ConfigError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
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
    annotate_summary(summary, spec, results, tape, replay)
    if out:
        write_atomic(out / "summary.json", json.dumps(summary, indent=2))
    _print_summary(summary, as_json, uniform)
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
    """
    failed = [r.error for r in results if r.error]
    if not results or 2 * len(failed) < len(results):
        return
    reason, count = Counter(failed).most_common(1)[0]
    err.print(f"[yellow]warning:[/yellow] {len(failed)} of {len(results)} queries ended in an "
              f"error ({count}x: {reason[:200]}); the rates above measure that failure, "
              "not the agent")
    if len(failed) == len(results):
        raise typer.Exit(1)


@cli.command()
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
    from netarena.common.rollouts import collect

    logging.basicConfig(level=logging.WARNING)
    where = _executor(executor)
    run_config = RunConfig(concurrency=concurrency, max_turns=max_turns,
                           turn_timeout_s=turn_timeout, episode_timeout_s=episode_timeout)
    try:
        spec = _run_spec(app_name, agent, n, levels, labels, seed, run_config, param,
                         adaptive, adaptive_floor, adaptive_axis)
    except (ConfigError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc

    async def record(runner: Runner, qs: Sequence[Query], tick: ResultCallback) -> Any:
        return await collect(runner, qs, out, tick)

    results = _play_with_progress(spec, record, where, None, ray_address, as_json)
    summary = summarize(results, app=spec.app, agent=spec.agent_name(), seed=spec.plan.seed)
    annotate_summary(summary, spec, results, None, None)
    err.print(f"rollouts: {len(results)} episodes played, appended to {out}")
    _print_summary(summary, as_json, None)


@cli.command()
def report(
    results: Annotated[list[Path], typer.Argument(help="results JSONL files or run dirs")],
    out: Annotated[Path, typer.Option(help="directory for index.html, PNGs, summary.txt")] = Path(
        "report"
    ),
    agentbeats: Annotated[
        Path | None, typer.Option(help="also write AgentBeats results files here (one per run)")
    ] = None,
) -> None:
    """Render results as an HTML page with PNG plots and a plain-text summary."""
    from netarena.common.report import load_results, write_agentbeats, write_report

    logging.basicConfig(level=logging.WARNING)
    try:
        records = load_results(results)
        written = write_report(records, out)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    typer.echo(written.text.read_text(encoding="utf-8"))
    err.print(f"report: {written.html}")
    if agentbeats is not None:
        for path in write_agentbeats(records, agentbeats):
            err.print(f"agentbeats results: {path}")


@cli.command()
def serve(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port (AgentBeats uses 9009)")] = 9009,
    card_url: Annotated[str | None, typer.Option(help="URL advertised in the agent card")] = None,
    results: Annotated[
        Path | None, typer.Option(help="directory for per-request JSONL (resume)")
    ] = None,
    token: Annotated[str | None, typer.Option(
        envvar="NETARENA_TOKEN", help="require 'Authorization: Bearer TOKEN' (lifts work caps)")
    ] = None,
    purple_allow: Annotated[str | None, typer.Option(
        envvar="NETARENA_PURPLE_ALLOW",
        help="comma-separated networks/hosts purple URLs must be in (default: any but "
             "link-local and metadata addresses)")] = None,
    param: Annotated[list[str], typer.Option(
        "--param", "-p", help="app parameter KEY=VALUE for every request (requests may "
        "override all but the app's operator-only fields, e.g. k8s kubeconfig)")] = [],  # noqa: B006
) -> None:
    """Serve APP as an A2A green agent (card at /.well-known/agent-card.json, status at /).

    Limits for unauthenticated requesters come from NETARENA_LIMITS (JSON; see
    docs/agentbeats.md).
    """
    from netarena.common.a2a import default_card_url
    from netarena.common.limits import ServerLimits
    from netarena.common.outbound import OutboundPolicy
    from netarena.common.server import GreenOptions, green_app
    from netarena.common.web import serve as serve_web

    logging.basicConfig(level=logging.INFO)
    try:
        app_params = parse_params(param)
        app_cls = type(load_app(app_name, app_params))
        limits = ServerLimits.from_env()
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    url = card_url or default_card_url(host, port)
    options = GreenOptions(results_dir=results, limits=limits,
                           policy=OutboundPolicy.parse(purple_allow), app_params=app_params)
    err.print(f"netarena {app_name} green agent at {url}")
    if os.environ.get("NETARENA_GATEWAY_PROXY"):  # set by the Amber manifests
        err.print(f"AgentBeats gateway proxy: {os.environ['NETARENA_GATEWAY_PROXY']}")
    serve_web(green_app(app_cls, url, options, token=token or None), host, port, limits)


@cli.command()
def purple(
    solver: Annotated[str, typer.Option(
        envvar="NETARENA_SOLVER",
        help="reference, litellm, null or baseline:NAME (with --app)")] = "litellm",
    app_name: Annotated[str | None, typer.Option(
        "--app", envvar="NETARENA_APP", help="app whose reference solver to serve")] = None,
    strategy: Annotated[str, typer.Option(
        envvar="NETARENA_STRATEGY", help="zeroshot, fewshot, cot or react")] = "zeroshot",
    model: Annotated[str | None, typer.Option(help="LiteLLM model (default: $MODEL_NAME)")] = None,
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 9019,
    card_url: Annotated[str | None, typer.Option(help="URL advertised in the agent card")] = None,
) -> None:
    """Serve a purple agent over A2A: a LiteLLM model, an app's reference or baseline, or null.

    Runners that pass only --host/--port/--card-url choose the agent with NETARENA_SOLVER,
    NETARENA_APP and NETARENA_STRATEGY.
    """
    from netarena.a2a_llm import from_env, purple_app
    from netarena.common.a2a import default_card_url
    from netarena.common.agents import Agent, NullAgent
    from netarena.common.limits import ServerLimits
    from netarena.common.web import serve as serve_web

    logging.basicConfig(level=logging.INFO)
    try:
        agent: Agent
        if solver == "reference" or solver.startswith("baseline:"):
            if not app_name:
                raise ConfigError(f"--solver {solver} needs --app (one server per app)")
            agent = make_agent(solver, load_app(app_name))
        elif solver == "litellm":
            agent = from_env(strategy, model)
        elif solver == "null":
            agent = NullAgent()
        else:
            raise ConfigError(
                f"unknown solver {solver!r}: use reference, litellm, null or baseline:NAME"
            )
        limits = ServerLimits.from_env()
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    url = card_url or default_card_url(host, port)
    err.print(f"netarena purple agent ({agent.name}) at {url}")
    serve_web(purple_app(agent, url, limits), host, port, limits)


register_validity_commands(cli)
register_publish_commands(cli)
register_up_commands(cli)


def _add_app_commands() -> None:
    """Mount each app's own sub-commands (``netarena malt export-sft``, ...)."""
    for ep in entry_points(group="netarena.commands"):
        try:
            cli.add_typer(ep.load(), name=ep.name)
        except ImportError as exc:  # an app missing an optional dependency keeps the CLI usable
            logging.getLogger(__name__).debug("commands of %s unavailable: %s", ep.name, exc)


def main() -> None:
    """Console-script entry point."""
    _add_app_commands()
    cli()
