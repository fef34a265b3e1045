"""One MALT query's operations, drawn from a fixed base topology with one ``Random``.

``TaskSampler`` draws the reads and changes the generator composes: level 1 one operation,
level 2 a change and a read near it, level 3's add-then-read pairs; the control-flow forms of
level 3 (``control.py``) build on its reads and changes.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import networkx as nx

from netarena.malt.operations import (
    children,
    contained,
    selected,
    selection,
    total_capacity,
)
from netarena.malt.sampler import AGG, PORT, SUPERBLOCK, SW, Picker

Op = dict[str, Any]

__all__ = ["TaskSampler"]


_L1_PLACES: dict[str, dict[str, float]] = {
    "count": {"switch": 0, "block": 3, "superblock": 2, "group": 3},
    "capacity": {"switch": 4, "block": 3, "superblock": 1, "group": 3},
    "list": {"switch": 3, "block": 3.5, "superblock": 0.5, "group": 3},
    "rank": {"switch": 5, "block": 3, "superblock": 1, "group": 1},
}
"""L1 reads: relative chances of each kind of place (group: a rack or a control domain)."""


class TaskSampler:
    """Draws the operations of one query from a fixed base topology with one ``Random``."""

    def __init__(self, base: nx.DiGraph, rng: random.Random) -> None:
        """Sample from ``base`` (read-only) with ``rng``."""
        self.g = base
        self.p = Picker(base, rng)

    # -- reads ---------------------------------------------------------------------------
    def _l1_place(self, kind: str) -> str:
        weights = _L1_PLACES[kind]
        role = self.p.rng.choices(list(weights), weights=list(weights.values()))[0]
        ix = self.p.ix
        if role == "switch":
            pool = ix.switches
            if kind == "rank":  # ports of one speed rank by name: keep mixed-speed switches
                pool = ix.mixed or pool
            return str(self.p.pick(pool))
        if role == "superblock" and ix.superblocks:
            return str(self.p.pick(ix.superblocks))
        if role == "group" and ix.groups:
            return str(self.p.pick(ix.groups))
        return self.p.block()

    def read(self, kind: str, node: str) -> Op:
        """A reading operation of ``kind`` about ``node``."""
        p, kinds = self.p, self.g.nodes[node]["type"]
        is_switch = SW in kinds
        members = PORT if is_switch else AGG if SUPERBLOCK in kinds else SW
        depth = self.depth(node)
        if kind == "list":
            if not is_switch and p.chance(0.3):  # "which ports below 40G are in this block?"
                speed = self.speed(node, 1.0)
                return {"op": "list", "parent": node, "kind": PORT, "depth": "all", **speed}
            where = self.speed(node, 0.7) if is_switch else {}
            where = self.switch_filters(node) if members == SW else where
            return self.nonempty({"op": "list", "parent": node, "kind": members, **where})
        if kind == "rank":
            n = len(children(self.g, node, members))
            top = p.rng.randint(1, min(8, n - 1)) if n > 2 and p.chance(0.5) else None
            order = {"order": "asc"} if p.chance(0.3) else {}
            speed = self.speed(node, 0.5) if members != PORT else {}  # usable fast capacity
            return {
                "op": "rank",
                "parent": node,
                "kind": members,
                **order,
                **speed,
                **({"top": top} if top else {}),
                "ties": "desc" if p.chance(0.35) else "asc",  # dropped where no tie matters
            }
        if kind == "count":
            # what a count names must matter: a switch holds only ports, a block's switches
            # are all one edge down, so switches are counted across a superblock's blocks
            deep = not is_switch and children(self.g, node, SW) != contained(self.g, node, SW)
            what = SW if deep and p.chance(0.6) else PORT
            where = self.speed(node, 0.3 if is_switch else 0.7) if what == PORT else {}
            if children(self.g, node, what) == contained(self.g, node, what):
                depth = {"depth": "direct"}
            return {"op": "count", "node": node, "kind": what, **where, **depth}
        if not is_switch and p.chance(0.25):
            return {"op": "capacity_table", "parent": node, "kind": members}
        speed = self.speed(node, 0.4 if is_switch else 0.85)
        return {"op": "capacity", "node": node, **speed, **depth}

    def depth(self, node: str) -> Op:
        """How deep a count or capacity of ``node`` looks: one edge in a switch.

        A switch's ports are all directly in it, so "directly or indirectly" would state
        nothing.
        """
        return {"depth": "direct"} if SW in self.g.nodes[node]["type"] else {}

    def nonempty(self, op: Op) -> Op:
        """``op`` with its switch filters dropped (total, then stage) while it selects nothing.

        Two filters together can select no switch; an empty selection would make "do
        nothing" or "answer 0" the right answer.
        """
        for key in ("total", "stage"):
            if selection(self.g, op) or key not in op:
                continue
            op = {k: v for k, v in op.items() if k != key}
        return op

    def switch_filters(self, node: str) -> Op:
        """Filters on the switches of ``node``: a stage, a total-capacity bound, both or none.

        A stage and a bound together often select the same switches as either alone (the
        fast switches are the upper stage), which the generator redraws, so both together
        are drawn rarely.
        """
        roll = self.p.rng.random()
        stage = self.stage(node, 1.0) if roll < 0.42 or 0.85 <= roll < 0.95 else {}
        return {**stage, **(self.total(node, 1.0, stage) if 0.42 <= roll < 0.95 else {})}

    def total(self, node: str, chance: float, stage: Op | None = None) -> Op:
        """``{"total": bound}`` on switches' total port capacity, with chance ``chance``.

        The bound is one of the totals of the switches in ``node`` (of the stage ``stage``
        states, when it states one): above the smallest for ``ge`` and ``lt``, below the
        largest for ``gt`` and ``le``, so each selects some of those switches and not all,
        and reading it inclusive for exclusive (or the reverse) selects others (a switch
        has that total).
        """
        switches = selected(self.g, node, SW, direct=False, where=stage)
        totals = sorted({total_capacity(self.g, sw) for sw in switches})
        if len(totals) < 2 or not self.p.chance(chance):
            return {}
        cmp = self.p.rng.choices(["ge", "lt", "gt", "le"], weights=[2, 2, 1, 1])[0]
        bounds = totals[1:] if cmp in ("ge", "lt") else totals[:-1]
        return {"total": {"cmp": cmp, "bps": self.p.pick(bounds)}}

    def stage(self, node: str, chance: float) -> Op:
        """``{"stage": N}`` for a stage of the switches in ``node``, with chance ``chance``."""
        stages = sorted(
            {self.g.nodes[sw]["switch_loc"]["stage"] for sw in contained(self.g, node, SW)}
        )
        return {"stage": self.p.pick(stages)} if len(stages) > 1 and self.p.chance(chance) else {}

    def speed(self, node: str, chance: float, cmps: Sequence[str] | None = None) -> Op:
        """``{"speed": filter}`` with chance ``chance`` (``Picker.speed_filter``), else ``{}``."""
        speed = self.p.speed_filter(node, chance, cmps)
        return {"speed": speed} if speed else {}

    # -- changes -------------------------------------------------------------------------
    def change(self, kind: str, block: str) -> tuple[Op, str | None]:
        """A change of ``kind`` inside ``block``, and the switch whose ports it touched.

        The switch (when not ``None``) still exists after the change, so a later step may
        read it.
        """
        p = self.p
        switch = p.switch(block)
        if kind == "add":
            return (p.add_switch(block), None) if p.chance(0.5) else (p.add_port(switch), switch)
        if kind == "update":
            return p.update(p.pick(p.ports(switch))), switch
        spare = p.spare_port(switch)
        if spare and (p.chance(0.5) or len(p.switches(block)) < 2):
            return {"op": "remove", "node": spare}, switch
        return {"op": "remove", "node": switch}, None

    def remove(self) -> Op:
        """Remove a port (of a switch that keeps others), a switch or an agg block."""
        p = self.p
        roll = p.rng.random()
        if roll < 0.8:
            switch = p.pick([s for s in p.ix.switches if p.spare_port(s)] or p.ix.switches)
            spare = p.spare_port(switch)
            if spare:
                return {"op": "remove", "node": spare}
        if roll < 0.98 or not any(AGG in self.g.nodes[b]["type"] for b in p.ix.blocks):
            return {"op": "remove", "node": p.switch()}
        return {"op": "remove", "node": p.block(agg_only=True)}

    # -- queries -------------------------------------------------------------------------
    def level1(self, label: str) -> list[Op]:
        """One operation of kind ``label``."""
        p = self.p
        if label == "add":
            return [p.add_switch(p.block()) if p.chance(0.4) else p.add_port(p.switch())]
        if label == "remove":
            return [self.remove()]
        if label == "update":
            return [p.update(p.pick(p.ix.ports))]
        return [self.read(label, self._l1_place(label))]

    def level2(self, label: str) -> list[Op]:
        """A change inside one block, then a question about a place that holds it."""
        first, second = label.split("-")
        block = self.p.block()
        op, switch = self.change(first, block)
        # a switch holds only ports: counting "the ports" of one would state a kind for nothing
        places = self.p.around(block) + ([switch] if switch and second != "count" else [])
        if second == "rank" and switch and self.p.chance(0.5):
            places = [switch]
        return [op, self.read(second, self.p.pick(places))]

    def add_then_read(self, label: str) -> list[Op]:
        """The original's level-3 pairs (``add-count``, ...): add, then read what grew."""
        second = label.partition("-")[2]
        block = self.p.block()
        op, switch = self.change("add", block)
        # read where the node was added, or the block holding it (always for a count: a
        # switch holds only ports); lists of a block can filter its switches
        wide = second == "count" or (second == "list" and self.p.chance(0.4))
        return [op, self.read(second, block if wide else switch or block)]
