"""Seeded MALT query generation: operations sampled from the topology, truth by state transition.

A query is a short program of operations (``operations.py``): L1 one operation, L2 two in
sequence (the second sees the first's change), L3 control flow (a for-loop over a selected set,
an if-else on a measured condition, with the threshold drawn so both branches occur). Truth is
computed by applying the operations to a copy of the topology and storing the answer and the
resulting diff; the ground truth is itself checked against the safety invariants.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

import networkx as nx

from netarena.common.errors import EmulatorError
from netarena.malt.checks import DiffView, violations
from netarena.malt.operations import apply_op, apply_ops, children
from netarena.malt.topology import PORT_SPEEDS_BPS
from netarena.malt.worker import graph_diff

__all__ = ["LABELS", "TaskSampler", "solve"]

LABELS: dict[int, tuple[str, ...]] = {
    1: ("add", "remove", "list", "rank", "count", "update", "capacity"),
    2: (
        "add-count",
        "add-capacity",
        "remove-list",
        "remove-count",
        "remove-rank",
        "update-rank",
        "update-capacity",
    ),
    3: ("loop-update", "loop-add", "loop-remove", "if-capacity", "if-count"),
}
"""Labels per level: an operation, two in sequence, or a control-flow form."""

Op = dict[str, Any]
SW, PORT, AGG = "EK_PACKET_SWITCH", "EK_PORT", "EK_AGG_BLOCK"


@functools.lru_cache(maxsize=8)
def _index(base: nx.DiGraph) -> tuple[dict[str, list[str]], list[str]]:
    """Node names by kind, and the blocks holding switches, of a (read-only) base topology."""
    by_kind: dict[str, list[str]] = {}
    for name, attrs in base.nodes(data=True):
        for kind in attrs["type"]:
            by_kind.setdefault(kind, []).append(name)
    kinds = {k: sorted(v) for k, v in by_kind.items()}
    blocks = [
        b for b in kinds.get(AGG, []) + kinds.get("EK_SPINEBLOCK", []) if children(base, b, SW)
    ]
    return kinds, blocks


def _copy(graph: nx.DiGraph) -> nx.DiGraph:
    """A copy with fresh attribute dicts, several times faster than ``DiGraph.copy``."""
    succ = {u: {v: dict(e) for v, e in nbrs.items()} for u, nbrs in graph._succ.items()}
    pred: dict[str, dict[str, Any]] = {n: {} for n in succ}
    for u, nbrs in succ.items():
        for v, e in nbrs.items():
            pred[v][u] = e
    copy = nx.DiGraph()
    copy._node = {
        n: {k: dict(v) if isinstance(v, dict) else v for k, v in d.items()}
        for n, d in graph._node.items()
    }
    copy._adj = copy._succ = succ
    copy._pred = pred
    return copy


class TaskSampler:
    """Draws operations for one query from a fixed base topology with one ``random.Random``."""

    def __init__(self, base: nx.DiGraph, rng: random.Random) -> None:
        """Sample from ``base`` (read-only) with ``rng``."""
        self.g = base
        self.rng = rng
        self.kind, self.blocks = _index(base)
        if not self.blocks:
            raise EmulatorError("malt: the topology has no block with switches")

    def _pick(self, items: list[str]) -> str:
        return self.rng.choice(items)

    def block(self) -> str:
        """A random block (agg or spine) that holds switches."""
        return self._pick(self.blocks)

    def switch(self, block: str | None = None) -> str:
        """A random switch of ``block`` (or of a random block)."""
        return self._pick(children(self.g, block or self.block(), SW))

    def speed(self, not_equal: Any = None) -> int:
        """A port speed from ``PORT_SPEEDS_BPS`` other than ``not_equal``."""
        return self._pick([s for s in PORT_SPEEDS_BPS if s != not_equal])

    def superblock_of(self, block: str) -> str:
        """The node that directly contains ``block``."""
        return next(iter(self.g.predecessors(block)))

    # -- single operations -------------------------------------------------------------
    def add_switch(self, block: str | None = None) -> Op:
        """Add a new switch with a few ports to an agg block (or ``block``)."""
        block = block or self._pick(self.kind.get(AGG) or self.blocks)
        stage = self._pick([2, 3]) if AGG in self.g.nodes[block]["type"] else self._pick([1, 2])
        n = (
            sum(
                1
                for s in children(self.g, block, SW)
                if s.rsplit(".", 1)[1].startswith(f"s{stage}c")
            )
            + 1
        )
        while f"{block}.s{stage}c{n}" in self.g:
            n += 1
        return {
            "op": "add_switch",
            "parent": block,
            "name": f"{block}.s{stage}c{n}",
            "stage": stage,
            "ports": self.rng.randint(1, 4),
            "capacity_bps": self.speed(),
        }

    def add_port(self, switch: str | None = None) -> Op:
        """Add a new port to ``switch`` (or a random one)."""
        switch = switch or self.switch()
        return {
            "op": "add_port",
            "switch": switch,
            "name": self._new_port(switch),
            "capacity_bps": self.speed(),
        }

    def _new_port(self, switch: str) -> str:
        n = len(children(self.g, switch, PORT)) + 1
        while f"{switch}.p{n}" in self.g:
            n += 1
        return f"{switch}.p{n}"

    def update(self, switch: str | None = None) -> Op:
        """Change one port's capacity to a different speed."""
        port = self._pick(children(self.g, switch or self.switch(), PORT))
        return {
            "op": "update",
            "port": port,
            "capacity_bps": self.speed(self.g.nodes[port]["physical_capacity_bps"]),
        }

    def remove(self) -> Op:
        """Remove a port (of a switch that keeps others), a switch or an agg block."""
        roll = self.rng.random()
        if roll < 0.4:
            multi = [
                s for s in children(self.g, self.block(), SW) if len(children(self.g, s, PORT)) > 1
            ]
            if multi:
                return {
                    "op": "remove",
                    "node": self._pick(children(self.g, self._pick(multi), PORT)),
                }
        if roll < 0.8 or not self.kind.get(AGG):
            return {"op": "remove", "node": self.switch()}
        return {"op": "remove", "node": self._pick(self.kind[AGG])}

    def read(self, kind: str, near: str | None = None) -> Op:
        """A reading operation of ``kind`` about ``near`` (a block) or a random place.

        With ``near`` it names only the block and its superblock, which an earlier step of
        the same query (removing a switch or port inside the block) cannot have removed.
        """
        block = near or self.block()
        upper = self.superblock_of(block)
        if kind == "list":
            choices = (
                [(block, SW)]
                if near
                else [(block, SW), (self.switch(block), PORT)]
                + ([(upper, AGG)] if children(self.g, upper, AGG) else [])
            )
            parent, what = self._pick(choices)
            return {"op": "list", "parent": parent, "kind": what}
        if kind == "rank":
            parent, what = (
                (block, SW)
                if near or self.rng.random() < 0.6 or not children(self.g, upper, AGG)
                else (upper, AGG)
            )
            return {"op": "rank", "parent": parent, "kind": what}
        if kind == "count":
            return {
                "op": "count",
                "node": self._pick([block, upper]),
                "kind": self._pick([SW, PORT]),
            }
        if kind == "capacity" and self.rng.random() < 0.5:
            return {"op": "capacity_table", "parent": block, "kind": SW}
        places = [block, upper] if near else [block, upper, self.switch(block)]
        return {"op": "capacity", "node": self._pick(places)}

    # -- queries -----------------------------------------------------------------------
    def level1(self, label: str) -> list[Op]:
        """One operation of kind ``label``."""
        if label == "add":
            return [self.add_switch() if self.rng.random() < 0.5 else self.add_port()]
        if label == "remove":
            return [self.remove()]
        if label == "update":
            return [self.update()]
        return [self.read(label)]

    def level2(self, label: str) -> list[Op]:
        """Two operations: a change inside one block, then a question about it."""
        first, second = label.split("-")
        block = self._pick(self.kind.get(AGG) or self.blocks)
        switch = self.switch(block)
        if first == "add":
            op = self.add_switch(block) if second == "count" else self.add_port(switch)
        elif first == "update":
            op = self.update(switch)
        else:
            multi = [s for s in children(self.g, block, SW) if len(children(self.g, s, PORT)) > 1]
            if second == "rank" and multi:
                op = {"op": "remove", "node": self._pick(children(self.g, self._pick(multi), PORT))}
            else:
                op = {"op": "remove", "node": switch}
        return [op, self.read(second, near=block)]

    def level3(self, label: str) -> list[Op]:
        """A for-loop over a block's switches, or an if-else on a measured value."""
        block = self._pick(self.kind.get(AGG) or self.blocks)
        kids = children(self.g, block, SW)
        if label == "loop-update":
            first = self.g.nodes.get(f"{kids[0]}.p1", {}).get("physical_capacity_bps")
            do = {"op": "update", "port": "{X}.p1", "capacity_bps": self.speed(first)}
        elif label == "loop-add":
            top = max(len(children(self.g, s, PORT)) for s in kids) + 1
            do = {
                "op": "add_port",
                "switch": "{X}",
                "name": f"{{X}}.p{top}",
                "capacity_bps": self.speed(),
            }
        elif label == "loop-remove":
            fewest = min(len(children(self.g, s, PORT)) for s in kids)
            do = {"op": "remove", "node": "{X}.p1" if fewest > 1 else "{X}"}
        else:
            return [self._branch(label, block)]
        return [{"op": "for_each", "parent": block, "kind": SW, "do": do}]

    def _branch(self, label: str, block: str) -> Op:
        if label == "if-capacity":
            measure: Op = {"op": "capacity", "node": block}
            then, otherwise = (
                self.update(self.switch(block)),
                {"op": "remove", "node": self.switch(block)},
            )
        else:
            upper = self.superblock_of(block)
            measure = {"op": "count", "node": upper, "kind": SW}
            then, otherwise = (
                {"op": "capacity", "node": upper},
                {"op": "count", "node": upper, "kind": PORT},
            )
        value = apply_op(self.g, measure)["data"]  # type: ignore[index]
        step = self._pick([1, max(1, int(value) // 4)])
        threshold = int(value) - step if self.rng.random() < 0.5 else int(value) + step
        return {
            "op": "if",
            "measure": measure,
            "threshold": threshold,
            "then": then,
            "otherwise": otherwise,
        }

    def sample(self, level: int, label: str) -> list[Op]:
        """The operations of one query."""
        pick: Callable[[str], list[Op]] = {1: self.level1, 2: self.level2, 3: self.level3}[level]
        return pick(label)


def solve(base: nx.DiGraph, ops: list[Op]) -> dict[str, Any]:
    """Ground truth for ``ops`` on ``base``: the answer and the resulting diff.

    Raises:
        EmulatorError: The ground truth would break a safety invariant (a generator bug).
    """
    graph = _copy(base)
    answer = apply_ops(graph, ops)
    diff = graph_diff(base._node, base._adj, graph)
    broken = violations(DiffView(base, diff))
    if broken:
        raise EmulatorError(f"malt: ground truth breaks invariants: {broken[:3]}")
    return {"ops": ops, "answer": answer, "diff": diff}
