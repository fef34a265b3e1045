"""How many queries separate two agents: ``netarena power`` and the report's power figure.

From real runs (per-query records) or assumed rates, for each pair of agents neighbouring in
rate: the queries per agent after which their 95% intervals no longer overlap (Wilson, and
the paper's Wald closed form), the queries a two-proportion test needs (α = 0.05, power 0.8),
and the curves of the paper's figure: interval width and interval overlap against N,
measured on random subsets of the real runs. Every interval comes from ``stats``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from netarena.common.core.stats import (
    overlap,
    separating_n,
    solved_safely,
    subsample_overlap,
    subsample_widths,
    two_sample_n,
    wilson,
)
from netarena.common.core.types import QueryResult

__all__ = ["Comparison", "Curves", "METRIC_FLAGS", "flags", "compare", "curves", "sizes"]

METRIC_FLAGS: dict[str, Callable[[QueryResult], bool]] = {
    "solved_safely": solved_safely,
    "correctness": lambda r: r.correct,
    "safety": lambda r: r.safe,
}
"""Per-query outcome of each rate ``netarena power`` can compare."""


def flags(results: Sequence[QueryResult], metric: str = "solved_safely") -> list[bool]:
    """The per-query outcomes of ``metric`` over the scored results."""
    test = METRIC_FLAGS[metric]
    return [bool(test(r)) for r in results if r.scored]


def sizes(most: int) -> list[int]:
    """Run sizes for the curves: a roughly geometric grid from 10 up to ``most``."""
    grid = [
        10,
        15,
        20,
        30,
        50,
        75,
        100,
        150,
        200,
        300,
        500,
        750,
        1000,
        1500,
        2000,
        3000,
        5000,
        7500,
        10000,
    ]
    return [n for n in grid if n < most] + [most] if most > 0 else []


@dataclass(frozen=True)
class Comparison:
    """Two agents' rates and what it takes to separate them."""

    a: str
    b: str
    rate_a: float
    rate_b: float
    n_a: int
    """Queries observed for ``a`` (0 for assumed rates)."""
    n_b: int
    overlap_now: float | None
    """Overlap of the observed 95% intervals (``None`` for assumed rates)."""
    wilson_n: int | None
    """Queries per agent after which the 95% Wilson intervals are disjoint."""
    wald_n: int | None
    """The same with the paper's Wald interval (closed form)."""
    test_n: int | None
    """Queries per agent for a two-proportion test (α = 0.05, power 0.8)."""


def compare(a: str, b: str, fa: Sequence[bool] | float, fb: Sequence[bool] | float) -> Comparison:
    """Compare two agents given their per-query outcomes, or assumed rates (floats)."""
    observed = not isinstance(fa, float) and not isinstance(fb, float)
    ra = fa if isinstance(fa, float) else sum(fa) / max(1, len(fa))
    rb = fb if isinstance(fb, float) else sum(fb) / max(1, len(fb))
    now = None
    if observed:
        assert not isinstance(fa, float) and not isinstance(fb, float)
        now = overlap(wilson(sum(fa), len(fa)), wilson(sum(fb), len(fb)))
    return Comparison(
        a=a,
        b=b,
        rate_a=ra,
        rate_b=rb,
        n_a=0 if isinstance(fa, float) else len(fa),
        n_b=0 if isinstance(fb, float) else len(fb),
        overlap_now=now,
        wilson_n=separating_n(ra, rb),
        wald_n=separating_n(ra, rb, method="wald"),
        test_n=two_sample_n(ra, rb),
    )


@dataclass(frozen=True)
class Curves:
    """The data of the power figure."""

    widths: dict[str, dict[int, float]]
    """Agent → ``{N: mean 95% Wilson width}``."""
    rates: dict[str, float]
    """Agent → rate over its whole run (or the assumed rate)."""
    overlaps: dict[str, dict[int, float]]
    """``"a vs b"`` (neighbours in rate) → ``{N: mean 95% interval overlap}``."""


def _expected(p: float, n: int) -> tuple[float, float]:
    return wilson(round(p * n), n)


def curves(outcomes: Mapping[str, Sequence[bool] | float], most: int = 1000) -> Curves:
    """The figure's curves for several agents, neighbours in rate compared pairwise.

    Real outcomes give curves measured on random subsets of the run (up to its size);
    assumed rates give the intervals of the expected counts (up to ``most``).
    """
    rates = {
        name: o if isinstance(o, float) else sum(o) / max(1, len(o)) for name, o in outcomes.items()
    }
    widths: dict[str, dict[int, float]] = {}
    for name, o in outcomes.items():
        if isinstance(o, float):
            widths[name] = {n: _expected(o, n)[1] - _expected(o, n)[0] for n in sizes(most)}
        else:
            widths[name] = subsample_widths(o, sizes(len(o)))
    order = sorted(outcomes, key=lambda name: rates[name])
    overlaps: dict[str, dict[int, float]] = {}
    for lo, hi in zip(order, order[1:], strict=False):
        a, b = outcomes[lo], outcomes[hi]
        if isinstance(a, float) or isinstance(b, float):
            pa, pb = rates[lo], rates[hi]
            overlaps[f"{lo} vs {hi}"] = {
                n: overlap(_expected(pa, n), _expected(pb, n)) for n in sizes(most)
            }
        else:
            overlaps[f"{lo} vs {hi}"] = subsample_overlap(a, b, sizes(min(len(a), len(b))))
    return Curves(widths=widths, rates=rates, overlaps=overlaps)
