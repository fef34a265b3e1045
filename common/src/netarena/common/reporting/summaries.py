"""Per-agent summaries and the plain-text scorecard of a report.

``run_summaries`` groups records by app and agent and summarizes each group with
``stats.summarize``; ``render_text`` lays the summaries out as text tables (overall, per level,
per label, per qualifier, LLM usage and interval overlaps). The HTML report shares the
scorecard's columns and cells.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from netarena.common.core.replay import USAGE_COLUMNS, usage_cells, usage_summary
from netarena.common.core.stats import overlap, summarize
from netarena.common.core.summary import Metrics, Rate, RunSummary
from netarena.common.core.types import QueryResult

__all__ = [
    "BREAKDOWNS",
    "OVERLAP_METRICS",
    "SCORECARD_COLUMNS",
    "breakdown_order",
    "overlap_matrix",
    "render_text",
    "run_summaries",
    "scorecard_cells",
]

OVERLAP_METRICS = ("solved_safely", "correctness", "safety")
"""Metrics whose interval overlap between agents a report shows."""


def run_summaries(results: Sequence[QueryResult]) -> dict[str, list[RunSummary]]:
    """One ``stats.summarize`` summary per ``(app, agent)``, grouped by app.

    Returns:
        App name → summaries sorted by agent name (the seed is ``None``: a report may merge runs).
    """
    groups: dict[tuple[str, str], list[QueryResult]] = defaultdict(list)
    for r in results:
        groups[(r.app, r.agent)].append(r)
    by_app: dict[str, list[RunSummary]] = defaultdict(list)
    for (app, agent), rs in sorted(groups.items()):
        summary = summarize(rs, app=app, agent=agent, seed=None)
        by_app[app].append(summary.model_copy(update={"usage": usage_summary(rs) or None}))
    return dict(by_app)


def overlap_matrix(runs: Sequence[RunSummary], metric: str) -> list[list[float]]:
    """Pairwise ``stats.overlap`` of the agents' 95% intervals for one metric.

    Args:
        runs: Summaries of one app, one per agent; rows and columns follow their order.
        metric: A rate of the summaries (``"solved_safely"``, ``"correctness"``, ...).
    """
    cis = [run.rate_of(metric).ci95 for run in runs]
    return [[round(overlap(a, b), 4) for b in cis] for a in cis]


def _fmt_rate(stat: Rate) -> str:
    if stat.rate is None:
        return "n/a"
    lo, hi = stat.ci95
    return f"{stat.rate:.3f} [{lo:.3f}, {hi:.3f}]"


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


def scorecard_cells(name: str, m: Metrics) -> list[str]:
    """One scorecard row (``name`` then ``SCORECARD_COLUMNS``) of a summary or breakdown."""
    changed, collateral, blind = m.changed, m.collateral, m.blind_writes
    return [name, str(m.queries), _fmt_rate(m.solved_safely), _fmt_rate(m.correctness),
            _fmt_rate(m.safety), _fmt_rate(m.safety_when_changed),
            f"{changed.rate:.2f}" if changed.n and changed.rate is not None else "n/a",
            f"{collateral.rate:.2f}" if collateral.n and collateral.rate is not None else "n/a",
            f"{blind.mean:.1f}" if blind.n and blind.mean is not None else "n/a",
            f"{m.latency.median_s:.3f}", f"{m.latency.mean_turns:.1f}", str(m.errors)]


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


def render_text(by_app: dict[str, list[RunSummary]],
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
        out += _table([_HEAD] + [_row(run.agent, run) for run in runs]) + [""]
        usage = [usage_cells(run.agent, run.usage) for run in runs if run.usage]
        if usage:
            out += ["-- LLM usage --", *_table([list(USAGE_COLUMNS), *usage]), ""]
        for key, title in BREAKDOWNS:
            groups = (order or {}).get(app, {}).get(key) or sorted(
                {g for run in runs for g in run.breakdown(key)})
            if not groups:
                continue
            rows = [[title, *_HEAD]]
            for group in groups:
                rows += [[group, *_row(run.agent, run.breakdown(key)[group])]
                         for run in runs if group in run.breakdown(key)]
            out += [f"-- per {title} --", *_table(rows), ""]
        agents = [run.agent for run in runs]
        for metric in OVERLAP_METRICS:
            matrix = overlap_matrix(runs, metric)
            rows = [[f"{metric} overlap", *agents]]
            rows += [[a, *(f"{v:.2f}" for v in row)] for a, row in zip(agents, matrix, strict=True)]
            out += [f"-- 95% interval overlap, {metric} (0 = separable) --", *_table(rows), ""]
    return "\n".join(out).rstrip() + "\n"
