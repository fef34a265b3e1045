"""The shapes OSPF networks are drawn in: which routers a design links (pure).

Each shape survives the loss of any one link, so every link fault can move traffic
rather than only cut a router off.
"""

from __future__ import annotations

import random

__all__ = ["SHAPES", "draw_pairs"]

SHAPES = ("ring", "partial-mesh", "hub-and-spoke")
"""Topologies OSPF networks are drawn in."""


def draw_pairs(rng: random.Random, shape: str, num_routers: int) -> list[tuple[int, int]]:
    """Which routers (indexes) a ``shape`` of ``num_routers`` links, each pair once.

    Every shape survives the loss of any one link, so a fault can move traffic:
    ``ring`` (up to one chord), ``partial-mesh`` (a ring with two to four chords) and
    ``hub-and-spoke`` (two linked hubs, every spoke homed on both).
    """
    if shape == "hub-and-spoke":
        return [(0, 1)] + [(hub, spoke) for spoke in range(2, num_routers) for hub in (0, 1)]
    pairs = [(i, (i + 1) % num_routers) for i in range(num_routers)]
    if num_routers == 3:
        pairs = [(0, 1), (1, 2), (0, 2)]
    chords = [
        (i, j)
        for i in range(num_routers)
        for j in range(i + 2, num_routers)
        if (i, j) != (0, num_routers - 1)
    ]
    rng.shuffle(chords)
    most = min(1 if shape == "ring" else 4, len(chords))
    pairs += chords[: rng.randint(0 if shape == "ring" else min(2, most), most)]
    return sorted({(min(a, b), max(a, b)) for a, b in pairs})
