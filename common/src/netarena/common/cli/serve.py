"""``netarena serve`` (a green agent over A2A) and ``netarena report`` (results to HTML)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from netarena.common.cli.console import err, setup_logging
from netarena.common.cli.options import parse_params
from netarena.common.core.app import load_app
from netarena.common.core.errors import ConfigError
from netarena.common.reporting.results import load_results

__all__ = ["register", "report", "serve"]


def report(
    results: Annotated[list[Path], typer.Argument(help="results JSONL files or run dirs")],
    out: Annotated[Path, typer.Option(help="directory for index.html, PNGs, summary.txt")] = Path(
        "report"
    ),
    agentbeats: Annotated[
        Path | None, typer.Option(help="also write AgentBeats results files here (one per run)")
    ] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print every run's summary as JSON instead of the text tables")] = False,
) -> None:
    """Render results as an HTML page with PNG plots and a plain-text summary.

    Runs are grouped by app and agent; two run directories that name the same agent stay
    apart (``agent (run dir)``), while AgentBeats files of one participant pool.
    """
    from netarena.common.reporting.report import write_agentbeats, write_report

    setup_logging(logging.WARNING)
    try:
        records = load_results(results, runs_apart=True)
        written = write_report(records, out)
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(written.json.read_text(encoding="utf-8"))
    else:
        typer.echo(written.text.read_text(encoding="utf-8"))
    err.print(f"report: {written.html}")
    if agentbeats is not None:
        for path in write_agentbeats(records, agentbeats):
            err.print(f"agentbeats results: {path}")


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
    from netarena.common.serving.a2a import card_url_warning, default_card_url
    from netarena.common.serving.limits import ServerLimits
    from netarena.common.serving.outbound import OutboundPolicy
    from netarena.common.serving.server import GreenOptions, green_app
    from netarena.common.serving.web import serve as serve_web

    setup_logging(logging.INFO)
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
    if warning := card_url_warning(host, url):
        err.print(f"[yellow]warning:[/yellow] {escape(warning)}", highlight=False)
    if os.environ.get("NETARENA_GATEWAY_PROXY"):  # set by the Amber manifests
        err.print(f"AgentBeats gateway proxy: {os.environ['NETARENA_GATEWAY_PROXY']}")
    serve_web(green_app(app_cls, url, options, token=token or None), host, port, limits)


def register(cli: typer.Typer) -> None:
    """Add ``report`` and ``serve`` to the ``netarena`` command."""
    cli.command()(report)
    cli.command()(serve)
