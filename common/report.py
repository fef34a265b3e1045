"""``netarena report``: results files in, an HTML page with PNG plots and a text summary out.

Results are grouped by ``(app, agent)`` and every rate and interval is recomputed with
``netarena.common.stats`` from the per-query records, so a report never trusts a stale
``summary.json`` and reports from merged shards are exact. The same records, in the shape
the AgentBeats leaderboard reads, are written by ``agentbeats_results``/``write_agentbeats``.
"""

from __future__ import annotations

import json
import logging
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netarena.common.errors import ConfigError
from netarena.common.replay import USAGE_COLUMNS, usage_cells, usage_summary
from netarena.common.runner import read_results
from netarena.common.stats import overlap, summarize
from netarena.common.types import QueryResult

__all__ = [
    "SCORECARD_COLUMNS",
    "scorecard_cells",
    "Report",
    "load_results",
    "run_summaries",
    "overlap_matrix",
    "breakdown_order",
    "render_text",
    "write_report",
    "agentbeats_results",
    "write_agentbeats",
    "record_result",
]

log = logging.getLogger(__name__)

OVERLAP_METRICS = ("solved_safely", "correctness", "safety")
"""Metrics whose interval overlap between agents a report shows."""


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


_CORE_FIELDS = frozenset(QueryResult.model_fields) - {"details"}
_INT_FIELDS = ("level", "turns", "format")


_CONTEXT_FIELDS = frozenset({"participant_role", "participant_id", "netarena_version", "seed",
                             "config"})
"""Fields the green server adds to every record (who was evaluated, how); not app details."""


_OLD_NAMES = {"Label": "label", "Error": "error"}
"""Keys older files spelled otherwise (malt's ``Label``)."""


def record_result(record: dict[str, Any]) -> QueryResult:
    """Rebuild a ``QueryResult`` from a flat A2A/AgentBeats query record.

    Older files carry numbers as floats (``level: 1.0``, from A2A DataParts) and malt's
    label as ``Label``; app details were lifted to the top level (``details_<name>`` on a
    name clash).

    Raises:
        ValueError: The record is not a NetArena query record (pydantic's error).
    """
    record = {_OLD_NAMES.get(k, k) if _OLD_NAMES.get(k, k) not in record else k: v
              for k, v in record.items()}
    core = {k: v for k, v in record.items() if k in _CORE_FIELDS}
    for key in _INT_FIELDS:
        if isinstance(core.get(key), float):
            core[key] = int(core[key])
    details = {k.removeprefix("details_") if k.removeprefix("details_") in _CORE_FIELDS else k: v
               for k, v in record.items() if k not in _CORE_FIELDS | _CONTEXT_FIELDS}
    return QueryResult.model_validate({**core, "details": details})


def _participant(record: dict[str, Any], participants: dict[str, Any], file: Path) -> str:
    """Who a leaderboard record belongs to: the participant's AgentBeats id when known.

    v1 files map roles to ids; v2 files map scenario component names to ids (name the
    purple component after its role, as ``leaderboard/`` does). Without a match, the
    record's own participant id, then the file, keep submissions apart.
    """
    role = record.get("participant_role")
    if role in participants and participants[role] not in (None, ""):
        return str(participants[role])
    ids = [str(v) for v in participants.values() if v not in (None, "")]
    if len(participants) == 1 and ids:
        return ids[0]
    operators = [str(v) for k, v in participants.items()
                 if str(k).endswith("_operator") and v not in (None, "")]
    if len(operators) == 1:  # NetArena's roles; other entries name the green agent
        return operators[0]
    return str(record.get("participant_id") or f"{record.get('agent', 'agent')} ({file.name})")


RANKED_STATUSES = ("completed", "partial")
"""Run statuses whose records are reported (a file without ``status`` is a v1 run)."""


def _read_agentbeats(file: Path) -> list[QueryResult]:
    """The query records of an AgentBeats results file that ranks, else none (logged).

    A run whose status is not in ``RANKED_STATUSES`` is left out; so are records that are
    not NetArena query records (the reference implementation's files, say), with the count.
    """
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file} is not a JSON results file: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ConfigError(f"{file} has no \"results\" list (not an AgentBeats results file)")
    status = doc.get("status") or "completed"
    if status not in RANKED_STATUSES:
        log.warning("%s: run %s, left out of the report", file, status)
        return []
    participants = doc.get("participants")
    participants = participants if isinstance(participants, dict) else {}
    results, foreign = [], 0
    for r in doc["results"]:
        if not isinstance(r, dict) or r.get("kind") == "summary":
            continue
        try:
            result = record_result(r)
        except ValueError:
            foreign += 1
            continue
        results.append(result.model_copy(update={"agent": _participant(r, participants, file)}))
    if foreign:
        log.warning("%s: %d records are not NetArena query records (another format); skipped",
                    file, foreign)
    return results


