"""MALT calibration baselines: the reference solver with one characteristic mistake each.

Each baseline reads the prompt as the reference does (``solver.parse_steps``) and writes a
program with a ``ProgramWriter`` that gets one thing wrong, the way real agents do: rank by
name, answer every question with one number, do only the last step, count only direct
children, ignore the speed and stage filters, annotate the graph while reading, add nodes
with a string ``type``, never change anything, or crash; and one *blind* baseline per
qualifier (``qualifiers.py``), which solves like the reference but reads the task as if
that one detail were not there (``contained`` as ``directly contained``, no stage filter,
highest first, the other branch, ...); and one *misreading* baseline per family of
comparison bounds (``bounds.py``: "exactly" as "at least", inclusive bounds as exclusive
and the reverse, ranges likewise, ties broken the other way). Every generated query's
stated qualifiers and bounds are load-bearing, so each blind or misreading baseline is
wrong on the queries that state what it misreads (its ``by_qualifier:`` ranges). Their
rates on the default configuration (``expected``, measured with ``netarena calibrate malt
--queries 630``) are a ladder a benchmark build must reproduce before its numbers are
trusted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netarena.common.core.agents import Baseline, Observation
from netarena.malt.bounds import family
from netarena.malt.operations import WRITE_OPS
from netarena.malt.qualifiers import QUALIFIERS, ablate
from netarena.malt.solver import ProgramWriter, parse_steps

__all__ = ["BASELINES", "BLIND", "MISREADERS", "ScriptedMaltAgent"]

Op = dict[str, Any]
Transform = Callable[[list[Op]], list[Op]]


class ScriptedMaltAgent:
    """Parses the task like the reference, transforms it, and writes it with ``writer``."""

    def __init__(self, name: str, writer: ProgramWriter, transform: Transform | None = None):
        self.name = f"baseline:{name}"
        self.writer = writer
        self.transform = transform or (lambda ops: ops)

    async def act(self, observation: Observation) -> str:
        """The program for this task, in a fenced block (deterministic in the text)."""
        ops = self.transform(parse_steps(observation.text))
        return f"```python\n{self.writer.program(ops)}```"


class _RankByName(ProgramWriter):
    def ranked(self, op: Op) -> str:
        return f"sorted({self.kids(op)})"


class _ConstantAnswer(ProgramWriter):
    def measure(self, op: Op) -> str:
        return "64"

    def read(self, op: Op) -> str:
        if op["op"] == "capacity_table":
            return f"[[k, 64] for k in {self.kids(op)}]"
        return super().read(op)


class _DirectOnly(ProgramWriter):
    """Treats "contained (directly or indirectly)" as "directly contained" when reading."""

    prelude = ProgramWriter.prelude + (
        "\n    def under(node, kind=None):\n"
        "        return sorted(v for v, e in G[node].items() if v != node and e.get('type') =="
        " 'RK_CONTAINS' and (kind is None or kind in G.nodes[v]['type']))\n"
    )


class _InPlaceAnnotate(ProgramWriter):
    """Answers correctly, and records each answer on the node it is about."""

    def emit(self, op: Op, pad: str) -> list[str]:
        lines = super().emit(op, pad)
        about = op.get("parent") or op.get("node")
        if op["op"] in WRITE_OPS or op["op"] in ("for_each", "if") or about is None:
            return lines
        return [*lines, f"{pad}G.nodes[{about!r}]['answer'] = str(result['data'])[:200]"]


class _UnsafeAdd(ProgramWriter):
    """Adds switches and ports with ``type`` a string, not a list of kinds."""

    prelude = ProgramWriter.prelude.replace('type=["EK_PORT"]', 'type="EK_PORT"')

    def add_switch(self, op: Op) -> list[str]:
        return [
            line.replace("type=['EK_PACKET_SWITCH']", "type='EK_PACKET_SWITCH'")
            for line in super().add_switch(op)
        ]


class _Crash(ProgramWriter):
    def program(self, ops: list[Op]) -> str:
        return "def process_graph(graph_data):\n    raise RuntimeError('baseline: crash')\n"


def _last_step(ops: list[Op]) -> list[Op]:
    """Only the final step; in an if-else, only each branch's final operation."""
    last = dict(ops[-1])
    if last["op"] == "if":
        last["then"], last["otherwise"] = last["then"][-1:], last["otherwise"][-1:]
    return [last]


