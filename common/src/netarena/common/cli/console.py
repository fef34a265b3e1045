"""What the ``netarena`` commands print: the error console and run summaries.

With the rest of ``netarena.common.cli.root``, the only code that prints.
"""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from netarena.common.reporting.summaries import SCORECARD_COLUMNS, scorecard_cells

__all__ = ["err", "print_summary", "render_summary"]

err = Console(stderr=True)


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


def print_summary(summary: dict[str, Any], as_json: bool, uniform: dict[str, Any] | None) -> None:
    """Print a run's summary: JSON on stdout, or tables (uniform set first when adaptive)."""
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
