"""Seeded MALT query generation: operations sampled from the topology, truth by state transition.

A query is a short program of operations (``operations.py``): L1 one operation, L2 two in
sequence (the second reads near the first's change), L3 the original NetArena's level-3
pairs (add, then read the parent that grew) and control flow (a for-loop over a selected
set, an if-else on a measured condition whose threshold is drawn so both branches occur,
each branch a change and a question). Reads are about a switch, a block, a superblock, a
rack or a control domain, optionally only ports of some speeds, so every count, capacity
and ranking depends on the fabric, not on names. Truth is computed by applying the
operations to a copy of the topology; the ground truth is itself checked against the
safety invariants. ``draw`` redraws a task until every qualifier it states matters
(``qualifiers.py``): read blind to any one, the answer or the resulting topology differs.
"""

from __future__ import annotations

import random
from typing import Any

import networkx as nx

from netarena.common.core.errors import EmulatorError, NetArenaError
from netarena.malt.checks import DiffView, answer_mismatch, state_mismatch, violations
from netarena.malt.control import control_flow
from netarena.malt.operations import (
    READ_OPS,
    apply_ops,
    fork,
)
from netarena.malt.qualifiers import QUALIFIERS, idle, stated
from netarena.malt.tasks import TaskSampler
from netarena.malt.worker import graph_diff

__all__ = ["LABELS", "LABEL_SETS", "draw", "misses_truth", "sample", "solve"]

LABELS: dict[int, tuple[str, ...]] = {
    1: ("add", "remove", "list", "rank", "count", "update", "capacity"),
    2: (
        "add-capacity",
        "remove-list",
        "remove-count",
        "remove-rank",
        "update-rank",
        "update-capacity",
    ),
    3: (
        "add-list",
        "add-rank",
        "add-count",
        "loop-update",
        "loop-add",
        "loop-remove",
        "if-capacity",
        "if-count",
    ),
}
"""Labels per level: an operation, two in sequence, or a level-3 form."""

LABEL_SETS: dict[str, tuple[str, ...]] = {
    "original": (
        "add",
        "rank",
        "remove",
        "list",
        "remove-list",
        "remove-rank",
        "remove-count",
        "add-list",
        "add-rank",
        "add-count",
    ),
}
"""Named label subsets. ``original``: the task space of the original NetArena's benchmark
(its level-1, level-2 and level-3 labels), so results compare with its tables."""

Op = dict[str, Any]
_DRAWS = 40
"""Draws of a task before its idle qualifiers are dropped instead."""
_DROPPABLE = frozenset({"depth", "speed", "stage", "total", "order", "top"})
"""Qualifiers whose ablation is itself a task the prompts can state."""


def sample(sampler: TaskSampler, level: int, label: str) -> list[Op]:
    """The operations of one query: L1 and L2 by ``sampler``; L3 add-then-read or control flow."""
    if level == 1:
        return sampler.level1(label)
    if level == 2:
        return sampler.level2(label)
    if label.partition("-")[0] == "add":
        return sampler.add_then_read(label)
    return [control_flow(sampler, label)]


def solve(base: nx.DiGraph, ops: list[Op]) -> dict[str, Any]:
    """Ground truth for ``ops`` on ``base``: the answer and the resulting diff.

    Raises:
        EmulatorError: The ground truth would break a safety invariant (a generator bug).
    """
    if all(op["op"] in READ_OPS for op in ops):  # reads change nothing: no copy needed
        return {"ops": ops, "answer": apply_ops(base, ops), "diff": {"nodes": {}, "edges": []}}
    graph = fork(base)
    answer = apply_ops(graph, ops)
    diff = graph_diff(base._node, base._adj, graph)
    broken = violations(DiffView(base, diff))
    if broken:
        raise EmulatorError(f"malt: ground truth breaks invariants: {broken[:3]}")
    return {"ops": ops, "answer": answer, "diff": diff}


def misses_truth(base: nx.DiGraph, ops: list[Op], truth: dict[str, Any]) -> bool:
    """Whether solving ``ops`` (a misreading of a task) misses ``truth`` (``solve``'s result).

    A misreading that fails, or that breaks the topology's invariants, misses it too.
    """
    try:
        got = solve(base, ops)
    except NetArenaError:
        return True
    return bool(
        got["answer"]["type"] != truth["answer"]["type"]
        or answer_mismatch(truth["answer"], got["answer"])
        or state_mismatch(truth["diff"], got["diff"])
    )


def draw(
    base: nx.DiGraph, rng: random.Random, level: int, label: str
) -> tuple[dict[str, Any], list[str]]:
    """A task of ``label`` whose every stated qualifier is load-bearing, its truth and them.

    Draws until no ablation of a stated qualifier (``qualifiers.idle``) leaves the answer
    and the resulting topology unchanged; on a fabric where that is rare (Google's uniform
    example), after ``_DRAWS`` draws the last one keeps only its load-bearing qualifiers
    (dropping an idle one changes nothing, by definition). Deterministic in ``rng``.

    Returns:
        The truth (``solve``) and the qualifiers the task states, in ``QUALIFIERS`` order.
    """
    sampler = TaskSampler(base, rng)
    for _ in range(_DRAWS):
        truth = solve(base, sample(sampler, level, label))
        unused = idle(base, truth["ops"], truth["answer"])
        if not unused:
            return truth, stated(base, truth["ops"])
    for _ in range(len(QUALIFIERS)):
        droppable = [ops for q, ops in unused if q in _DROPPABLE]
        if not droppable:
            break
        truth = solve(base, droppable[0])
        unused = idle(base, truth["ops"], truth["answer"])
    return truth, stated(base, truth["ops"])
