"""The comparison bounds a MALT query states, and how a careless reader misreads them.

A bound is the comparison word of a filter or a ranking:

- a port-speed filter (``speed``) reads "of exactly", "of at least", "of more than",
  "below", "of at most" N, "from A to B inclusive" or "strictly between A and B"; a
  switch-total filter (``total``) "at least", "more than", "below" or "at most" N;
- a ranking states "ties by name ascending" (or "descending").

Each has the misreadings ``MISREADINGS`` lists ("exactly" read as "at least" or "at most",
inclusive read as exclusive and the reverse, an inclusive range read as Python's half-open
``range``, ties broken the other way). Like a qualifier (``qualifiers.py``), a bound is
stated only where it is load-bearing: with any one occurrence misread (and with every
occurrence of one misreading at once) the answer or the resulting topology differs from the
truth. The generator redraws a query until this holds for filters (``variants``); a tie
order that decides nothing is not stated at all (``untie``): the ranking has no tie that
reaches its answer, so the sentence would be idle.

An if-else's "greater than" / "less than" is a direction, not a bound: its threshold is
never the measured value (``control.py``), so a strict and an inclusive reading take the
same branch. Making that reading matter would put every threshold on the measured value,
which gives the branch away; the direction itself is the ``branch`` qualifier.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import networkx as nx

from netarena.malt.metamorphic import Outcomes, replace, walk
from netarena.malt.operations import measure_value

__all__ = ["BOUNDS", "MISREADINGS", "Misreading", "family", "measure_variants", "misread",
           "stated", "untie", "variants"]

Op = dict[str, Any]

BOUNDS = (
    "exactly",
    "at least",
    "more than",
    "below",
    "at most",
    "inclusive range",
    "exclusive range",
    "ties",
)
"""Every bound, in the order queries record them (after the qualifiers)."""

_WORD = {
    "eq": "exactly",
    "ge": "at least",
    "gt": "more than",
    "lt": "below",
    "le": "at most",
    "range": "inclusive range",
    "between": "exclusive range",
}
"""A filter's comparison (``operations.SPEED_TESTS``) → the bound it states."""

_KEYS = ("speed", "total", "ties")
"""Where an operation states bounds: its two filters and a ranking's tie order."""


@dataclass(frozen=True)
class Misreading:
    """One way to misread one bound."""

    name: str
    """``stated->read`` (``exactly->at least``)."""
    bound: str
    """The bound it misreads (one of ``BOUNDS``)."""
    swap: Mapping[str, str]
    """The stated comparison (or tie order) → the one read instead."""

    def applies(self, op: Op, key: str) -> bool:
        """Whether ``op`` states this misreading's bound at ``key``."""
        value = op.get(key)
        if key == "ties":
            return self.bound == "ties" and value in self.swap
        return isinstance(value, dict) and self.bound != "ties" and value["cmp"] in self.swap

    def at(self, op: Op, key: str) -> Op:
        """``op`` with its bound at ``key`` misread (``applies`` holds)."""
        if key == "ties":
            return {**op, "ties": self.swap[op["ties"]]}
        return {**op, key: {**op[key], "cmp": self.swap[op[key]["cmp"]]}}

    def everywhere(self, ops: list[Op]) -> list[Op]:
        """``ops`` as a reader making this misreading takes them: every occurrence misread."""
        out = []
        for op in ops:
            for key in _KEYS:
                if self.applies(op, key):
                    op = self.at(op, key)
            if op["op"] == "if":
                op = {
                    **op,
                    "measure": self.everywhere([op["measure"]])[0],
                    "then": self.everywhere(op["then"]),
                    "otherwise": self.everywhere(op["otherwise"]),
                }
            out.append(op)
        return out


