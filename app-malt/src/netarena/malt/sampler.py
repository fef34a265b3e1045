"""Seeded choice of the places and values a MALT query is about.

``FabricIndex`` lists a read-only base topology's nodes by role once (blocks, superblocks,
racks, control domains, switches, the port speeds present); ``Picker`` draws from it with
one ``random.Random``: a place to read, a speed filter that selects a real subset, a new
switch or port name that does not exist yet, a new speed. The query shapes are in
``generator.py``.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import networkx as nx

from netarena.common.core.errors import EmulatorError
from netarena.malt.operations import children, contained
from netarena.malt.topology import SPEED_TIERS_BPS

__all__ = ["FabricIndex", "Picker", "SPEED_CMPS", "SW", "PORT", "AGG", "SUPERBLOCK", "index"]

SPEED_CMPS: dict[str, float] = {
    "ge": 3, "lt": 3, "eq": 2, "gt": 2, "le": 2, "range": 1.5, "between": 1.5,
}
"""The comparisons a speed filter states (``operations.SPEED_TESTS``), with relative weights."""
SW, PORT, AGG = "EK_PACKET_SWITCH", "EK_PORT", "EK_AGG_BLOCK"
SUPERBLOCK, _SPINE = "EK_SUPERBLOCK", "EK_SPINEBLOCK"
Op = dict[str, Any]
_T = TypeVar("_T")


@dataclass(frozen=True)
class FabricIndex:
    """Names of a base topology's nodes by role (sorted), computed once per topology."""

    blocks: list[str]
    """Agg and spine blocks that hold switches."""
    superblocks: list[str]
    """Superblocks holding at least two agg blocks."""
    groups: list[str]
    """Racks and control domains that hold switches."""
    switches: list[str]
    ports: list[str]
    home: dict[str, list[str]]
    """Block → the rack and control domain holding its switches."""
    mixed: list[str]
    """Switches whose ports run at more than one speed."""


@functools.lru_cache(maxsize=8)
def index(base: nx.DiGraph) -> FabricIndex:
    """The ``FabricIndex`` of a (read-only) base topology."""
    by_kind: dict[str, list[str]] = {}
    for name, attrs in base.nodes(data=True):
        for kind in attrs["type"]:
            by_kind.setdefault(kind, []).append(name)
    kinds = {k: sorted(v) for k, v in by_kind.items()}
    blocks = [b for b in kinds.get(AGG, []) + kinds.get(_SPINE, []) if children(base, b, SW)]
    if not blocks:
        raise EmulatorError("malt: the topology has no block with switches")
    groups = [
        g
        for g in kinds.get("EK_RACK", []) + kinds.get("EK_CONTROL_DOMAIN", [])
        if children(base, g, SW)
    ]
    home: dict[str, list[str]] = {b: [] for b in blocks}
    for group in groups:
        owners = {next(iter(base.predecessors(s)), None) for s in children(base, group, SW)}
        for block in set(home) & owners:
            home[block].append(group)
    return FabricIndex(
        blocks=blocks,
        superblocks=[s for s in kinds.get(SUPERBLOCK, []) if len(children(base, s, AGG)) >= 2],
        groups=groups,
        switches=kinds.get(SW, []),
        ports=kinds.get(PORT, []),
        home=home,
        mixed=[
            s
            for s in kinds.get(SW, [])
            if len({base._node[p].get("physical_capacity_bps") for p in children(base, s, PORT)})
            > 1
        ],
    )


def _number(name: str) -> int:
    """The trailing number of a name (``ju1.a1.m1.s2c7`` → 7)."""
    match = re.search(r"(\d+)$", name)
    return int(match.group(1)) if match else 0


