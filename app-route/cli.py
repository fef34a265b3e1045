"""``netarena route ...``: maintenance and exploration commands of the route app."""

from __future__ import annotations

from typing import Annotated

import typer

from netarena.route.namespaces import cleanup as _cleanup

__all__ = ["app"]

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Route app tools.")


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


@app.command()
def shell(
    seed: Annotated[int, typer.Option(help="query seed")],
    level: Annotated[int, typer.Option(help="level 1-3")] = 1,
    label: Annotated[str | None, typer.Option(help="fault label, e.g. DR+WR")] = None,
    param: Annotated[
        list[str], typer.Option("--param", "-p", help="app parameter KEY=VALUE")
    ] = [],  # noqa: B006
) -> None:
    """Open Mininet's CLI on that query's faulted network (as root), for a person to explore.

    The same seed, level, label and parameters give the same network and faults as in an
    evaluation. Commands typed here run in Mininet's own node shells, not in the agents'
    sandbox. The network is removed when the CLI exits.
    """
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    from netarena.common.cli import parse_params  # lazily: common.cli loads this module
    from netarena.route.faults import FAULT_TYPES
    from netarena.route.generator import RouteApp
    from netarena.route.namespaces import enter

    route = RouteApp(parse_params(param))
    query = route.generate(seed, level, label)
    episode = route.open(query)
    try:
        print(query.prompt)
        print(f"\n## Current connectivity\n{episode.matrix.text()}\n")
        setLogLevel("output")
        with enter(episode.net.netns("net")):  # `sh ...` sees the switches
            CLI(episode.net.mininet)
        faults = "; ".join(
            f"{FAULT_TYPES[f['type']]} ({f['method']}) on {f['node']}" for f in episode.faults
        )
        print(f"The injected faults were: {faults}")
    finally:
        episode.close()
