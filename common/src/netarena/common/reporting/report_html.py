"""The HTML page of ``netarena report``: one self-contained file next to its PNG plots."""

from __future__ import annotations

from html import escape
from pathlib import Path

from netarena.common.core.replay import USAGE_COLUMNS, usage_cells
from netarena.common.core.summary import RunSummary
from netarena.common.reporting.summaries import SCORECARD_COLUMNS, scorecard_cells

__all__ = ["render_html"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
th { background: #f2f2f2; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5em 0; }
.note { color: #555; font-size: 0.9em; }
"""

_COLUMNS = ("agent", *SCORECARD_COLUMNS)
_cells = scorecard_cells


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><tr>{th}</tr>{body}</table>"


def _img(path: Path, alt: str) -> str:
    return f'<img src="{escape(path.name)}" alt="{escape(alt)}">'


def _breakdown(runs: list[RunSummary], key: str, title: str, groups: list[str]) -> str:
    rows = [[group, *_cells(run.agent, run.breakdown(key)[group])]
            for group in groups for run in runs if group in run.breakdown(key)]
    return _table([title, *_COLUMNS], rows)


def _qualifiers(runs: list[RunSummary]) -> list[str]:
    """The per-qualifier table, for apps whose queries state qualifiers."""
    groups = sorted({q for run in runs for q in run.by_qualifier})
    if not groups:
        return []
    return ["<h3>Per stated qualifier</h3>",
            "<p class='note'>Each row covers the queries that state the qualifier: a low "
            "rate shows what the agent misreads.</p>",
            _breakdown(runs, "by_qualifier", "qualifier", groups)]


def render_html(title: str, by_app: dict[str, list[RunSummary]], overall: Path,
                plots: dict[str, list[Path]],
                overlaps: dict[str, dict[str, list[list[float]]]],
                order: dict[str, dict[str, list[str]]]) -> str:
    """The report page.

    Args:
        title: Page title.
        by_app: App → run summaries (from ``report.run_summaries``).
        overall: The all-apps rates plot.
        plots: App → its ``[levels, labels, overlap, power]`` plots.
        overlaps: App → metric → pairwise interval-overlap matrix (agents in ``by_app`` order).
        order: App → ``by_level``/``by_label`` → groups in display order.
    """
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>",
             f"<style>{_STYLE}</style></head><body><h1>{escape(title)}</h1>",
             "<p class='note'>Rates with 95% Wilson score intervals, recomputed from the "
             "per-query records. The headline is <b>solved safely</b>: correct, safe and "
             "no <b>collateral</b> damage to state outside the fault. "
             "Safety alone flatters inaction (doing nothing is safe), so <b>safe when "
             "changed</b> is safety among the episodes in which the agent changed something, "
             "and <b>changed</b> how often it did. Overlap is the shared part of two agents' "
             "intervals as a fraction of the narrower one: 0 means the agents are "
             "separable.</p>",
             _img(overall, "rates per agent and app")]
    for app, runs in sorted(by_app.items()):
        agents = [run.agent for run in runs]
        levels, labels, overlap_png, power_png = plots[app]
        usage = [usage_cells(run.agent, run.usage) for run in runs if run.usage]
        parts += [f"<h2>{escape(app)}</h2>",
                  _table(list(_COLUMNS), [_cells(run.agent, run) for run in runs]),
                  _table(list(USAGE_COLUMNS), usage) if usage else "",
                  "<h3>Per level</h3>", _img(levels, f"{app} per level"),
                  _breakdown(runs, "by_level", "level", order[app]["by_level"]),
                  "<h3>Per label</h3>", _img(labels, f"{app} per label"),
                  _breakdown(runs, "by_label", "label", order[app]["by_label"]),
                  *_qualifiers(runs),
                  "<h3>Interval overlap between agents</h3>", _img(overlap_png, f"{app} overlap")]
        for metric, matrix in overlaps[app].items():
            parts.append(_table([metric, *agents],
                                [[a, *(f"{v:.2f}" for v in row)]
                                 for a, row in zip(agents, matrix, strict=True)]))
        parts += ["<h3>How many queries separate the agents</h3>",
                  "<p class='note'>Width of the 95% interval and overlap of agents neighbouring "
                  "in rate against the number of queries, measured on random subsets of these "
                  "runs (the paper's figure; the dotted line marks 150 queries, the size of a "
                  "static benchmark). <code>netarena power</code> gives the numbers.</p>",
                  _img(power_png, f"{app} interval width vs queries")]
    parts.append("</body></html>")
    return "\n".join(parts)