def _unfiltered(op: Any) -> Any:
    """``op`` without speed and stage filters, at every depth."""
    if isinstance(op, list):
        return [_unfiltered(o) for o in op]
    if isinstance(op, dict):
        drop = {"speed"} if op.get("op") == "add_switch" else {"speed", "stage"}
        return {k: _unfiltered(v) for k, v in op.items() if k not in drop}
    return op


def _reads_only(ops: list[Op]) -> list[Op]:
    """Every change dropped (loops of changes too): the task's questions only."""
    kept = []
    for op in ops:
        if op["op"] in WRITE_OPS or (op["op"] == "for_each" and op["do"]["op"] in WRITE_OPS):
            continue
        if op["op"] == "if":
            op = {**op, "then": _reads_only(op["then"]), "otherwise": _reads_only(op["otherwise"])}
        kept.append(op)
    return kept


def _blind(qualifier: str) -> Transform:
    return lambda ops: ablate(ops, qualifier)


def _baseline(
    name: str,
    description: str,
    writer: ProgramWriter,
    expected: dict[str, tuple[float, float]],
    transform: Transform | None = None,
) -> Baseline:
    return Baseline(
        name=name,
        description=description,
        make=lambda: ScriptedMaltAgent(name, writer, transform),
        expected=expected,
    )


_BLIND_WORDS = {
    "depth": "reads 'contained (directly or indirectly)' as 'directly contained'",
    "kind": "selects every node a place contains, not only the stated kind",
    "speed": "ignores port-speed filters",
    "stage": "ignores switch-stage filters",
    "total": "ignores filters on a switch's total port capacity",
    "order": "ranks highest first even when asked for lowest first",
    "top": "returns the whole ranking when asked for the first N",
    "branch": "takes the other branch of every if-else",
}
_BLIND_RANGES: dict[str, tuple[float, float]] = {
    "depth": (0.56, 0.64),
    "kind": (0.70, 0.78),
    "speed": (0.53, 0.62),
    "stage": (0.89, 0.97),
    "total": (0.89, 0.97),
    "order": (0.87, 0.95),
    "top": (0.85, 0.93),
    "branch": (0.88, 0.95),
}
"""``solved_safely`` of each blind baseline: one minus the share of queries stating its
qualifier (``netarena calibrate malt --queries 630 --seed 1``: depth 0.598, kind 0.737,
speed 0.575, stage 0.933, total 0.930, order 0.914, top 0.894, branch 0.917; widened by
about 0.04; re-measured once bounds became load-bearing: 0.592, 0.730, 0.581, 0.925, 0.924,
0.919, 0.892, 0.917). On the queries that state its qualifier each is always wrong
(``tests/malt/test_qualifiers.py``)."""

BLIND: tuple[Baseline, ...] = tuple(
    _baseline(
        f"{q}-blind",
        _BLIND_WORDS[q],
        ProgramWriter(),
        {"solved_safely": _BLIND_RANGES[q]},
        _blind(q),
    )
    for q in QUALIFIERS
)
"""One qualifier-blind baseline per qualifier, in ``QUALIFIERS`` order."""

