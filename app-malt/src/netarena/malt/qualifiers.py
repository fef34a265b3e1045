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
The generator redraws a query until this holds (``generator.draw``, with
``variants``). Qualifiers inside the branch an
if-else does not take cannot matter; both branches of our if-else ask the same question, so
they state the same ones, and only the taken branch is checked and recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import networkx as nx

from netarena.malt.metamorphic import replace, walk
from netarena.malt.operations import measure_value

__all__ = ["QUALIFIERS", "ablate", "measure_variants", "stated", "variants"]

QUALIFIERS = ("depth", "kind", "speed", "stage", "total", "order", "top", "branch")
"""Every qualifier, in the order queries record them."""

Op = dict[str, Any]
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


def stated(base: nx.DiGraph, ops: list[Op]) -> list[str]:
    """The qualifiers ``ops`` state where they can matter, in ``QUALIFIERS`` order."""
    found = {q for _, op in walk(base, ops) for q in QUALIFIERS if _states(op, q)}
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


def variants(base: nx.DiGraph, ops: list[Op]) -> Iterator[tuple[str, list[Op]]]:
    """Each occurrence of each stated qualifier ablated alone (``kind`` only as a whole).

    Then each qualifier stated more than once (and ``kind``), ablated everywhere.
    """
    many: dict[str, int] = {}
    for path, op in walk(base, ops):
        for qualifier in QUALIFIERS:
            if _states(op, qualifier):
                many[qualifier] = many.get(qualifier, 0) + 1
                if qualifier != "kind":
                    yield qualifier, replace(ops, path, _ablated(op, qualifier))
    for qualifier, count in many.items():
        if count > 1 or qualifier == "kind":
            yield qualifier, ablate(ops, qualifier)


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
