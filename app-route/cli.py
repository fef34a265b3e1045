"""``netarena route ...``: maintenance commands of the route app."""

from __future__ import annotations

from typing import Annotated

import typer

from netarena.route.namespaces import cleanup as _cleanup

__all__ = ["app"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Route app maintenance.")


@app.command()
def cleanup(
    all_: Annotated[
        bool, typer.Option("--all", help="also remove episodes of processes still running")
    ] = False,
) -> None:
    """Remove namespaces (and with them links, bridges, rules, processes) left by killed runs.

    Only names of ours (``nr?????_*``) are touched; episodes whose owner process is alive
    are kept unless ``--all`` is given.
    """
    removed = _cleanup(include_live=all_)
    for name in removed:
        print(f"removed {name}")
    print(f"{len(removed)} namespaces removed")