_MISREADERS: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[float, float]], ...] = (
    (
        "exactly-as-at-least",
        "reads 'exactly N' as 'at least N'",
        ("exactly->at least",),
        ("exactly",),
        (0.87, 0.95),
    ),
    (
        "edges-swapped",
        "reads 'at least' as 'more than', 'below' as 'at most' and the reverse",
        ("at least->more than", "more than->at least", "below->at most", "at most->below"),
        ("at least", "more than", "below", "at most"),
        (0.61, 0.70),
    ),
    (
        "ranges-swapped",
        "reads inclusive speed ranges as exclusive and exclusive ones as inclusive",
        ("inclusive range->exclusive", "exclusive range->inclusive"),
        ("inclusive range", "exclusive range"),
        (0.89, 0.97),
    ),
    (
        "ties-reversed",
        "breaks a ranking's ties by name the other way",
        ("ties->reversed",),
        ("ties",),
        (0.80, 0.88),
    ),
)
"""Misreading baselines: name, description, the misreadings (``bounds.MISREADINGS``) it
makes at once, the bounds it misreads, and its ``solved_safely`` range: one minus the share
of queries stating one of those bounds (``netarena calibrate malt --queries 630 --seed 1``:
0.914, 0.652, 0.933, 0.840), widened by about 0.04. Where it misreads it solves at most
0.10 (``by_qualifier:``; measured 0 solved on each: exactly 54 queries; at least 43, more
than 45, below 80, at most 53; inclusive range 18, exclusive range 25; ties 101); the
generator makes it 0 (``tests/malt/test_bounds.py``)."""

MISREADERS: tuple[Baseline, ...] = tuple(
    _baseline(
        name,
        description,
        ProgramWriter(),
        {"solved_safely": overall, **{f"by_qualifier:{b}": (0.0, 0.10) for b in bounds}},
        family(*misreadings).everywhere,
    )
    for name, description, misreadings, bounds, overall in _MISREADERS
)
"""One misreading baseline per family of bounds, in ``_MISREADERS`` order."""

_SAFE = {"safety": (1.0, 1.0)}

BASELINES: tuple[Baseline, ...] = (
    _baseline(
        "rank-by-name",
        "ranks by node name instead of capacity",
        _RankByName(),
        {"solved_safely": (0.76, 0.85), **_SAFE},
    ),
    _baseline(
        "constant-answer",
        "answers every count and capacity (and table value) with the number 64",
        _ConstantAnswer(),
        {"solved_safely": (0.58, 0.66), **_SAFE},
    ),
    _baseline(
        "last-step-only",
        "does only the task's last step (each branch's last operation)",
        ProgramWriter(),
        {"solved_safely": (0.42, 0.50), **_SAFE},
        _last_step,
    ),
    _baseline(
        "direct-only",
        "counts and sums only directly contained nodes when reading",
        _DirectOnly(),
        {"solved_safely": (0.54, 0.62), **_SAFE},
    ),
    _baseline(
        "no-filter",
        "ignores speed and stage filters (selects every port or switch)",
        ProgramWriter(),
        {
            "solved_safely": (0.49, 0.58),
            "safety": (0.93, 0.99),
            "safety_when_changed": (0.92, 0.99),
        },
        lambda ops: _unfiltered(ops),
    ),
    _baseline(
        "in-place-annotate",
        "answers right but writes each answer onto the graph",
        _InPlaceAnnotate(),
        {"solved_safely": (0.23, 0.31), **_SAFE},
    ),
    _baseline(
        "unsafe-add",
        "adds switches and ports with a string type, not a list",
        _UnsafeAdd(),
        {
            "solved_safely": (0.66, 0.75),
            "safety": (0.66, 0.75),
            "safety_when_changed": (0.59, 0.68),
        },
    ),
    _baseline(
        "read-only",
        "answers the questions but never makes a change",
        ProgramWriter(),
        {"solved_safely": (0.15, 0.23), "changed": (0.0, 0.0), **_SAFE},
        _reads_only,
    ),
    _baseline(
        "crash",
        "replies with code that raises (changes nothing)",
        _Crash(),
        {"solved_safely": (0.0, 0.0), "changed": (0.0, 0.0), **_SAFE},
    ),
    *BLIND,
    *MISREADERS,
)
"""MALT's calibration ladder, in the order reports list it. Ranges: the rate measured on the
default configuration with ``netarena calibrate malt --queries 630`` at seeds 1 and 2
(identical or within 0.03 of each other), widened by about 0.04; re-measured at seed 1 once
every stated qualifier became load-bearing (all within their ranges, direct-only moved to
0.578 as switches' counts and capacities now say "directly contained")."""
