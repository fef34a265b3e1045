"""Command line, part two: ``netarena calibrate``, ``netarena ladder`` and ``netarena power``.

``calibrate`` checks a benchmark build against its calibration ladder (the reference, the
null agent and every baseline with its documented range) before its numbers are trusted;
``ladder`` prints that ladder's documented ranges as Markdown (and rewrites them in a
document such as ``docs/validity.md``) without running anything; ``power`` says how many
queries separate two agents and draws the paper's interval-width figure. Mounted on the
main ``netarena`` command by ``register``.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from netarena.common.cli.console import print_json, print_table, setup_logging
from netarena.common.cli.options import JsonOpt
from netarena.common.core.errors import ConfigError

__all__ = ["register", "calibrate_command", "ladder_command", "power_command"]

err = Console(stderr=True)


def _range(expected: dict[str, tuple[float, float]], metric: str) -> str:
    if metric not in expected:
        return "-"
    lo, hi = expected[metric]
    return f"[{lo:.2f}, {hi:.2f}]"


def calibrate_command(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    queries: Annotated[int, typer.Option("--queries", "-n", min=1)] = 630,
    seed: Annotated[int, typer.Option(help="base seed")] = 1,
    concurrency: Annotated[int, typer.Option(min=1)] = 4,
    agents: Annotated[
        str | None, typer.Option(help="comma-separated agents to run (default: the ladder)")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="directory for each agent's results")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the calibration ladder and check each agent against its documented range."""
    from netarena.common.cli.calibrate import calibrate, ladder_plan_labels
    from netarena.common.core.app import load_app
    from netarena.common.core.plan import QueryPlan, plan_queries
    from netarena.common.core.runner import RunConfig

    setup_logging(logging.WARNING)
    try:
        app = load_app(app_name)
        plan = [  # the default plan, then the labels a baseline is measured on
            query
            for labels in ladder_plan_labels(app)
            for query in plan_queries(
                app, QueryPlan(num_queries=queries, seed=seed, labels=labels or None)
            )
        ]
        only = agents.split(",") if agents else None

        def progress(agent: str, done: int, total: int) -> None:
            if done == total or done % 50 == 0:
                err.print(f"calibrate {app_name}: {agent} {done}/{total}")

        rungs = calibrate(
            app, plan, RunConfig(concurrency=concurrency), out=out, only=only, progress=progress
        )
    except ConfigError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    if as_json:
        print_json({"app": app_name, "queries": queries, "seed": seed,
                    "passed": all(rung.ok for rung in rungs),
                    "agents": [{"agent": rung.agent, "description": rung.description,
                                "expected": rung.expected, "ok": rung.ok,
                                "misses": rung.misses,
                                "summary": rung.summary.model_dump(mode="json")}
                               for rung in rungs]})
    else:
        print_table(_calibration_table(app_name, queries, seed, rungs))
    if not all(rung.ok for rung in rungs):
        raise typer.Exit(1)


def _calibration_table(app_name: str, queries: int, seed: int, rungs: list[Any]) -> Table:
    table = Table(title=f"{app_name} calibration · {queries} queries · seed {seed}")
    for col in ("agent", "solved safely", "expected", "correct", "expected", "safe",
                "expected", "verdict"):
        table.add_column(col, justify="left" if col in ("agent", "verdict") else "right")
    for rung in rungs:
        cells = [rung.agent]
        for metric in ("solved_safely", "correctness", "safety"):
            stat = rung.summary.rate_of(metric)
            lo, hi = stat.ci95
            cells += [f"{stat.rate or 0.0:.3f} [{lo:.2f}, {hi:.2f}]",
                      _range(rung.expected, metric)]
        cells.append("ok" if rung.ok else "OUT OF RANGE: " + "; ".join(rung.misses))
        table.add_row(*cells)
    return table


