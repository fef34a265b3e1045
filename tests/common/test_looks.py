"""Fault values and designs drawn so that a fault's looks are the design's (common/core/looks)."""

from __future__ import annotations

import random
from collections import Counter

from netarena.common.core.looks import as_shared, kept_in_proportion


def _spread(drawn: list[int]) -> dict[int, float]:
    total = len(drawn)
    return {k: v / total for k, v in Counter(drawn).items()}


def test_a_changed_value_is_held_by_as_many_lines_as_a_design_value() -> None:
    """A design where values are held by 1, 2 or 3 lines: once a line takes the drawn value,
    that value is held as often by 1, 2 or 3 lines as a design line's is. Drawing a value as
    often as lines hold it (the old way) makes it held by 3.2 lines against 2.2."""
    rng = random.Random(1)
    values = [1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 7, 7]
    held = Counter(values)
    design = _spread([held[v] for v in values])
    allowed = [*values, 8, 9]  # 8 and 9: values no design line holds
    fault = _spread([held[as_shared(rng, values, allowed) or 0] + 1 for _ in range(20000)])
    old = [held[rng.choice(values)] + 1 for _ in range(20000)]
    for count, share in design.items():
        assert abs(fault.get(count, 0.0) - share) < 0.02, (count, fault, design)
    assert sum(old) / len(old) > 1.1 * sum(c * s for c, s in design.items())


def test_where_no_value_is_one_short_the_nearest_is_taken() -> None:
    rng = random.Random(2)
    values = [10, 10, 20, 20, 20, 20]  # held by 2 or 4: no value is held by 1 or 3
    drawn = {as_shared(rng, values, [10, 20, 30]) for _ in range(200)}
    assert drawn <= {10, 20, 30} and drawn
    assert as_shared(rng, values, []) is None and as_shared(rng, [], [1]) is None


def test_designs_are_kept_in_proportion_to_their_lines() -> None:
    rng = random.Random(3)
    kept = Counter(n for n in (4, 8, 16) * 6000 if kept_in_proportion(rng, [n], 16))
    assert abs(kept[8] / kept[4] - 2) < 0.2 and abs(kept[16] / kept[8] - 2) < 0.2
    assert all(kept_in_proportion(rng, [40], 16) for _ in range(50))  # above most: always
    assert kept_in_proportion(rng, [], 16)
