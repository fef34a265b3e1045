"""Drawing a fault's value so that it looks like the design's (pure).

The audit (``netarena audit``) compares each object with the others of its kind in its
instance, as an agent taking the majority or the odd one out would: among them, how many
hold the same value. A fault that copies a value the design carries, drawn as often as
lines carry it, is then held by one line more than a design line's value is (its own
line joins the others), and the share alone gives it away. And a design's lines of a kind
are seen as often as designs hold them, so a fault, one per design, drawn in every design
alike sits beside fewer lines of its kind than a design's line does.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TypeVar

__all__ = ["as_shared", "kept_in_proportion"]

V = TypeVar("V", int, str)


def as_shared(
    rng: random.Random, values: Sequence[V], allowed: Iterable[V], tries: int = 4
) -> V | None:
    """A changed line's value, held by as many lines as a design line's value is.

    A design line's value is held by ``c`` lines, itself included, ``c`` drawn as the
    lines fall; a changed line's by the lines holding it before, plus itself. So the value
    is one ``c - 1`` lines hold, ``c`` that of a random design line (``tries`` lines are
    drawn for one), or else one held by a count as near ``c - 1`` as any is, for the first
    line drawn (where the design holds values in pairs, as a link's two ends do, a count
    one less is seldom there).

    Args:
        rng: The seed's generator.
        values: The value of every design line of the kind, one per line.
        allowed: The values the fault may take (its own line's excluded by the caller).
        tries: Design lines drawn for a count some allowed value is one short of.

    Returns:
        The value, or None when nothing is allowed.
    """
    options = sorted(set(allowed))
    if not values or not options:
        return None
    counts = Counter(values)
    wanted = [counts[rng.choice(values)] - 1 for _ in range(tries)]
    for count in wanted:
        if exact := [v for v in options if counts[v] == count]:
            return rng.choice(exact)
    nearest = min(abs(counts[v] - wanted[0]) for v in options)
    return rng.choice([v for v in options if abs(counts[v] - wanted[0]) == nearest])


def kept_in_proportion(rng: random.Random, counts: Sequence[int], most: int) -> bool:
    """Whether to keep a design for faults in proportion to the lines of their kinds it holds.

    Kept so, a fault sits beside as many lines of its kind as a design's line does (a
    geometric mean of the shares for several faults; a count above ``most`` counts as
    ``most``).

    Args:
        rng: The seed's generator.
        counts: For each fault, the design's lines of the kind it changes.
        most: The count of the largest designs.
    """
    if not counts:
        return True
    share = math.prod(min(count / most, 1.0) for count in counts) ** (1 / len(counts))
    return rng.random() < share