MISREADINGS: tuple[Misreading, ...] = (
    Misreading("exactly->at least", "exactly", {"eq": "ge"}),
    Misreading("exactly->at most", "exactly", {"eq": "le"}),
    Misreading("at least->more than", "at least", {"ge": "gt"}),
    Misreading("more than->at least", "more than", {"gt": "ge"}),
    Misreading("below->at most", "below", {"lt": "le"}),
    Misreading("at most->below", "at most", {"le": "lt"}),
    Misreading("inclusive range->exclusive", "inclusive range", {"range": "between"}),
    Misreading("inclusive range->half-open", "inclusive range", {"range": "range_half"}),
    Misreading("exclusive range->inclusive", "exclusive range", {"between": "range"}),
    Misreading("ties->reversed", "ties", {"asc": "desc", "desc": "asc"}),
)
"""Every misreading the generator makes wrong wherever its bound is stated."""

_BY_NAME = {m.name: m for m in MISREADINGS}
_TIES = _BY_NAME["ties->reversed"]


def family(*names: str) -> Misreading:
    """One reader making the misreadings ``names`` (of ``MISREADINGS``) at once.

    Each stated bound is misread once (``at least->more than`` and ``more than->at least``
    together swap the two, they do not undo each other). Only filter bounds, or only ties.
    """
    parts = [_BY_NAME[name] for name in names]
    if len({m.bound == "ties" for m in parts}) > 1:
        raise ValueError("a family misreads filter bounds or tie orders, not both")
    swap = {stated: read for m in parts for stated, read in m.swap.items()}
    return Misreading("+".join(names), parts[0].bound, swap)


def misread(ops: list[Op], name: str) -> list[Op]:
    """``ops`` read with the misreading ``name`` (of ``MISREADINGS``) everywhere."""
    return _BY_NAME[name].everywhere(ops)


def _bounds(op: Op) -> Iterator[str]:
    for key in ("speed", "total"):
        if isinstance(op.get(key), dict):
            yield _WORD[op[key]["cmp"]]
    if op.get("ties"):
        yield "ties"


def stated(base: nx.DiGraph, ops: list[Op]) -> list[str]:
    """The bounds ``ops`` state where they can matter, in ``BOUNDS`` order."""
    found = {bound for _, op in walk(base, ops) for bound in _bounds(op)}
    return [b for b in BOUNDS if b in found]


def variants(base: nx.DiGraph, ops: list[Op]) -> Iterator[tuple[str, list[Op]]]:
    """Each occurrence of each stated filter bound misread alone, each misreading way.

    Then each misreading whose bound is stated more than once, everywhere. Tie orders are
    settled by ``untie`` instead.
    """
    many: dict[str, int] = {}
    for path, op in walk(base, ops):
        for key in ("speed", "total"):
            for m in MISREADINGS:
                if m.applies(op, key):
                    many[m.name] = many.get(m.name, 0) + 1
                    yield m.name, replace(ops, path, m.at(op, key))
    for name, count in many.items():
        if count > 1:
            yield name, misread(ops, name)


def untie(outcomes: Outcomes, base: nx.DiGraph, ops: list[Op]) -> list[Op]:
    """``ops`` without the tie order of each ranking whose reverse gives the same outcome.

    ``outcomes`` is the outcome of ``ops``; it stays theirs (an idle tie order decides
    nothing, so dropping it, which means name order, changes no outcome).
    """
    for path, op in list(walk(base, ops)):
        if _TIES.applies(op, "ties") and outcomes.same(replace(ops, path, _TIES.at(op, "ties"))):
            ops = replace(ops, path, {k: v for k, v in op.items() if k != "ties"})
    return ops


def measure_variants(graph: nx.DiGraph, measure: Op) -> list[int | float]:
    """The values a count or capacity takes with each bound it states misread in turn.

    Only values that differ from the measure's own.
    """
    value = measure_value(graph, measure)
    values = []
    for m in MISREADINGS:
        for key in ("speed", "total"):
            if m.applies(measure, key):
                other = measure_value(graph, m.at(measure, key))
                if other != value:
                    values.append(other)
    return values
