"""PNG plots for ``netarena report``: rates with 95% intervals, breakdowns, overlap heatmaps.

Every number drawn here comes from a ``netarena.common.core.stats.summarize`` summary (the only
place intervals are computed); this module only lays them out. Interval plots are
dot-and-whisker rather than bars, because the point of the benchmark is whether intervals
separate, and whiskers on bars hide the lower half of each interval.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.typing import ColorType  # noqa: E402

from netarena.common.core.stats import wald_width  # noqa: E402
from netarena.common.core.summary import Rate, RunSummary  # noqa: E402

__all__ = [
    "METRICS",
    "BREAKDOWN_METRICS",
    "plot_rates",
    "plot_breakdown",
    "plot_overlap",
    "plot_power",
]

log = logging.getLogger(__name__)

#: The rate metrics a report plots per agent, headline first.
METRICS: tuple[str, ...] = ("solved_safely", "correctness", "safety", "safety_when_changed")
#: The rate metrics of the per-level and per-label panels.
BREAKDOWN_METRICS: tuple[str, ...] = ("solved_safely", "correctness", "safety")

_METRIC_STYLE = {
    "solved_safely": ("D", "#2ca02c"),
    "correctness": ("o", "#1f77b4"),
    "safety": ("s", "#d62728"),
    "safety_when_changed": ("^", "#9467bd"),
}
_METRIC_TITLE = {
    "solved_safely": "solved safely (correct and safe)",
    "correctness": "correct",
    "safety": "safe",
    "safety_when_changed": "safe when it changed something",
}
_AGENT_COLOURS: list[ColorType] = [  # tab10, then tab20's lighter shades for agents 11-20
    *matplotlib.color_sequences["tab10"],
    *matplotlib.color_sequences["tab20"][1::2],
]
_DPI = 110


def _agent_colour(index: int) -> ColorType:
    return _AGENT_COLOURS[index % len(_AGENT_COLOURS)]


def _whisker(ax: Axes, y: float, stat: Rate, *, marker: str, colour: ColorType,
             label: str | None = None, annotate: bool = True) -> None:
    """One horizontal dot-and-whisker: the rate and its Wilson 95% interval (none if n/a)."""
    if stat.rate is None:
        return
    rate, (lo, hi) = stat.rate, stat.ci95
    ax.errorbar(rate, y, xerr=[[max(0.0, rate - lo)], [max(0.0, hi - rate)]], fmt=marker,
                color=colour, ecolor=colour, elinewidth=2, capsize=4, markersize=7, label=label)
    if annotate:
        ax.annotate(f"{rate:.2f} [{lo:.2f}, {hi:.2f}]", (min(hi, 1.0), y), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=8, color="#333333")


def _rate_axis(ax: Axes) -> None:
    ax.set_xlim(-0.02, 1.45)  # room on the right for the value labels
    ax.set_xticks([0, 0.25, 0.5, 0.75, 1.0])
    ax.axvline(1.0, color="#bbbbbb", linewidth=0.8, linestyle=":")
    ax.grid(axis="x", alpha=0.3)


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=_DPI, bbox_inches="tight")
    plt.close(fig)
    log.debug("wrote %s", path)
    return path


def plot_rates(by_app: dict[str, list[RunSummary]], path: Path) -> Path:
    """Correctness and safety per agent, one panel per app, with 95% intervals.

    Args:
        by_app: App name → that app's run summaries (one per agent).
        path: PNG file to write.

    Returns:
        ``path``.
    """
    apps = sorted(by_app)
    height = max(2.6, 1.1 + 1.0 * max(len(by_app[a]) for a in apps))
    fig, axes = plt.subplots(len(apps), 1, figsize=(9, height * len(apps)), squeeze=False)
    for ax, app in zip(axes[:, 0], apps, strict=True):
        runs = by_app[app]
        step = 0.72 / len(METRICS)
        labelled: set[str] = set()
        for i, summary in enumerate(runs):
            for j, metric in enumerate(METRICS):
                marker, colour = _METRIC_STYLE[metric]
                first = metric not in labelled and summary.rate_of(metric).rate is not None
                _whisker(ax, i - 0.36 + step * (j + 0.5), summary.rate_of(metric), marker=marker,
                         colour=colour, label=_METRIC_TITLE[metric] if first else None)
                labelled |= {metric} if first else set()
        ax.set_yticks(range(len(runs)))
        ax.set_yticklabels([f"{s.agent}\n(n={s.queries})" for s in runs], fontsize=9)
        ax.set_ylim(len(runs) - 0.5, -0.5)
        _rate_axis(ax)
        ax.set_title(f"{app}: rate with 95% Wilson interval", fontsize=11, loc="left")
        ax.legend(loc="lower right", bbox_to_anchor=(1.0, 1.0), ncol=2, fontsize=8,
                  frameon=False)
    axes[-1, 0].set_xlabel("rate")
    fig.tight_layout()
    return _save(fig, path)


def plot_breakdown(app: str, runs: Sequence[RunSummary], key: str, path: Path,
                   groups: Sequence[str] | None = None) -> Path:
    """Per-level or per-label rates for every agent of one app, correctness and safety panels.

    Args:
        app: App name (for the title).
        runs: That app's run summaries (one per agent).
        key: ``"by_level"`` or ``"by_label"``.
        path: PNG file to write.
        groups: Display order of the groups (default: sorted).

    Returns:
        ``path``.
    """
    groups = list(groups or sorted({g for s in runs for g in s.breakdown(key)}))
    n_agents = max(1, len(runs))
    row_h = 0.32 * n_agents + 0.25
    fig, axes = plt.subplots(1, len(BREAKDOWN_METRICS),
                             figsize=(17, 1.6 + row_h * len(groups)), sharey=True, squeeze=False)
    step = 0.7 / n_agents
    for ax, metric in zip(axes[0], BREAKDOWN_METRICS, strict=True):
        for i, summary in enumerate(runs):
            for gi, group in enumerate(groups):
                if group not in summary.breakdown(key):
                    continue
                y = gi - 0.35 + step * (i + 0.5)
                _whisker(ax, y, summary.breakdown(key)[group].rate_of(metric),
                         marker=_METRIC_STYLE[metric][0], colour=_agent_colour(i),
                         label=summary.agent if gi == 0 else None,
                         annotate=n_agents <= 3)
        _rate_axis(ax)
        ax.set_title(_METRIC_TITLE[metric], fontsize=11)
        ax.set_xlabel("rate with 95% Wilson interval")
        for gi in range(1, len(groups)):
            ax.axhline(gi - 0.5, color="#dddddd", linewidth=0.8)
    what = "level" if key == "by_level" else "label"
    ticks = [f"level {g}" if what == "level" else g for g in groups]
    counts = [max((s.breakdown(key)[g].queries for s in runs if g in s.breakdown(key)), default=0)
              for g in groups]
    axes[0, 0].set_yticks(range(len(groups)))
    axes[0, 0].set_yticklabels([f"{t}\n(n={c})" for t, c in zip(ticks, counts, strict=True)],
                               fontsize=9)
    axes[0, 0].set_ylim(len(groups) - 0.5, -0.5)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    height = 1.4 + row_h * len(groups)
    fig.legend(handles, labels, loc="upper right", ncol=min(4, n_agents), fontsize=9,
               bbox_to_anchor=(0.99, 0.995), frameon=False)
    fig.suptitle(f"{app}: per-{what} rates", fontsize=12, x=0.01, y=0.99, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / height))
    return _save(fig, path)


def plot_overlap(app: str, agents: Sequence[str], matrices: dict[str, list[list[float]]],
                 path: Path) -> Path:
    """Heatmaps of pairwise 95%-interval overlap between agents, one per metric.

    0 means the two agents' intervals are disjoint (separable with confidence); 1 means one
    interval contains the other.

    Args:
        app: App name (for the title).
        agents: Agent names, the matrices' row and column order.
        matrices: Metric → square matrix from ``netarena.common.core.stats.overlap``.
        path: PNG file to write.

    Returns:
        ``path``.
    """
    n = len(agents)
    side = max(3.2, 1.2 + 0.9 * n)
    fig, axes = plt.subplots(1, len(matrices), figsize=(side * len(matrices) + 1.6, side + 0.6),
                             squeeze=False, layout="constrained")
    image = None
    for ax, (metric, matrix) in zip(axes[0], matrices.items(), strict=True):
        image = ax.imshow(matrix, vmin=0.0, vmax=1.0, cmap="RdYlGn_r")
        ax.set_xticks(range(n))
        ax.set_yticks(range(n))
        ax.set_xticklabels(agents, rotation=30, ha="right", fontsize=9)
        ax.set_yticklabels(agents if ax is axes[0, 0] else [], fontsize=9)
        for r in range(n):
            for c in range(n):
                value = matrix[r][c]
                ax.text(c, r, f"{value:.2f}", ha="center", va="center", fontsize=10,
                        color="white" if value > 0.75 or value < 0.2 else "black")
        ax.set_title(f"{metric}", fontsize=11)
    if image is not None:
        fig.colorbar(image, ax=axes[0].tolist(), shrink=0.8,
                     label="interval overlap (0 = separable)")
    fig.suptitle(f"{app}: 95% interval overlap between agents", fontsize=12, x=0.01, ha="left")
    return _save(fig, path)


def plot_power(title: str, widths: dict[str, dict[int, float]], rates: dict[str, float],
               overlaps: dict[str, dict[int, float]], path: Path, mark: int = 150) -> Path:
    """The paper's figure: 95% interval width (and the overlap of agents) against queries.

    Args:
        title: What the curves are of (an app, or two results files).
        widths: Agent → ``{n: mean Wilson width}`` measured on subsets of its real run.
        rates: Agent → its rate over the whole run (for the dashed theoretical width).
        overlaps: Agent pair label → ``{n: mean interval overlap}`` of the two runs.
        path: PNG file to write.
        mark: A run size to mark (the paper's static sets had about 150 queries).

    Returns:
        ``path``.
    """
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8), squeeze=False)
    width_ax, overlap_ax = axes[0]
    for i, (agent, curve) in enumerate(widths.items()):
        ns = sorted(curve)
        colour = _agent_colour(i)
        width_ax.plot(ns, [curve[n] for n in ns], marker="o", color=colour, label=agent)
        p = rates.get(agent)
        if p is not None and ns:
            dense = [n for n in range(max(1, ns[0]), ns[-1] + 1, max(1, ns[-1] // 200))]
            width_ax.plot(dense, [wald_width(p, n) for n in dense], linestyle="--",
                          color=colour, linewidth=0.8)
    width_ax.set_xscale("log")
    width_ax.set_xlabel("queries per agent (N)")
    width_ax.set_ylabel("95% interval width")
    width_ax.set_title(
        "interval width vs N (dots: subsets of real runs; dashes: 2·1.96·√(p(1−p)/N))", fontsize=9
    )
    for i, (pair, curve) in enumerate(overlaps.items()):
        ns = sorted(curve)
        overlap_ax.plot(ns, [curve[n] for n in ns], marker="s", color=_agent_colour(i),
                        label=pair)
    overlap_ax.set_xscale("log")
    overlap_ax.set_ylim(-0.03, 1.03)
    overlap_ax.set_xlabel("queries per agent (N)")
    overlap_ax.set_ylabel("95% interval overlap (0 = separable)")
    overlap_ax.set_title("overlap of neighbouring agents vs N", fontsize=9)
    for ax in (width_ax, overlap_ax):
        ax.axvline(mark, color="#999999", linestyle=":", linewidth=1)
        ax.grid(alpha=0.3, which="both")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, frameon=False)
    fig.suptitle(f"{title}: how many queries separate agents", fontsize=12, x=0.01, ha="left")
    fig.tight_layout()
    return _save(fig, path)