def ladder_command(
    app_names: Annotated[
        list[str] | None, typer.Argument(metavar="[APP]...", help="apps (default: every app)")
    ] = None,
    write: Annotated[
        Path | None,
        typer.Option(help="rewrite each app's <!-- ladder:APP:begin/end --> block in this file"),
    ] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the ranges as JSON instead of Markdown")] = False,
) -> None:
    """Print the calibration ladder's documented ranges as Markdown (nothing is run)."""
    from netarena.common.cli.calibrate import ladder, ladder_table, write_ladder_table
    from netarena.common.core.app import app_names as registered
    from netarena.common.core.app import load_app

    try:
        apps = [load_app(name) for name in (app_names or registered())]
        if as_json:
            print_json([{"app": app.name, "agent": agent, "expected": expected,
                         "description": text}
                        for app in apps for agent, expected, text in ladder(app)])
            return
        if write is None:
            typer.echo("\n".join(ladder_table(app) for app in apps), nl=False)
            return
        text = write.read_text()
        for app in apps:
            text = write_ladder_table(text, app)
        write.write_text(text)
    except (ConfigError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    err.print(f"{write}: ladder of {', '.join(app.name for app in apps)} rewritten")


def _outcomes(paths: list[Path], metric: str) -> dict[str, list[bool]]:
    from netarena.common.reporting.power import flags
    from netarena.common.reporting.results import load_results

    groups: dict[str, list[Any]] = defaultdict(list)
    records = load_results(paths, runs_apart=True)
    apps = {r.app for r in records}
    for r in records:
        groups[r.agent if len(apps) == 1 else f"{r.app}/{r.agent}"].append(r)
    return {name: flags(rs, metric) for name, rs in sorted(groups.items())}


def _comparisons_table(comparisons: list[Any], metric: str) -> Table:
    table = Table(title=f"queries per agent to separate neighbours on {metric} (95%)")
    for col in (
        "agents",
        "rates",
        "observed n",
        "overlap now",
        "disjoint Wilson 95%",
        "disjoint Wald 95%",
        "test α=.05 power .8",
    ):
        table.add_column(col, justify="left" if col == "agents" else "right")
    for c in comparisons:
        observed = f"{c.n_a} / {c.n_b}" if c.n_a else "assumed"
        table.add_row(
            f"{c.a} vs {c.b}",
            f"{c.rate_a:.3f} vs {c.rate_b:.3f}",
            observed,
            "-" if c.overlap_now is None else f"{c.overlap_now:.2f}",
            *(str(n) if n else "never (equal rates)" for n in (c.wilson_n, c.wald_n, c.test_n)),
        )
    return table


def power_command(
    results: Annotated[
        list[Path] | None, typer.Argument(help="results files or run dirs, one agent each")
    ] = None,
    rates: Annotated[
        str | None, typer.Option(help="assumed rates instead of results, e.g. 0.62,0.71")
    ] = None,
    metric: Annotated[str, typer.Option(help="solved_safely, correctness or safety")] = (
        "solved_safely"
    ),
    plot: Annotated[Path | None, typer.Option(help="PNG of width and overlap vs N")] = Path(
        "power.png"
    ),
    as_json: Annotated[bool, typer.Option("--json", help="print the comparisons as JSON")] = False,
) -> None:
    """How many queries separate agents at 95%, from results files or assumed rates."""
    from netarena.common.reporting.power import METRIC_FLAGS, compare, curves

    outcomes: dict[str, Any]
    try:
        if metric not in METRIC_FLAGS:
            raise ConfigError(f"unknown metric {metric!r}: use {', '.join(METRIC_FLAGS)}")
        if rates:
            values = [float(x) for x in rates.split(",")]
            if len(values) < 2 or not all(0 <= v <= 1 for v in values):
                raise ConfigError("--rates needs two or more rates between 0 and 1")
            outcomes = {f"p={v:g}": v for v in values}
        elif results:
            outcomes = _outcomes(results, metric)
        else:
            raise ConfigError("give results files (two agents or more) or --rates P1,P2")
        if len(outcomes) < 2:
            raise ConfigError(f"need two agents or more, found {len(outcomes)}")
    except (ConfigError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from exc
    data = curves(outcomes)
    order = sorted(outcomes, key=lambda name: data.rates[name])
    comparisons = [
        compare(a, b, outcomes[a], outcomes[b]) for a, b in zip(order, order[1:], strict=False)
    ]
    if as_json:
        print_json({"metric": metric, "rates": data.rates,
                    "comparisons": [asdict(c) for c in comparisons]})
    else:
        print_table(_comparisons_table(comparisons, metric))
    if plot is not None:
        from netarena.common.reporting.report_plots import plot_power

        plot_power(f"{metric}", data.widths, data.rates, data.overlaps, plot)
        err.print(f"figure: {plot}")


def register(cli: typer.Typer) -> None:
    """Add ``calibrate``, ``ladder`` and ``power`` to the ``netarena`` command."""
    cli.command("calibrate")(calibrate_command)
    cli.command("ladder")(ladder_command)
    cli.command("power")(power_command)
