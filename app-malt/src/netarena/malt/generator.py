"""Seeded MALT query generation: operations sampled from the topology, truth by state transition.

A query is a short program of operations (``operations.py``): L1 one operation, L2 two in
sequence (the second reads near the first's change), L3 the original NetArena's level-3
pairs (add, then read the parent that grew) and control flow (a for-loop over a selected
set, an if-else on a measured condition whose threshold is drawn so both branches occur,
each branch a change and a question). Reads are about a switch, a block, a superblock, a
rack or a control domain, optionally only ports of some speeds, so every count, capacity
and ranking depends on the fabric, not on names. Truth is computed by applying the
operations to a copy of the topology; the ground truth is itself checked against the
safety invariants. ``draw`` redraws a task until every qualifier and every bound it states
matters (``qualifiers.py``, ``bounds.py``): read blind to any qualifier, or misreading any
bound, the answer or the resulting topology differs. Those checks run on the part of the
topology the task can see (``metamorphic.py``); only the task kept is solved on the whole.
"""

from __future__ import annotations

import random
from typing import Any

import networkx as nx

from netarena.common.core.errors import EmulatorError, NetArenaError
from netarena.malt import bounds, qualifiers
from netarena.malt.checks import DiffView, answer_mismatch, state_mismatch, violations
from netarena.malt.control import control_flow
from netarena.malt.metamorphic import Outcomes, idle
from netarena.malt.operations import (
    READ_OPS,
    apply_ops,
    fork,
)
from netarena.malt.tasks import TaskSampler
from netarena.malt.worker import graph_diff

__all__ = ["LABELS", "LABEL_SETS", "draw", "misses_truth", "sample", "solve", "stated"]

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


def stated(base: nx.DiGraph, ops: list[Op]) -> list[str]:
    """The details ``ops`` state (what ``Query.qualifiers`` records).

    Qualifiers in ``QUALIFIERS`` order, then bounds in ``BOUNDS`` order.
    """
    return [*qualifiers.stated(base, ops), *bounds.stated(base, ops)]


def _settle(base: nx.DiGraph, ops: list[Op]) -> tuple[list[Op], list[tuple[str, list[Op]]]]:
    """``ops`` with idle tie orders dropped (``bounds.untie``), and their idle details.

    The idle details are the ablated qualifiers and misread bounds (with the task so read)
    that leave the outcome unchanged.
    """
    ranks_ties = any(op.get("ties") for op in ops)  # rankings are steps, never in a branch
    found = [*qualifiers.variants(base, ops), *bounds.variants(base, ops)]
    if not found and not ranks_ties:
        return ops, []
    outcomes = Outcomes(base, ops)
    if ranks_ties:
        ops = bounds.untie(outcomes, base, ops)
        found = [*qualifiers.variants(base, ops), *bounds.variants(base, ops)]
    return ops, idle(outcomes, found)


def draw(
    base: nx.DiGraph, rng: random.Random, level: int, label: str
) -> tuple[dict[str, Any], list[str]]:
    """A task of ``label`` whose every stated qualifier and bound is load-bearing.

    Draws until no ablation of a stated qualifier and no misreading of a stated bound
    leaves the answer and the resulting topology unchanged (a tie order that decides
    nothing is dropped, not redrawn); on a fabric where that is rare (Google's uniform
    example), after ``_DRAWS`` draws the last one keeps only its load-bearing qualifiers
    (dropping an idle one changes nothing, by definition). A filter's bound has no such
    fallback; about one draw in 30 is redrawn for it on the default fabric
    (``benchmarks/malt_qualifiers.py``) and Google's example states no filter bounds (one
    speed, one total). Deterministic in ``rng``.

    Returns:
        The task's truth (``solve``) and the details it states (``stated``).
    """
    sampler = TaskSampler(base, rng)
    for _ in range(_DRAWS):
        ops, unused = _settle(base, sample(sampler, level, label))
        if not unused:
            break
    else:
        for _ in range(len(qualifiers.QUALIFIERS)):
            droppable = [ops for q, ops in unused if q in _DROPPABLE]
            if not droppable:
                break
            ops, unused = _settle(base, droppable[0])
    return solve(base, ops), stated(base, ops)