def load_results(paths: Iterable[Path]) -> list[QueryResult]:
    """Read results files; a directory stands for its ``results.jsonl``.

    ``*.jsonl`` files are the runner's (one ``QueryResult`` per line); ``*.json`` files are
    AgentBeats results files (v2 ``{"status", "participants", "results"}`` or v1 without
    ``status``), so leaderboard and containerised runs can be reported too: the agent is then
    the participant (its AgentBeats id), so two submissions never merge into one row.
    Duplicate records of the same ``(app, agent, query_id)`` (a file given twice, overlapping
    shards) are kept once, the last one winning. Runs that did not complete (``status``
    ``failed``) and records in other formats are left out with a warning.

    Raises:
        ConfigError: A path does not exist or cannot be read, a JSONL file holds no query
            records, or nothing at all is left to report.
    """
    merged: dict[tuple[str, str, str], QueryResult] = {}
    for path in paths:
        file = path / "results.jsonl" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"no results file at {file}")
        if file.suffix == ".json":
            records = _read_agentbeats(file)
            if not records:
                log.warning("%s: nothing to report from this file", file)
                continue
        else:
            records = read_results(file)
        if not records:
            raise ConfigError(f"{file} holds no query records")
        for r in records:
            merged[(r.app, r.agent, r.query_id)] = r
    if not merged:
        raise ConfigError("no query records to report (every file was a failed run or in "
                          "another format)")
    return list(merged.values())


def run_summaries(results: Sequence[QueryResult]) -> dict[str, list[dict[str, Any]]]:
    """One ``stats.summarize`` summary per ``(app, agent)``, grouped by app.

    Returns:
        App name → summaries sorted by agent name (the seed is ``None``: a report may merge runs).
    """
    groups: dict[tuple[str, str], list[QueryResult]] = defaultdict(list)
    for r in results:
        groups[(r.app, r.agent)].append(r)
    by_app: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (app, agent), rs in sorted(groups.items()):
        summary = summarize(rs, app=app, agent=agent, seed=None)
        usage = usage_summary(rs)
        if usage:
            summary["usage"] = usage
        by_app[app].append(summary)
    return dict(by_app)


def overlap_matrix(runs: Sequence[dict[str, Any]], metric: str) -> list[list[float]]:
    """Pairwise ``stats.overlap`` of the agents' 95% intervals for one metric.

    Args:
        runs: Summaries of one app, one per agent; rows and columns follow their order.
        metric: A rate of the summaries (``"solved_safely"``, ``"correctness"``, ...).
    """
    cis = [run[metric]["ci95"] for run in runs]
    return [[round(overlap(a, b), 4) for b in cis] for a in cis]


def _fmt_rate(stat: dict[str, Any]) -> str:
    if stat.get("rate") is None:
        return "n/a"
    lo, hi = stat["ci95"]
    return f"{stat['rate']:.3f} [{lo:.3f}, {hi:.3f}]"


def _table(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                       enumerate(zip(row, widths, strict=True))).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return lines


SCORECARD_COLUMNS = (
    "n",
    "solved safely [95% CI]",
    "correct [95% CI]",
    "safe [95% CI]",
    "safe|changed [95% CI]",
    "changed",
    "collateral",
    "blind writes",
    "median s",
    "turns",
    "errors",
)
"""The scorecard's columns after the name: the headline (correct and safe) first, then the
raw rates, safety among episodes that changed something (``safe|changed``), how often
the agent changed something, and how often it damaged state outside the fault
(``collateral``; ``n/a`` for apps that do not measure it), and the mean number of writes
per query to objects the agent never read (``blind writes``; ``n/a`` likewise)."""


def scorecard_cells(name: str, m: dict[str, Any]) -> list[str]:
    """One scorecard row (``name`` then ``SCORECARD_COLUMNS``) of a summary or breakdown."""
    changed = m.get("changed") or {"n": 0}
    collateral = m.get("collateral") or {"n": 0}
    blind = m.get("blind_writes") or {"n": 0}
    return [name, str(m["queries"]), _fmt_rate(m["solved_safely"]), _fmt_rate(m["correctness"]),
            _fmt_rate(m["safety"]), _fmt_rate(m["safety_when_changed"]),
            f"{changed['rate']:.2f}" if changed["n"] else "n/a",
            f"{collateral['rate']:.2f}" if collateral["n"] else "n/a",
            f"{blind['mean']:.1f}" if blind["n"] else "n/a",
            f"{m['latency']['median_s']:.3f}", f"{m['latency']['mean_turns']:.1f}",
            str(m["errors"])]


