"""Command line, part three: ``netarena assess`` and ``netarena leaderboard``.

``assess`` drives any green agent as the AgentBeats gateway does
(``netarena.common.serving.assess``);
``leaderboard`` runs the leaderboard's DuckDB queries over results files as the AgentBeats
app does (``netarena.common.reporting.leaderboard``). Mounted on the main ``netarena`` command by
``register``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from netarena.common.cli.console import print_json, print_table, setup_logging
from netarena.common.core.errors import AgentError, BrokenReply, ConfigError
from netarena.common.serving.assess import Assessment
from netarena.common.serving.stream_bounds import StreamLimits

__all__ = ["register", "assess_command", "leaderboard_command"]

err = Console(stderr=True)
_MIB = 1 << 20


def assess_command(
    green_url: Annotated[str, typer.Argument(metavar="GREEN_URL", help="the green agent")],
    participant: Annotated[list[str], typer.Option(
        help="ROLE=URL of a purple agent (repeat for several)")],
    config: Annotated[str, typer.Option(help="assessment config, JSON")] = "{}",
    out: Annotated[Path | None, typer.Option(
        help="directory for results.jsonl, summary.json and agentbeats.json")] = None,
    protocol: Annotated[str, typer.Option(
        help="0.3: as the AgentBeats gateway sends it; 1.0: through a2a-sdk 1.x")] = "0.3",
    token: Annotated[str | None, typer.Option(
        envvar="NETARENA_TOKEN", help="the green server's bearer token")] = None,
    idle_timeout: Annotated[float, typer.Option(
        help="longest wait for the green agent's next event, seconds")] = 900.0,
    max_event_mb: Annotated[float, typer.Option(
        help="largest single event accepted, MiB")] = StreamLimits.max_event_bytes / _MIB,
    max_artifact_mb: Annotated[float, typer.Option(
        help="largest artifact accepted, MiB")] = StreamLimits.max_artifact_bytes / _MIB,
    max_stream_mb: Annotated[float, typer.Option(
        help="largest whole answer accepted, MiB")] = StreamLimits.max_stream_bytes / _MIB,
    max_parsed_mb: Annotated[float, typer.Option(
        help="largest whole answer accepted once parsed (estimated), MiB")
    ] = StreamLimits.max_parsed_bytes / _MIB,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Send an assessment request to a green agent as AgentBeats does; follow and save it.

    What is read is bounded (the --max-* options, --idle-timeout) and checked: an answer
    that breaks a bound or the protocol ends with exit 2, what arrived saved in --out.
    """
    from netarena.common.serving.assess import assess as send
    from netarena.common.serving.assess import write_assessment

    setup_logging(logging.WARNING)
    try:
        roles = dict(_role_url(p) for p in participant)
        settings = config_object(config)
        limits = StreamLimits(
            max_event_bytes=int(max_event_mb * _MIB),
            max_artifact_bytes=int(max_artifact_mb * _MIB),
            max_stream_bytes=int(max_stream_mb * _MIB),
            max_parsed_bytes=int(max_parsed_mb * _MIB), idle_timeout_s=idle_timeout)
    except (ConfigError, ValueError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    try:
        run = asyncio.run(send(green_url, roles, settings, protocol=protocol, token=token,
                               limits=limits,
                               on_status=lambda state, text: err.print(f"{state}: {text}")))
    except BrokenReply as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        if out is not None and isinstance(exc.partial, Assessment):
            for path in write_assessment(exc.partial, out):
                err.print(f"wrote {path} (what arrived before the error)")
        raise typer.Exit(2) from exc
    except (ConfigError, AgentError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    if out is not None:
        for path in write_assessment(run, out):
            err.print(f"wrote {path}")
    print_assessment(run, as_json)


def config_object(text: str) -> dict[str, Any]:
    """An assessment's ``--config``: a JSON object, or a clear error."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--config is not JSON: {exc}") from exc
    if not isinstance(config, dict):
        raise ConfigError("--config must be a JSON object")
    return config


def print_assessment(run: Assessment, as_json: bool) -> None:
    """The summary of a finished assessment; exit 1 when it did not complete."""
    from netarena.common.cli.console import print_summary

    if run.summary is not None:
        print_summary(run.summary, as_json, None)
    if run.state != "completed":
        err.print(f"[red]{run.state}[/red]: {run.messages[-1] if run.messages else ''}")
        raise typer.Exit(1)


def _role_url(pair: str) -> tuple[str, str]:
    role, sep, url = pair.partition("=")
    if not sep or not role or not url:
        raise ConfigError(f"--participant takes ROLE=URL, not {pair!r}")
    return role, url


def leaderboard_command(
    results: Annotated[Path | None, typer.Argument(
        help="a leaderboard repository or its results/ folder")] = None,
    query: Annotated[list[str] | None, typer.Option(
        help="run only these queries (leaderboard, by-level, by-label, runs-not-ranked)")] = None,
    write_queries: Annotated[Path | None, typer.Option(
        help="write the queries (*.sql, agentbeats.json for the app's editor) here")] = None,
    normalise: Annotated[bool, typer.Option(
        "--normalise", help="first rename keys spelled in another letter case than in other "
        "files (old `Label` beside `label`), which the app's preload refuses")] = False,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the tables as JSON: one object per query, its rows as objects"
    )] = False,
) -> None:
    """Run the leaderboard's DuckDB queries over results files, as the AgentBeats app does."""
    from netarena.common.reporting import leaderboard as board

    if normalise and results is not None:
        for path, renamed in board.normalise_keys(results).items():
            err.print(f"normalised {path}: {', '.join(renamed)}")
    if write_queries is not None:
        for path in board.write_queries(write_queries):
            err.print(f"wrote {path}")
        if results is None:
            return
    try:
        tables, problem = board.run_queries(results or Path("."), query)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if problem:
        err.print(f"[yellow]warning:[/yellow] the AgentBeats app's preload fails on these "
                  f"files ({problem}); shown here from the records as JSON")
    for name, count in board.bad_roles(results or Path(".")).items():
        err.print(f"[yellow]warning:[/yellow] {escape(name)}: {count} record(s) whose "
                  "participant role is not a name, left out of every table", highlight=False)
    if as_json:
        print_json([{"query": table.name, "description": board.QUERIES[table.name][0],
                     "rows": [dict(zip(table.columns, row, strict=True)) for row in table.rows]}
                    for table in tables])
        return
    for table in tables:
        out = Table(title=f"{table.name}: {board.QUERIES[table.name][0]}", title_justify="left")
        for column in table.columns:
            out.add_column(column, overflow="fold")
        for row in table.rows:
            out.add_row(*("" if v is None else str(v) for v in row))
        print_table(out)


def register(cli: typer.Typer) -> None:
    """Add ``assess`` and ``leaderboard`` to the ``netarena`` command."""
    cli.command("assess")(assess_command)
    cli.command("leaderboard")(leaderboard_command)
