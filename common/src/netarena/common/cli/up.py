"""Command line, part four: ``netarena up`` and ``netarena compose`` (containers).

``up`` runs one assessment with the green and purple agents in containers on the Docker SDK
(``netarena.common.launch.launcher``); ``compose`` writes the leaderboard-shaped compose file for
users who run compose themselves (``netarena.common.launch.compose``). Mounted on the main
``netarena`` command by ``register``.
"""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from netarena.common.cli.console import setup_logging
from netarena.common.cli.publish import config_object, print_assessment
from netarena.common.core.errors import AgentError, ConfigError, LaunchError
from netarena.common.launch.seccomp import PROFILE_FILE

__all__ = ["register", "up_command", "compose_command"]

err = Console(stderr=True)


def _env(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE``, or ``KEY`` alone for this shell's value (as ``docker run -e``)."""
    env = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not key:
            raise ConfigError(f"--purple-env takes KEY=VALUE or KEY, not {pair!r}")
        if not sep:
            if key not in os.environ:
                raise ConfigError(f"--purple-env {key}: not set in this shell")
            value = os.environ[key]
        env[key] = value
    return env


def _role_id(pair: str) -> tuple[str, str]:
    role, sep, value = pair.partition("=")
    if not sep or not role:
        raise ConfigError(f"--agentbeats-id takes ROLE=ID, not {pair!r}")
    return role, value


def _config(text: str, queries: int | None, seed: int | None) -> dict[str, Any]:
    config = config_object(text)
    if queries is not None:
        config["num_queries"] = queries
    if seed is not None:
        config["seed"] = seed
    return config


def up_command(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    purple: Annotated[str, typer.Option(
        help="the purple agent: an image to start, or the URL of a running A2A agent")],
    green: Annotated[str | None, typer.Option(
        help="the green image (default netarena-APP:latest)")] = None,
    queries: Annotated[int | None, typer.Option("--queries", "-n", min=1)] = None,
    seed: Annotated[int | None, typer.Option(help="base seed (random when absent)")] = None,
    config: Annotated[str, typer.Option(help="assessment config, JSON")] = "{}",
    purple_env: Annotated[list[str], typer.Option(
        "--purple-env", "-e", help="KEY=VALUE (or KEY from this shell) for the purple "
        "container, e.g. NETARENA_SOLVER=reference")] = [],  # noqa: B006 - typer's idiom
    network: Annotated[str, typer.Option(
        help="bridge (a private network), shared (one network namespace), auto (bridge, "
             "else shared) or host (only for a purple URL on this machine's loopback: the "
             "green container joins this machine's network)")] = "auto",
    pull: Annotated[str, typer.Option(help="pull images: missing, never or always")] = "missing",
    health_timeout: Annotated[float, typer.Option(
        help="longest wait for the containers to become healthy, seconds")] = 180.0,
    idle_timeout: Annotated[float, typer.Option(
        help="longest wait for the green agent's next event, seconds")] = 900.0,
    out: Annotated[Path | None, typer.Option(
        help="directory for results.jsonl, summary.json, agentbeats.json and the logs")] = None,
    expect_correctness: Annotated[float | None, typer.Option(
        help="exit 1 unless correctness reaches this rate (smoke checks)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
) -> None:
    """Run one assessment with the green and purple agents in containers; remove them after."""
    from netarena.common.core.signals import run_until_stopped
    from netarena.common.launch.launcher import UpSpec, up

    setup_logging(logging.WARNING)
    try:
        if pull not in ("missing", "never", "always"):
            raise ConfigError("--pull must be missing, never or always")
        spec = UpSpec(app=app_name, purple=purple, green=green,
                      config=_config(config, queries, seed), purple_env=_env(purple_env),
                      network=network, pull=pull, health_timeout_s=health_timeout,
                      idle_timeout_s=idle_timeout)
        result = run_until_stopped(up(
            spec, out=out, on_status=lambda state, text: err.print(f"{state}: {text}"),
            on_event=lambda text: err.print(f"[dim]up: {text}[/dim]")))
    except (ConfigError, LaunchError, AgentError) as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    except KeyboardInterrupt as exc:
        err.print("stopped; every container and network of this run was removed")
        raise typer.Exit(130) from exc
    run = result.assessment
    phases = ", ".join(f"{k} {v:.1f}s" for k, v in result.timings_s.items())
    err.print(f"up: {result.network_mode} network; {phases}")
    if out is not None:
        err.print(f"wrote {out}/results.jsonl, summary.json, agentbeats.json and logs")
    print_assessment(run, as_json)
    rate = run.summary.correctness.rate if run.summary is not None else None
    if expect_correctness is not None and (rate is None or rate < expect_correctness):
        err.print(f"[red]correctness {rate} < {expect_correctness}[/red]")
        raise typer.Exit(1)


def compose_command(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    purple: Annotated[str, typer.Option(help="the purple image")] = "netarena-purple:latest",
    green: Annotated[str | None, typer.Option(
        help="the green image (default netarena-APP:latest)")] = None,
    purple_env: Annotated[list[str], typer.Option(
        "--purple-env", "-e", help="KEY=VALUE for the purple service")] = [],  # noqa: B006
    config: Annotated[str, typer.Option(help="assessment config for the client, JSON")] = "{}",
    network: Annotated[str, typer.Option(
        help="bridge (service names, as the leaderboard's) or shared (one namespace)")
    ] = "bridge",
    client_out: Annotated[str, typer.Option(
        help="host folder the client service writes results.json into")] = "./output",
    client_script: Annotated[str, typer.Option(
        help="host path of a client script to mount and run instead of the image's "
             "netarena.common.launch.smoke_client")] = "",
    client_image: Annotated[str, typer.Option(
        help="the client's image (a NetArena image; default: the purple image)")] = "",
    client_user: Annotated[str, typer.Option(
        help="uid:gid the client runs as (default root, so it can write into a folder "
             "the engine creates; the file gets the folder's owner)")] = "0:0",
    agentbeats_id: Annotated[list[str], typer.Option(
        help="ROLE=ID: the AgentBeats id the results file names for a role (repeat; "
             "${VAR} is left for compose)")] = [],  # noqa: B006 - typer's idiom
    expect_correctness: Annotated[float | None, typer.Option(
        help="smoke checks: the client fails below this correctness (default: never)")
    ] = None,
    token: Annotated[str | None, typer.Option(
        help="the green server's bearer token, shared with the client only (default: a "
             "fresh random one)")] = None,
    seccomp_file: Annotated[str, typer.Option(
        help="where the compose file finds route's seccomp profile (relative to the "
             "compose file; --out writes it there)")] = f"./{PROFILE_FILE}",
    out: Annotated[Path | None, typer.Option(help="write here instead of stdout")] = None,
) -> None:
    """Write the leaderboard-shaped compose file (green, purple, client) for APP."""
    from netarena.common.launch.compose import ComposeSpec, compose_yaml
    from netarena.common.launch.privileges import privileges
    from netarena.common.launch.seccomp import profile_text

    try:
        text = compose_yaml(ComposeSpec(
            app=app_name, purple=purple, green=green or f"netarena-{app_name}:latest",
            purple_env=_env(purple_env), config=_config(config, None, None), network=network,
            client_out=client_out, client_script=client_script,
            client_user=client_user, client_image=client_image,
            expect_correctness=expect_correctness,
            agentbeats_ids=dict(_role_id(pair) for pair in agentbeats_id),
            token=token or secrets.token_hex(24), seccomp_file=seccomp_file))
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False)
        raise typer.Exit(2) from exc
    needs_profile = privileges(app_name).seccomp is not None
    if out is None:
        typer.echo(text, nl=False)
        if needs_profile:
            err.print(f"{app_name} needs its seccomp profile at {escape(seccomp_file)} "
                      "(relative to the compose file): --out writes both", highlight=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        err.print(f"wrote {out}")
        if needs_profile:
            profile = out.parent / seccomp_file
            profile.write_text(profile_text(), encoding="utf-8")
            err.print(f"wrote {profile}")


def register(cli: typer.Typer) -> None:
    """Add ``up`` and ``compose`` to the ``netarena`` command."""
    cli.command("up")(up_command)
    cli.command("compose")(compose_command)