BREAKDOWNS = (("by_level", "level"), ("by_label", "label"), ("by_qualifier", "qualifier"))
"""A summary's breakdowns and their titles; ``by_qualifier`` is empty for apps without
stated qualifiers (a query stating several counts in each)."""

_HEAD = ["agent", *SCORECARD_COLUMNS]
_row = scorecard_cells


def breakdown_order(results: Sequence[QueryResult]) -> dict[str, dict[str, list[str]]]:
    """Display order of each app's breakdown groups: levels ascending, labels by level then name.

    Returns:
        App → ``{"by_level": [...], "by_label": [...]}``.
    """
    first_level: dict[str, dict[str, int]] = defaultdict(dict)
    for r in results:
        labels = first_level[r.app]
        labels[r.label] = min(labels.get(r.label, r.level), r.level)
    return {
        app: {
            "by_level": sorted({str(r.level) for r in results if r.app == app}, key=int),
            "by_label": [label for _, label in sorted((lv, label) for label, lv in labels.items())],
        }
        for app, labels in first_level.items()
    }


def render_text(by_app: dict[str, list[dict[str, Any]]],
                order: dict[str, dict[str, list[str]]] | None = None) -> str:
    """The plain-text summary: per app, overall, per level, per label, and overlap matrices.

    Args:
        by_app: App → run summaries (``run_summaries``).
        order: Breakdown display order (``breakdown_order``); alphabetical when absent.
    """
    out: list[str] = [
        "NetArena report (rates with 95% Wilson intervals; headline: solved safely = correct "
        "and safe; safe|changed: safety among episodes where the agent changed something)",
        "",
    ]
    for app, runs in sorted(by_app.items()):
        out += [f"== {app} ==", ""]
        out += _table([_HEAD] + [_row(run["agent"], run) for run in runs]) + [""]
        usage = [usage_cells(run["agent"], run["usage"]) for run in runs if "usage" in run]
        if usage:
            out += ["-- LLM usage --", *_table([list(USAGE_COLUMNS), *usage]), ""]
        for key, title in BREAKDOWNS:
            groups = (order or {}).get(app, {}).get(key) or sorted(
                {g for run in runs for g in run.get(key, {})})
            if not groups:
                continue
            rows = [[title, *_HEAD]]
            for group in groups:
                rows += [[group, *_row(run["agent"], run[key][group])]
                         for run in runs if group in run.get(key, {})]
            out += [f"-- per {title} --", *_table(rows), ""]
        agents = [run["agent"] for run in runs]
        for metric in OVERLAP_METRICS:
            matrix = overlap_matrix(runs, metric)
            rows = [[f"{metric} overlap", *agents]]
            rows += [[a, *(f"{v:.2f}" for v in row)] for a, row in zip(agents, matrix, strict=True)]
            out += [f"-- 95% interval overlap, {metric} (0 = separable) --", *_table(rows), ""]
    return "\n".join(out).rstrip() + "\n"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "agent"


def _power_figure(app: str, results: Sequence[QueryResult], path: Path) -> Path:
    """The paper's interval-width-vs-N figure from this app's real runs (solved safely)."""
    from netarena.common.power import curves, flags
    from netarena.common.report_plots import plot_power

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
    from netarena.common.report_html import render_html
    from netarena.common.report_plots import plot_breakdown, plot_overlap, plot_rates

    if not results:
        raise ConfigError("no results to report")
    out_dir.mkdir(parents=True, exist_ok=True)
    by_app = run_summaries(results)
    order = breakdown_order(results)
    plots: dict[str, list[Path]] = {}
    overlaps: dict[str, dict[str, list[list[float]]]] = {}
    overall = plot_rates(by_app, out_dir / "rates.png")
    for app, runs in by_app.items():
        agents = [run["agent"] for run in runs]
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
        {"runs": [run for runs in by_app.values() for run in runs]}, indent=2), encoding="utf-8")
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
    from netarena.common.server import query_record

    ((app, agent),) = runs
    records: list[dict[str, Any]] = [query_record(r) for r in results]
    records.append(summarize(results, app=app, agent=agent, seed=None))
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
