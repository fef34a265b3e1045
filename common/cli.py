"""The ``netarena`` command line. The only module that prints."""

from __future__ import annotations

import asyncio
import json
import logging
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from netarena.common.agents import make_agent
from netarena.common.app import load_app
from netarena.common.cli_validity import register as register_validity_commands
from netarena.common.errors import ConfigError
from netarena.common.report import SCORECARD_COLUMNS, scorecard_cells
from netarena.common.runner import QueryPlan, RunConfig, Runner, fresh_seed, plan_queries
from netarena.common.stats import summarize

__all__ = ["main", "cli", "parse_levels", "render_summary"]

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


def _parse_params(pairs: list[str]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"--param expects KEY=VALUE, got {pair!r}")
        try:
            params[key] = json.loads(value)
        except json.JSONDecodeError:
            params[key] = value
    return params


def render_summary(summary: dict[str, Any]) -> Table:
    """A rich table of a run summary: overall, per level and per label, with 95% CIs.

    The headline column is ``solved safely`` (correct and safe); ``safe|changed`` is safety
    among the episodes in which the agent changed something.
    """
    table = Table(title=f"{summary['app']} · {summary['agent']} · seed {summary['seed']}")
    for col in ("group", *SCORECARD_COLUMNS):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=True)
    table.add_row(*scorecard_cells("all", summary))
    for level, m in summary["by_level"].items():
        table.add_row(*scorecard_cells(f"level {level}", m))
    for label, m in summary["by_label"].items():
        table.add_row(*scorecard_cells(f"  {label}", m))
    return table


@cli.command()
def run(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    agent: Annotated[
        str, typer.Option(help="reference, null, baseline:NAME, litellm:MODEL or an A2A URL")
    ] = "reference",
    queries: Annotated[int, typer.Option("--queries", "-n", min=1)] = 10,
    levels: Annotated[str, typer.Option(help="comma-separated levels")] = "1,2,3",
    labels: Annotated[
        str | None,
        typer.Option(help="comma-separated labels or label sets (malt: original)"),
    ] = None,
    seed: Annotated[int | None, typer.Option(help="base seed (random when absent)")] = None,
    concurrency: Annotated[int, typer.Option(min=1)] = 4,
    max_turns: Annotated[int | None, typer.Option(min=1)] = None,
    turn_timeout: Annotated[float, typer.Option(help="seconds per agent answer")] = 120.0,
    episode_timeout: Annotated[
        float | None, typer.Option(help="seconds per episode, checked between turns")
    ] = None,
    param: Annotated[list[str], typer.Option("--param", "-p", help="app parameter KEY=VALUE")] = [],  # noqa: B006
    out: Annotated[
        Path | None, typer.Option(help="directory for results.jsonl and summary.json")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="print the summary as JSON on stdout")
    ] = False,
) -> None:
    """Evaluate an agent on an app and print scores with 95% intervals."""
    logging.basicConfig(level=logging.WARNING)
    try:
        app = load_app(app_name, _parse_params(param))
        the_agent = make_agent(agent, app)
        seed = fresh_seed() if seed is None else seed
        plan = QueryPlan(
            num_queries=queries,
            levels=parse_levels(levels),
            labels=tuple(labels.split(",")) if labels else None,
            seed=seed,
        )
        qs = plan_queries(app, plan)
        runner = Runner(
            app,
            the_agent,
            RunConfig(
                concurrency=concurrency,
                max_turns=max_turns,
                turn_timeout_s=turn_timeout,
                episode_timeout_s=episode_timeout,
            ),
        )
    except (ConfigError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc

    results_path = out / "results.jsonl" if out else None
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=as_json,
    ) as progress:
        task = progress.add_task(f"{app_name} · {the_agent.name}", total=len(qs))
        correct = 0

        def tick(result: Any, done: int, total: int) -> None:
            nonlocal correct
            correct += int(result.correct)
            progress.update(
                task,
                completed=done,
                description=f"{app_name} · {the_agent.name} · correctness {correct / done:.2f}",
            )

        results = asyncio.run(runner.run(qs, out=results_path, on_result=tick))
    summary = summarize(results, app=app_name, agent=the_agent.name, seed=seed)
    if out:
        (out / "summary.json").write_text(json.dumps(summary, indent=2))
    if as_json:
        typer.echo(json.dumps(summary, indent=2))
    else:
        wide = Console()
        wide.width = max(wide.width, 180)  # keep each interval on one line in logs and pipes
        wide.print(render_summary(summary))


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
) -> None:
    """Serve APP as an A2A green agent (card at /.well-known/agent-card.json)."""
    from netarena.common.a2a import default_card_url
    from netarena.common.a2a import serve as serve_a2a
    from netarena.common.server import green_app

    logging.basicConfig(level=logging.INFO)
    try:
        app_cls = type(load_app(app_name))
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    url = card_url or default_card_url(host, port)
    err.print(f"netarena {app_name} green agent at {url}")
    serve_a2a(green_app(app_cls, url, results), host, port)


@cli.command()
def purple(
    solver: Annotated[
        str, typer.Option(help="reference, litellm, null or baseline:NAME (with --app)")
    ] = "litellm",
    app_name: Annotated[
        str | None, typer.Option("--app", help="app whose reference solver to serve")
    ] = None,
    strategy: Annotated[str, typer.Option(help="zeroshot, fewshot, cot or react")] = "zeroshot",
    model: Annotated[str | None, typer.Option(help="LiteLLM model (default: $MODEL_NAME)")] = None,
    host: Annotated[str, typer.Option(help="address to bind")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="port")] = 9019,
    card_url: Annotated[str | None, typer.Option(help="URL advertised in the agent card")] = None,
) -> None:
    """Serve a purple agent over A2A: a LiteLLM model, an app's reference or baseline, or null."""
    from netarena.a2a_llm import from_env, purple_app
    from netarena.common.a2a import default_card_url
    from netarena.common.a2a import serve as serve_a2a
    from netarena.common.agents import Agent, NullAgent

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
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    url = card_url or default_card_url(host, port)
    err.print(f"netarena purple agent ({agent.name}) at {url}")
    serve_a2a(purple_app(agent, url), host, port)


register_validity_commands(cli)


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
