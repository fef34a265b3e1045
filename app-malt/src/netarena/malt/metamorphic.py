"""Variants of one MALT task, and whether a variant changes the task's outcome.

A stated detail of a task (a qualifier, ``qualifiers.py``; a comparison bound,
``bounds.py``) is load-bearing when reading it another way changes the answer or the
resulting topology. The generator checks this for every detail of every draw, so the
outcome of a task and of each variant is computed on the *region* the task can see (the
nodes it names and all they contain), a fraction of the topology, and the task is found
by path (``walk``) so one occurrence can be changed alone (``replace``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import networkx as nx

from netarena.common.core.errors import NetArenaError
from netarena.malt.checks import answer_mismatch
from netarena.malt.operations import (
    READ_OPS,
    apply_op,
    contained,
    fork,
    measure_value,
    taken,
)

__all__ = ["Outcomes", "Path", "idle", "replace", "walk"]

Op = dict[str, Any]
Path = tuple[Any, ...]
"""Where an operation sits in a task: ``(i,)``, ``(i, "measure")`` or ``(i, branch, j)``."""


def walk(base: nx.DiGraph, ops: list[Op]) -> Iterator[tuple[Path, Op]]:
    """Every operation with its path.

    An if-else (always a task's only step) is followed into its measure and the branch it
    takes on ``base``: details inside the branch it does not take cannot matter.
    """
    for i, op in enumerate(ops):
        yield (i,), op
        if op["op"] == "if":
            yield (i, "measure"), op["measure"]
            branch = taken(op, measure_value(base, op["measure"]))
            for j, inner in enumerate(op[branch]):
                yield (i, branch, j), inner


def replace(ops: list[Op], path: Path, new: Op) -> list[Op]:
    """``ops`` with the operation at ``path`` replaced by ``new`` (``ops`` is not changed)."""
    out = list(ops)
    if len(path) == 1:
        out[path[0]] = new
        return out
    head = dict(out[path[0]])
    if path[1] == "measure":
        head["measure"] = new
    else:
        head[path[1]] = replace(head[path[1]], path[2:], new)
    out[path[0]] = head
    return out


def _names(ops: list[Op]) -> set[str]:
    """The existing nodes ``ops`` name (parents, targets, switches, ports), at any depth."""
    found: set[str] = set()
    for op in ops:
        for key in ("parent", "node", "switch", "port"):
            if isinstance(op.get(key), str) and "{X}" not in op[key]:
                found.add(op[key])
        if op["op"] == "if":
            found |= _names([op["measure"], *op["then"], *op["otherwise"]])
    return found


def _region(base: nx.DiGraph, names: set[str]) -> nx.DiGraph:
    """The part of ``base`` the operations can see: the named nodes and all they contain.

    Every operation reads and writes below the nodes it names, so a task's outcome on the
    region equals its outcome on the whole topology, at a fraction of the copying.
    """
    keep: set[str] = set()
    for name in names & base._node.keys():
        keep.add(name)
        keep.update(contained(base, name))
    region = nx.DiGraph()
    region._node = {n: base._node[n] for n in keep}
    region._adj = region._succ = {
        n: {v: d for v, d in base._succ[n].items() if v in keep} for n in keep
    }
    region._pred = {n: {u: d for u, d in base._pred[n].items() if u in keep} for n in keep}
    return region


class Outcomes:
    """The outcome (answer and resulting region) of one task, and of variants of it.

    Raises:
        NetArenaError, KeyError: The task itself cannot run (a generator bug).
    """

    def __init__(self, base: nx.DiGraph, ops: list[Op]) -> None:
        """Run ``ops`` on their region of ``base`` (read only)."""
        self.ops = ops
        self.region = _region(base, _names(ops))
        self.before = fork(self.region)  # the state before the last step, and after it
        earlier = None
        for op in ops[:-1]:
            earlier = apply_op(self.before, op) or earlier
        self.after = fork(self.before)
        self.answer: dict[str, Any] = (
            apply_op(self.after, ops[-1]) or earlier or {"type": "graph", "data": None}
        )
        """The task's answer (``operations.apply_ops``'s, computed on the region)."""

    def same(self, variant: list[Op]) -> bool:
        """Whether ``variant`` gives the task's answer and state."""
        last = variant[-1]
        if variant[:-1] == self.ops[:-1] and last["op"] in READ_OPS:
            return self._same_answer(lambda: apply_op(self.before, last))
        graph = fork(self.region)

        def run() -> dict[str, Any] | None:
            answer = None
            for op in variant:
                answer = apply_op(graph, op) or answer
            return answer

        if not self._same_answer(run):
            return False
        return bool(graph._node == self.after._node and graph._adj == self.after._adj)

    def _same_answer(self, run: Any) -> bool:
        try:
            answer = run()
        except (NetArenaError, KeyError, TypeError):
            return False  # the misreading fails outright: a different outcome
        if answer is None:
            answer = {"type": "graph", "data": None}
        if answer["type"] != self.answer["type"]:
            return False
        return answer_mismatch(self.answer, answer) is None


def idle(
    outcomes: Outcomes, variants: Iterable[tuple[str, list[Op]]]
) -> list[tuple[str, list[Op]]]:
    """The ``(detail, variant)`` pairs whose variant leaves the outcome unchanged.

    Args:
        outcomes: The task's outcome.
        variants: Each stated detail read another way: ``(detail, the task so read)``.

    Returns:
        The variants giving the same answer and the same topology; empty when every
        stated detail is load-bearing.
    """
    return [(detail, variant) for detail, variant in variants if outcomes.same(variant)]
