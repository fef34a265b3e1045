"""The ``netarena`` command: the root that every subcommand registers with.

``netarena.common.cli.root`` is the only package that prints. Commands live by concern: ``run``
(run, rollouts), ``serve`` (serve, report), ``validity`` (calibrate, ladder, power, ...),
``publish`` (assess, leaderboard); other distributions add theirs through the
``netarena.commands`` entry points (each app's group, a2a_llm's ``purple``).
"""

from __future__ import annotations

import logging
import sys
from importlib.metadata import entry_points

import typer

from netarena.common.cli.publish import register as register_publish_commands
from netarena.common.cli.run import register as register_run_commands
from netarena.common.cli.serve import register as register_serve_commands
from netarena.common.cli.up import register as register_up_commands
from netarena.common.cli.validity import register as register_validity_commands

__all__ = ["main", "cli"]

cli = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="NetArena: benchmark AI agents that operate networks.",
)


@cli.callback()
def _root() -> None:
    """NetArena: benchmark AI agents that operate networks."""


register_run_commands(cli)
register_serve_commands(cli)
register_validity_commands(cli)
register_publish_commands(cli)
register_up_commands(cli)


def _add_app_commands() -> None:
    """Mount the commands other distributions register under ``netarena.commands``.

    A ``typer.Typer`` becomes a group (``netarena malt export-sft``, ...); a function becomes
    a command of that name (``netarena purple``, from ``netarena-a2a-llm``).
    """
    for ep in entry_points(group="netarena.commands"):
        try:
            commands = ep.load()
            if isinstance(commands, typer.Typer):
                cli.add_typer(commands, name=ep.name)
            else:
                cli.command(name=ep.name)(commands)
        except ImportError as exc:  # an app missing an optional dependency keeps the CLI usable
            logging.getLogger(__name__).debug("commands of %s unavailable: %s", ep.name, exc)


def _builtin(argv: list[str]) -> bool:
    """Whether ``argv`` runs one of this package's commands (the others need not load)."""
    names = {info.name or (info.callback.__name__.replace("_", "-") if info.callback else "")
             for info in cli.registered_commands}
    return bool(argv) and argv[0] in names


def main() -> None:
    """Console-script entry point.

    Other distributions' commands load only when the command line may need them: their
    imports cost ~80 MB, which ``netarena assess`` (bounded to stay under 100 MB whatever
    a green agent sends) cannot spare.
    """
    if not _builtin(sys.argv[1:]):
        _add_app_commands()
    cli()