class Picker:
    """Draws places and values for one query from a base topology with one ``Random``."""

    def __init__(self, base: nx.DiGraph, rng: random.Random) -> None:
        """Draw from ``base`` (never modified) with ``rng``."""
        self.g = base
        self.rng = rng
        self.ix = index(base)

    def pick(self, items: Sequence[_T]) -> _T:
        """One of ``items``."""
        return self.rng.choice(items)

    def chance(self, p: float) -> bool:
        """True with probability ``p``."""
        return self.rng.random() < p

    def block(self, agg_only: bool = False) -> str:
        """A block (agg or spine) holding switches; an agg block when ``agg_only``."""
        aggs = [b for b in self.ix.blocks if AGG in self.g.nodes[b]["type"]]
        return self.pick(aggs if agg_only and aggs else self.ix.blocks)

    def switches(self, node: str) -> list[str]:
        """The switches directly in ``node``."""
        return children(self.g, node, SW)

    def switch(self, block: str | None = None) -> str:
        """A switch of ``block`` (or of any block)."""
        return self.pick(self.switches(block) if block else self.ix.switches)

    def ports(self, node: str) -> list[str]:
        """The ports in ``node`` (or ``node`` itself when it is a port)."""
        return [node] if PORT in self.g.nodes[node]["type"] else contained(self.g, node, PORT)

    def speeds(self, node: str) -> list[int]:
        """The port speeds present in ``node``, slowest first."""
        return sorted({self.g.nodes[p]["physical_capacity_bps"] for p in self.ports(node)})

    def new_speed(self, not_equal: Any = None) -> int:
        """A port speed a change may set (from ``SPEED_TIERS_BPS``), other than ``not_equal``."""
        return int(self.pick([s for s in SPEED_TIERS_BPS if s != not_equal]))

    def speed_filter(
        self, node: str, p: float, cmps: Sequence[str] | None = None
    ) -> dict[str, Any] | None:
        """With chance ``p``, a filter on port speed that selects a real, proper subset.

        Its bound is always a speed present in ``node``, so reading the bound another way
        (``bounds.py``: "at least" as "more than", "exactly" as "at least" or "at most", an
        inclusive range as exclusive, ...) selects other ports: ``ge``/``lt`` split the
        speeds at one above the slowest, ``gt``/``le`` at one below the fastest, ``eq``
        names one strictly between the slowest and the fastest; a range spans two present
        speeds (an exclusive one with a third between them, an inclusive one not all). One
        of ``cmps`` (default: all), drawn by ``SPEED_CMPS``' weights among those the
        speeds of ``node`` allow; ``None`` when it has one speed (a filter would select all
        or nothing) or none of ``cmps`` fits.
        """
        present = self.speeds(node)
        if len(present) < 2 or not self.chance(p):
            return None
        n = len(present)
        choices: dict[str, list[Any]] = {
            "ge": present[1:],
            "lt": present[1:],
            "gt": present[:-1],
            "le": present[:-1],
            "eq": present[1:-1],
            "range": [
                [a, b] for i, a in enumerate(present) for j, b in enumerate(present)
                if i < j and (i, j) != (0, n - 1)
            ],
            "between": [
                [a, b] for i, a in enumerate(present) for j, b in enumerate(present) if j > i + 1
            ],
        }
        fit = [c for c in (cmps or SPEED_CMPS) if choices[c]]
        if not fit:
            return None
        cmp = self.rng.choices(fit, weights=[SPEED_CMPS[c] for c in fit])[0]
        return {"cmp": cmp, "bps": self.pick(choices[cmp])}

    def upper(self, block: str) -> str:
        """The node that directly contains ``block`` (its superblock, or the fabric)."""
        parent: str = next(iter(self.g.predecessors(block)))
        return parent

    def around(self, block: str) -> list[str]:
        """Places that hold ``block``'s switches and survive changes inside it."""
        up = self.upper(block)
        return [block, *self.ix.home.get(block, []), *([up] if up in self.ix.superblocks else [])]

    def near(self, block: str) -> str:
        """One of ``around(block)``, weighted toward the many (blocks, racks).

        Control domains and superblocks are few, so drawing them as often would repeat
        queries.
        """
        places = self.around(block)
        weights = [0.45, 0.3, 0.15, 0.1][: len(places)]
        return str(self.rng.choices(places, weights=weights)[0])

    def new_switch_name(self, block: str, stage: int) -> str:
        """``<block>.s<stage>c<n>`` with ``n`` above every switch of that stage in ``block``."""
        taken = [_number(s) for s in self.switches(block) if f".s{stage}c" in s]
        return f"{block}.s{stage}c{max(taken, default=0) + 1}"

    def new_port_name(self, switch: str, above: int = 0) -> str:
        """``<switch>.p<n>`` with ``n`` above every port of ``switch`` (and above ``above``)."""
        top = max((_number(p) for p in children(self.g, switch, PORT)), default=0)
        return f"{switch}.p{max(top, above) + 1}"

    def stage(self, block: str) -> int:
        """A switch stage of ``block``'s kind (agg: 2 or 3; spine: 1 or 2)."""
        return int(self.pick([2, 3] if AGG in self.g.nodes[block]["type"] else [1, 2]))

    def add_switch(self, block: str) -> Op:
        """Add a new switch with a few ports of one speed to ``block``."""
        stage = self.stage(block)
        return {
            "op": "add_switch",
            "parent": block,
            "name": self.new_switch_name(block, stage),
            "stage": stage,
            "ports": self.rng.randint(1, 8),
            "capacity_bps": self.new_speed(),
        }

    def add_port(self, switch: str) -> Op:
        """Add a new port to ``switch``."""
        return {
            "op": "add_port",
            "switch": switch,
            "name": self.new_port_name(switch),
            "capacity_bps": self.new_speed(),
        }

    def update(self, port: str) -> Op:
        """Change ``port``'s speed to another one."""
        old = self.g.nodes[port]["physical_capacity_bps"]
        return {"op": "update", "port": port, "capacity_bps": self.new_speed(old)}

    def spare_port(self, switch: str) -> str | None:
        """A port of ``switch`` it can lose (it keeps another), or ``None``."""
        ports = children(self.g, switch, PORT)
        return self.pick(ports) if len(ports) > 1 else None
