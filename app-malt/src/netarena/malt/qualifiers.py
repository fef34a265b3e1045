"""The qualifiers a MALT query states, and the metamorphic check that each one matters.

A qualifier is a detail of a task step that an imprecise reader could drop:

- ``depth``: "contained (directly or indirectly)" (counts, capacities, lists, loops);
  ignoring it reads "directly contained".
- ``kind``: the kind a count, or a selection at every depth, keeps (ports, switches);
  ignoring it keeps every node. A switch's or a block's direct members are all of one
  kind, so one such count alone does not make it matter: it is checked as a whole, the
  way a reader blind to it reads every step.
- ``speed``, ``stage``, ``total``: the port-speed, switch-stage and switch-total filters;
  ignoring one drops it.
- ``order``: "lowest first"; ignoring it ranks highest first (the default).
- ``top``: "the first N names"; ignoring it returns the whole ranking.
- ``branch``: the condition of an if-else; ignoring it takes the other branch.

A query is *valid* only when every qualifier it states is load-bearing: with any one
occurrence ablated (and with all occurrences of one qualifier ablated at once, the way a
reader blind to it would), the answer or the resulting topology differs from the truth.
The generator redraws a query until this holds (``idle``). Qualifiers inside the branch an
if-else does not take cannot matter; both branches of our if-else ask the same question, so
they state the same ones, and only the taken branch is checked and recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import networkx as nx

from netarena.common.core.errors import NetArenaError
from netarena.malt.checks import answer_mismatch
from netarena.malt.operations import (
    READ_OPS,
    apply_op,
    apply_ops,
    contained,
    fork,
    measure_value,
    taken,
)

__all__ = ["QUALIFIERS", "ablate", "idle", "measure_variants", "stated"]

QUALIFIERS = ("depth", "kind", "speed", "stage", "total", "order", "top", "branch")
"""Every qualifier, in the order queries record them."""

Op = dict[str, Any]
Path = tuple[Any, ...]
_SELECTS = frozenset({"list", "count", "capacity", "rank", "for_each"})
_DEEP_DEFAULT = frozenset({"count", "capacity"})
"""Operations that look at every depth unless told ``"depth": "direct"``."""


def _deep(op: Op) -> bool:
    default = "all" if op["op"] in _DEEP_DEFAULT else "direct"
    return op["op"] in _SELECTS and op["op"] != "rank" and op.get("depth", default) == "all"


def _states(op: Op, qualifier: str) -> bool:
    """Whether ``op`` itself states ``qualifier``."""
    kind = op["op"]
    if qualifier == "depth":
        return _deep(op)
    if qualifier == "kind":
        return kind == "count" or (_deep(op) and kind != "capacity")
    if qualifier in ("speed", "stage", "total"):
        return kind in _SELECTS and bool(op.get(qualifier) or op.get(qualifier) == 0)
    if qualifier == "order":
        return kind == "rank" and op.get("order") == "asc"
    if qualifier == "top":
        return kind == "rank" and bool(op.get("top"))
    return qualifier == "branch" and kind == "if"


def _ablated(op: Op, qualifier: str) -> Op:
    """``op`` read by someone blind to ``qualifier`` (``op`` states it)."""
    if qualifier == "depth":
        return {**op, "depth": "direct"}
    if qualifier == "kind":
        return {**op, "kind": None}
    if qualifier == "branch":
        return {**op, "then": op["otherwise"], "otherwise": op["then"]}
    return {k: v for k, v in op.items() if k != qualifier}


def _branch(graph: nx.DiGraph, op: Op) -> str:
    """The branch an if-else at the start of a task takes on ``graph``."""
    return taken(op, measure_value(graph, op["measure"]))


def _walk(base: nx.DiGraph, ops: list[Op]) -> Iterator[tuple[Path, Op]]:
    """Every operation with its path.

    An if-else (always a task's only step) is followed into its measure and the branch it
    takes on ``base``.
    """
    for i, op in enumerate(ops):
        yield (i,), op
        if op["op"] == "if":
            yield (i, "measure"), op["measure"]
            branch = _branch(base, op)
            for j, inner in enumerate(op[branch]):
                yield (i, branch, j), inner


def _replace(ops: list[Op], path: Path, new: Op) -> list[Op]:
    out = list(ops)
    if len(path) == 1:
        out[path[0]] = new
        return out
    head = dict(out[path[0]])
    if path[1] == "measure":
        head["measure"] = new
    else:
        head[path[1]] = _replace(head[path[1]], path[2:], new)
    out[path[0]] = head
    return out


def stated(base: nx.DiGraph, ops: list[Op]) -> list[str]:
    """The qualifiers ``ops`` state where they can matter, in ``QUALIFIERS`` order."""
    found = {q for _, op in _walk(base, ops) for q in QUALIFIERS if _states(op, q)}
    return [q for q in QUALIFIERS if q in found]


def _ablate_op(op: Op, qualifier: str) -> Op:
    if _states(op, qualifier):
        op = _ablated(op, qualifier)
    if op["op"] == "if":
        op = {
            **op,
            "measure": _ablate_op(op["measure"], qualifier),
            "then": ablate(op["then"], qualifier),
            "otherwise": ablate(op["otherwise"], qualifier),
        }
    return op


def ablate(ops: list[Op], qualifier: str) -> list[Op]:
    """``ops`` as a reader blind to ``qualifier`` takes them: every occurrence ablated."""
    return [_ablate_op(op, qualifier) for op in ops]


def _variants(base: nx.DiGraph, ops: list[Op]) -> Iterator[tuple[str, list[Op]]]:
    """Each occurrence of each stated qualifier ablated alone (``kind`` only as a whole).

    Then each qualifier stated more than once (and ``kind``), ablated everywhere.
    """
    many: dict[str, int] = {}
    for path, op in _walk(base, ops):
        for qualifier in QUALIFIERS:
            if _states(op, qualifier):
                many[qualifier] = many.get(qualifier, 0) + 1
                if qualifier != "kind":
                    yield qualifier, _replace(ops, path, _ablated(op, qualifier))
    for qualifier, count in many.items():
        if count > 1 or qualifier == "kind":
            yield qualifier, ablate(ops, qualifier)


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


class _Outcomes:
    """Compares the outcome (answer and resulting region) of variants of one task."""

    def __init__(self, base: nx.DiGraph, ops: list[Op], answer: dict[str, Any]) -> None:
        self.ops, self.answer = ops, answer
        self.region = _region(base, _names(ops))
        self.before = fork(self.region)  # the state before the last step, and after it
        apply_ops(self.before, ops[:-1])
        self.after = fork(self.before)
        apply_op(self.after, ops[-1])

    def same(self, variant: list[Op]) -> bool:
        """Whether ``variant`` gives the task's answer and state."""
        last = variant[-1]
        if variant[:-1] == self.ops[:-1] and last["op"] in READ_OPS:
            return self._same_answer(lambda: apply_op(self.before, last))
        graph = fork(self.region)
        if not self._same_answer(lambda: apply_ops(graph, variant)):
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


def idle(base: nx.DiGraph, ops: list[Op], answer: dict[str, Any]) -> list[tuple[str, list[Op]]]:
    """The ablations of stated qualifiers that leave the outcome of ``ops`` unchanged.

    Args:
        base: The topology the task starts from (read only).
        ops: The task's operations.
        answer: Their true answer (``solve``).

    Returns:
        ``(qualifier, ablated ops)`` for each occurrence (or each qualifier as a whole)
        whose ablation gives the same answer and the same topology; empty when every
        stated qualifier is load-bearing.
    """
    outcomes: _Outcomes | None = None
    found = []
    for qualifier, variant in _variants(base, ops):
        outcomes = outcomes or _Outcomes(base, ops, answer)
        if outcomes.same(variant):
            found.append((qualifier, variant))
    return found


def measure_variants(graph: nx.DiGraph, measure: Op) -> list[int | float]:
    """The values a count or capacity takes with each qualifier it states ablated in turn.

    Only values that differ from the measure's own: an ablation that changes nothing (the
    kind of a count of a switch's ports) cannot change the branch.
    """
    value = measure_value(graph, measure)
    values = []
    for qualifier in QUALIFIERS:
        if _states(measure, qualifier):
            other = measure_value(graph, _ablated(measure, qualifier))
            if other != value:
                values.append(other)
    return values
