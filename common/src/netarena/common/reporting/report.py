"""``netarena report``: results files in, an HTML page with PNG plots and a text summary out.

Results are grouped by ``(app, agent)`` and every rate and interval is recomputed with
``netarena.common.core.stats`` from the per-query records, so a report never trusts a stale
``summary.json`` and reports from merged shards are exact. The same records, in the shape
the AgentBeats leaderboard reads, are written by ``agentbeats_results``/``write_agentbeats``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netarena.common.core.errors import ConfigError
from netarena.common.core.stats import summarize
from netarena.common.core.types import QueryResult, query_record
from netarena.common.reporting.summaries import (
    OVERLAP_METRICS,
    breakdown_order,
    overlap_matrix,
    render_text,
    run_summaries,
)

__all__ = ["Report", "agentbeats_results", "write_agentbeats", "write_report"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Report:
    """The files one ``write_report`` call produced."""

    out_dir: Path
    html: Path
    """``index.html``: tables and the plots, viewable offline."""
    text: Path
    """``summary.txt``: the same numbers as plain text."""
    json: Path
    """``summary.json``: every run summary, as ``netarena run --json`` prints them."""
    plots: list[Path] = field(default_factory=list)
    """PNG files, in page order."""


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "agent"


def _power_figure(app: str, results: Sequence[QueryResult], path: Path) -> Path:
    """The paper's interval-width-vs-N figure from this app's real runs (solved safely)."""
    from netarena.common.reporting.power import curves, flags
    from netarena.common.reporting.report_plots import plot_power

    by_agent: dict[str, list[QueryResult]] = defaultdict(list)
    for r in results:
        by_agent[r.agent].append(r)
    data = curves({agent: flags(rs) for agent, rs in sorted(by_agent.items())})
    return plot_power(f"{app} (solved safely)", data.widths, data.rates, data.overlaps, path)


def write_report(results: Sequence[QueryResult], out_dir: Path,
                 title: str = "NetArena report") -> Report:
    """Write ``index.html``, ``summary.txt``, ``summary.json`` and the PNG plots.

    Args:
        results: Per-query records of any number of apps and agents.
        out_dir: Directory to write into (created).
        title: Page title.

    Returns:
        The written files.

    Raises:
        ConfigError: ``results`` is empty.
    """
    from netarena.common.reporting.report_html import render_html
    from netarena.common.reporting.report_plots import plot_breakdown, plot_overlap, plot_rates

    if not results:
        raise ConfigError("no results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    by_app = run_summaries(results)
    order = breakdown_order(results)
    plots: dict[str, list[Path]] = {}
    overlaps: dict[str, dict[str, list[list[float]]]] = {}
    overall = plot_rates(by_app, out_dir / "rates.png")
    for app, runs in by_app.items():
        agents = [run.agent for run in runs]
        matrices = overlaps[app] = {m: overlap_matrix(runs, m) for m in OVERLAP_METRICS}
        plots[app] = [
            plot_breakdown(app, runs, "by_level", out_dir / f"{_slug(app)}-levels.png",
                           order[app]["by_level"]),
            plot_breakdown(app, runs, "by_label", out_dir / f"{_slug(app)}-labels.png",
                           order[app]["by_label"]),
            plot_overlap(app, agents, matrices, out_dir / f"{_slug(app)}-overlap.png"),
            _power_figure(app, [r for r in results if r.app == app],
                          out_dir / f"{_slug(app)}-power.png"),
        ]
    text = out_dir / "summary.txt"
    text.write_text(render_text(by_app, order), encoding="utf-8")
    summary_json = out_dir / "summary.json"
    summary_json.write_text(json.dumps(
        {"runs": [run.model_dump(mode="json") for runs in by_app.values() for run in runs]},
        indent=2), encoding="utf-8")
    html = out_dir / "index.html"
    html.write_text(render_html(title, by_app, overall, plots, overlaps, order), encoding="utf-8")
    log.info("report written to %s", out_dir)
    return Report(out_dir=out_dir, html=html, text=text, json=summary_json,
                  plots=[overall, *(p for ps in plots.values() for p in ps)])


def agentbeats_results(results: Sequence[QueryResult], *,
                       participants: dict[str, str] | None = None,
                       status: str = "completed") -> dict[str, Any]:
    """One assessment's results in the shape the AgentBeats leaderboard stores and queries.

    ``{"status", "participants": {role: id}, "results": [query records..., summary]}``: the
    records are exactly the data parts of the green agent's ``Result`` artifact (the gateway
    stores those): flat per-query records from ``server.query_record`` (booleans as booleans,
    numbers as numbers, app details as top-level fields), then the ``kind: "summary"`` object
    of ``netarena run --json``.

    Args:
        results: Records of exactly one app and one agent (one assessment).
        participants: Role → participant id; defaults to ``{"<app>_operator": <agent name>}``.
        status: The assessment's final task state.

    Raises:
        ConfigError: ``results`` is empty or mixes apps or agents.
    """
    runs = {(r.app, r.agent) for r in results}
    if len(runs) != 1:
        raise ConfigError(
            f"an AgentBeats results file holds one app and one agent, got {sorted(runs)}")

    ((app, agent),) = runs
    records: list[dict[str, Any]] = [query_record(r) for r in results]
    records.append(summarize(results, app=app, agent=agent, seed=None).model_dump(mode="json"))
    return {"status": status, "participants": participants or {f"{app}_operator": agent},
            "results": records}


def write_agentbeats(results: Sequence[QueryResult], out_dir: Path) -> list[Path]:
    """Write one AgentBeats results file per ``(app, agent)`` into ``out_dir``.

    Returns:
        The files, named ``<app>-<agent>.json``.
    """
    groups: dict[tuple[str, str], list[QueryResult]] = defaultdict(list)
    for r in results:
        groups[(r.app, r.agent)].append(r)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for (app, agent), rs in sorted(groups.items()):
        path = out_dir / f"{_slug(app)}-{_slug(agent)}.json"
        path.write_text(json.dumps(agentbeats_results(rs), indent=1), encoding="utf-8")
        written.append(path)
    return written
