"""MALT's audit: metamorphic checks that every stated detail changes the answer.

A MALT query has no injected fault for a classifier to find; what a careless reader can
skip is a stated detail. For every misreading (a qualifier ignored, ``qualifiers.py``; a
bound misread, ``bounds.py``) the check reads each query's task back from its prompt
(``solver.parse_steps``, what an agent sees), misreads it, solves the misreading on the
whole topology and judges it with the episode's own comparisons (``generator.misses_truth``:
answer by type, resulting topology, invariants). A misreading must be judged wrong on at
least ``THRESHOLD`` of the queries where it changes the task; the generator aims at all.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import networkx as nx

from netarena.common.core.evidence import AuditCheck
from netarena.common.core.types import Query
from netarena.malt.bounds import MISREADINGS
from netarena.malt.generator import misses_truth
from netarena.malt.qualifiers import QUALIFIERS, ablate
from netarena.malt.solver import parse_steps

__all__ = ["THRESHOLD", "MISREAD", "audit_checks", "checks_of", "judged"]

Op = dict[str, Any]

THRESHOLD = 0.9
"""Least share of the queries a misreading changes on which it must be judged wrong."""

MISREAD: dict[str, Callable[[list[Op]], list[Op]]] = {
    **{f"qualifier:{q}": functools.partial(ablate, qualifier=q) for q in QUALIFIERS},
    **{f"bound:{m.name}": m.everywhere for m in MISREADINGS},
}
"""Check name → the misreading, as a transformation of a task's operations."""


def checks_of(detail: str) -> list[str]:
    """The checks (``MISREAD`` names) that misread ``detail``, a qualifier or a bound."""
    if detail in QUALIFIERS:
        return [f"qualifier:{detail}"]
    return [f"bound:{m.name}" for m in MISREADINGS if m.bound == detail]


def judged(base: nx.DiGraph, query: Query, ops: list[Op], name: str) -> bool | None:
    """Whether misreading ``name`` of ``ops`` (``query``'s task) is judged wrong.

    ``None`` when the misreading does not change the task (the query does not state what
    it misreads).
    """
    wrong = MISREAD[name](ops)
    if wrong == ops:
        return None
    return misses_truth(base, wrong, query.truth)


def audit_checks(base: nx.DiGraph, queries: Sequence[Query]) -> list[AuditCheck]:
    """One ``AuditCheck`` per misreading over ``queries`` (generated on ``base``).

    Each query's task is read from its prompt, as an agent reads it.
    """
    stating = dict.fromkeys(MISREAD, 0)
    wrong = dict.fromkeys(MISREAD, 0)
    for query in queries:
        ops = parse_steps(query.prompt)
        for name in MISREAD:
            verdict = judged(base, query, ops, name)
            if verdict is not None:
                stating[name] += 1
                wrong[name] += verdict
    return [
        AuditCheck(name=name, queries=stating[name], judged_wrong=wrong[name],
                   threshold=THRESHOLD)
        for name in MISREAD
    ]
