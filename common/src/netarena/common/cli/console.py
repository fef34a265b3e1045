"""What the ``netarena`` commands print: the error console, tables, JSON, run summaries.

With the rest of ``netarena.common.cli``, the only code that prints. Tables go to stdout at
their full width when stdout is not a terminal (a pipe or a log keeps every column); the
root command's ``-v``/``--log-level`` choice is kept here for every command's logging.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from netarena.common.core.summary import RunSummary
from netarena.common.reporting.summaries import SCORECARD_COLUMNS, scorecard_cells

__all__ = ["err", "print_json", "print_summary", "print_table", "render_summary",
           "set_log_level", "setup_logging"]

err = Console(stderr=True)

_chosen_level: int | None = None
"""The level the root command was given (``-v``, ``--log-level``), or ``None``."""


def set_log_level(level: int | None) -> None:
    """Remember the user's log level (``None``: each command's default) and apply it now."""
    global _chosen_level
    _chosen_level = level
    if level is not None:
        setup_logging(level)


def setup_logging(default: int) -> None:
    """Log to stderr at the user's level, else at ``default`` (the command's own choice)."""
    logging.basicConfig(level=_chosen_level or default,
                        format="%(levelname)s:%(name)s:%(message)s")
    if _chosen_level is not None:  # also when logging was configured before
        logging.getLogger().setLevel(_chosen_level)


def print_table(table: Table, console: Console | None = None) -> None:
    """Print ``table`` on stdout; when that is not a terminal, wide enough for every column.

    Rich lays tables out for the console's width, 80 columns when stdout is a pipe or a
    file, and drops or folds what does not fit; a log or a ``| grep`` must see it all.
    """
    out = console or Console()
    if not out.is_terminal:
        need = out.measure(table, options=out.options.update_width(100_000)).maximum
        out = Console(width=max(out.width, need), file=out.file)
    out.print(table)


def print_json(value: Any) -> None:
    """``value`` as indented JSON on stdout (the ``--json`` form of every table)."""
    typer.echo(json.dumps(value, indent=2, default=str))


def render_summary(summary: RunSummary) -> Table:
    """A rich table of a run summary: overall, per level and per label, with 95% CIs.

    The headline column is ``solved safely`` (correct, safe, no collateral damage);
    ``safe|changed`` is safety among the episodes in which the agent changed something. Rows
    ``states Q`` cover the queries that state qualifier ``Q``.
    """
    table = Table(title=f"{summary.app} · {summary.agent} · seed {summary.seed}")
    for col in ("group", *SCORECARD_COLUMNS):
        table.add_column(col, justify="left" if col == "group" else "right", no_wrap=True)
    table.add_row(*scorecard_cells("all", summary))
    for level, m in summary.by_level.items():
        table.add_row(*scorecard_cells(f"level {level}", m))
    for label, m in summary.by_label.items():
        table.add_row(*scorecard_cells(f"  {label}", m))
    for qualifier, m in summary.by_qualifier.items():
        table.add_row(*scorecard_cells(f"states {qualifier}", m))
    return table


def print_summary(summary: RunSummary, as_json: bool, uniform: RunSummary | None) -> None:
    """Print a run's summary: JSON on stdout, or tables (uniform set first when adaptive)."""
    if as_json:
        typer.echo(json.dumps(summary.model_dump(mode="json"), indent=2))
        return
    out = Console()
    if uniform is not None:
        out.print("uniform set (the results the adaptive draw came from):")
        print_table(render_summary(uniform), out)
        out.print("adaptive set (failure-targeted; not comparable with uniform rates):")
    print_table(render_summary(summary), out)
    if summary.usage:
        u = summary.usage
        out.print(f"LLM: {u['llm_calls']} calls, {u['prompt_tokens']} prompt + "
                  f"{u['completion_tokens']} completion tokens, ${u['cost_usd']:.6f}")
