"""Ground truth: our own state-transition function for every MALT operation.

An operation is a plain dict (``{"op": "remove", "node": ...}``) so queries stay JSON.
``apply_ops`` runs a sequence on a graph in place and returns the answer of the last reading
operation (or a ``graph`` answer when every step modifies). Nothing here executes code strings:
these functions *are* the semantics the prompts describe, written once, independently of the
reference solver's programs.

Reads and loops may select ports by speed with ``"speed": {"cmp": C, "bps": N}`` (``C`` one
of ``SPEED_TESTS``: at least, more than, below, at most or exactly N bits per second, or
with ``N`` a pair ``[lo, hi]`` from lo to hi inclusive, or strictly between them), and
switches by ``"stage": N`` (their ``switch_loc`` stage) and by ``"total": {"cmp": C, "bps":
N}`` (the total capacity of their ports; at least, more than, below or at most N); each
filter applies to its own kind of node only. Counts and capacities look at every depth
unless ``"depth": "direct"`` (one RK_CONTAINS edge), lists and loops at one edge unless
``"depth": "all"``. A ranking is by total capacity (of the ports passing ``speed``, when
given), ``"order": "desc"`` (highest first, the default) or ``"asc"``, ties by name
ascending unless ``"ties": "desc"``, optionally cut to its ``"top"`` first names.
"""

from __future__ import annotations

import operator
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import networkx as nx

from netarena.common.core.errors import ConfigError

__all__ = [
    "CONTAINS",
    "fork",
    "SPEED_TESTS",
    "children",
    "contained",
    "loop_items",
    "selected",
    "selection",
    "total_capacity",
    "apply_op",
    "measure_value",
    "taken",
    "apply_ops",
    "READ_OPS",
    "WRITE_OPS",
]

CONTAINS = "RK_CONTAINS"
READ_OPS = frozenset({"list", "rank", "count", "capacity", "capacity_table"})
WRITE_OPS = frozenset({"add_switch", "add_port", "remove", "update"})
SPEED_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "ge": operator.ge,
    "gt": operator.gt,
    "lt": operator.lt,
    "le": operator.le,
    "eq": operator.eq,
    "range": lambda value, bounds: bounds[0] <= value <= bounds[1],
    "between": lambda value, bounds: bounds[0] < value < bounds[1],
    "range_half": lambda value, bounds: bounds[0] <= value < bounds[1],
}
"""Filters on ``physical_capacity_bps`` (or a switch's total): at least, more than, below, at
most or exactly a value; within ``[lo, hi]`` inclusive (``range``) or exclusive
(``between``). ``range_half`` (``[lo, hi)``) is never stated: it is how a reader who takes an
inclusive range for Python's ``range`` misreads it (``bounds.py``)."""

Op = dict[str, Any]
Answer = dict[str, Any]
PORT, SWITCH = "EK_PORT", "EK_PACKET_SWITCH"


def children(graph: nx.DiGraph, node: str, kind: str | None = None) -> list[str]:
    """Nodes ``node`` directly contains (``RK_CONTAINS`` edges, self-loops excluded), by name."""
    kids = [
        v
        for v, d in graph._adj[node].items()
        if v != node
        and d.get("type") == CONTAINS
        and (kind is None or kind in graph._node[v]["type"])
    ]
    return sorted(kids)


def contained(graph: nx.DiGraph, node: str, kind: str | None = None) -> list[str]:
    """Every node ``node`` contains directly or indirectly, optionally of one kind, by name."""
    seen = {node}
    todo = deque([node])
    while todo:
        for v in children(graph, todo.popleft()):
            if v not in seen:
                seen.add(v)
                todo.append(v)
    seen.discard(node)
    return sorted(v for v in seen if kind is None or kind in graph._node[v]["type"])


_OWNED = "netarena.malt.owned"
"""``graph.graph`` key of a fork's set of nodes whose adjacency dicts it has made its own."""


def fork(graph: nx.DiGraph) -> nx.DiGraph:
    """A copy to apply operations to, sharing with ``graph`` all that it does not change.

    Copy on write: the node and adjacency maps are copied, the attribute and adjacency
    dicts they hold are shared until an operation changes them (``_own`` copies a node's
    adjacency dicts first; an update replaces the port's attribute dict). The original is
    never changed, forking costs a fraction of a deep copy, and what a task left untouched
    stays *identical* to the original, which makes diffing it cheap.
    """
    copy = nx.DiGraph()
    copy._node = dict(graph._node)
    copy._adj = copy._succ = dict(graph._succ)
    copy._pred = dict(graph._pred)
    copy.graph[_OWNED] = set()
    return copy


def _own(graph: nx.DiGraph, nodes: Iterable[str]) -> None:
    """Make the adjacency dicts of ``nodes`` a fork's own before changing them."""
    owned = graph.graph.get(_OWNED)
    if owned is None:  # not a fork: everything is its own
        return
    for n in nodes:
        if n not in owned and n in graph._succ:
            graph._succ[n] = dict(graph._succ[n])
            graph._pred[n] = dict(graph._pred[n])
            owned.add(n)


def _passes(graph: nx.DiGraph, node: str, where: Op) -> bool:
    """Whether ``node`` passes the filters of ``where`` (each applies to its kind only)."""
    attrs = graph._node[node]
    speed, stage, total = where.get("speed"), where.get("stage"), where.get("total")
    if speed and PORT in attrs["type"]:
        if not SPEED_TESTS[speed["cmp"]](attrs.get("physical_capacity_bps", 0), speed["bps"]):
            return False
    if SWITCH in attrs["type"]:
        loc = attrs.get("switch_loc")
        if stage is not None and not (isinstance(loc, dict) and loc.get("stage") == stage):
            return False
        if total and not SPEED_TESTS[total["cmp"]](total_capacity(graph, node), total["bps"]):
            return False
    return True


def selected(
    graph: nx.DiGraph, node: str, kind: str, *, direct: bool, where: Op | None = None
) -> list[str]:
    """The nodes of ``kind`` in ``node`` (directly, or at any depth) passing ``where``'s filters.

    Args:
        graph: The topology.
        node: Where to look.
        kind: The kind of node to select.
        direct: Only nodes ``node`` directly contains.
        where: An operation (or any dict) whose ``speed``, ``stage`` and ``total`` filters
            apply; ``None`` selects all.
    """
    found = children(graph, node, kind) if direct else contained(graph, node, kind)
    return [v for v in found if where is None or _passes(graph, v, where)]


def total_capacity(
    graph: nx.DiGraph, node: str, speed: dict[str, Any] | None = None, direct: bool = False
) -> int | float:
    """Sum of ``physical_capacity_bps`` over the ports ``node`` contains (or is), filtered.

    ``direct``: only the ports ``node`` directly contains.
    """
    where = {"speed": speed}
    ports = selected(graph, node, PORT, direct=direct, where=where)
    if PORT in graph._node[node]["type"] and _passes(graph, node, where):
        ports.append(node)
    total: int | float = sum(graph._node[p].get("physical_capacity_bps", 0) for p in ports)
    return total


def _need(graph: nx.DiGraph, name: str) -> None:
    if name not in graph:
        raise ConfigError(f"malt: operation refers to unknown node {name!r}")


def _add_node(graph: nx.DiGraph, node: str, **attrs: Any) -> None:
    if node in graph:  # an existing node's attribute dict may be shared: replace it
        graph._node[node] = {**graph._node[node], **attrs}
    else:
        graph.add_node(node, **attrs)


def _add_port(graph: nx.DiGraph, switch: str, name: str, capacity: int) -> None:
    _add_node(graph, name, name=name, type=[PORT], physical_capacity_bps=capacity)
    _own(graph, [switch])
    graph.add_edge(switch, name, type=CONTAINS)


def _write(graph: nx.DiGraph, op: Op) -> None:
    kind = op["op"]
    if kind == "add_switch":
        _need(graph, op["parent"])
        name = op["name"]
        _add_node(
            graph, name, name=name, type=["EK_PACKET_SWITCH"], switch_loc={"stage": op["stage"]}
        )
        _own(graph, [op["parent"]])
        graph.add_edge(op["parent"], name, type=CONTAINS)
        for p in range(1, op["ports"] + 1):
            _add_port(graph, name, f"{name}.p{p}", op["capacity_bps"])
    elif kind == "add_port":
        _need(graph, op["switch"])
        _add_port(graph, op["switch"], op["name"], op["capacity_bps"])
    elif kind == "remove":
        _need(graph, op["node"])
        gone = [op["node"], *contained(graph, op["node"])]
        _own(graph, {m for n in gone for m in (n, *graph._succ[n], *graph._pred[n])})
        graph.remove_nodes_from(gone)
    elif kind == "update":
        _need(graph, op["port"])  # a new dict: attribute dicts may be shared with a base graph
        port = op["port"]
        graph._node[port] = {**graph._node[port], "physical_capacity_bps": op["capacity_bps"]}


def _read(graph: nx.DiGraph, op: Op) -> Answer:
    kind = op["op"]
    _need(graph, op.get("parent") or op["node"])
    speed = op.get("speed")
    if kind == "list":
        direct = op.get("depth", "direct") == "direct"
        data = selected(graph, op["parent"], op["kind"], direct=direct, where=op)
        return {"type": "list", "data": data, "ordered": False}
    if kind == "rank":
        sign = 1 if op.get("order") == "asc" else -1
        kids = children(graph, op["parent"], op["kind"])  # by name: ties keep this order
        if op.get("ties") == "desc":
            kids.reverse()
        ranked = sorted(kids, key=lambda k: sign * total_capacity(graph, k, speed))
        return {"type": "list", "data": ranked[: op.get("top") or None], "ordered": True}
    if kind == "count":
        return {"type": "text", "data": len(selection(graph, op))}
    if kind == "capacity":
        direct = op.get("depth") == "direct"
        return {"type": "text", "data": total_capacity(graph, op["node"], speed, direct)}
    rows = [[k, total_capacity(graph, k)] for k in children(graph, op["parent"], op["kind"])]
    return {"type": "table", "data": rows}


def measure_value(graph: nx.DiGraph, measure: Op) -> int | float:
    """What a count or capacity ``measure`` (an ``if``'s condition) reads on ``graph``."""
    value = _read(graph, measure)["data"]
    assert isinstance(value, (int, float))
    return value


def _bind(template: Op, item: str) -> Op:
    return {k: v.replace("{X}", item) if isinstance(v, str) else v for k, v in template.items()}


def loop_items(graph: nx.DiGraph, op: Op) -> list[str]:
    """The items a ``for_each`` visits, in name order, selected before the first change."""
    return selected(graph, op["parent"], op["kind"], direct=op.get("depth") != "all", where=op)


def selection(graph: nx.DiGraph, op: Op) -> list[str]:
    """The nodes a ``list``, ``count`` or ``for_each`` selects on ``graph`` (with its filters)."""
    if op["op"] == "count":
        return selected(graph, op["node"], op["kind"], direct=op.get("depth") == "direct", where=op)
    return selected(
        graph, op["parent"], op["kind"], direct=op.get("depth", "direct") == "direct", where=op
    )


def taken(op: Op, value: float) -> str:
    """The branch (``then`` or ``otherwise``) an if-else takes when its measure is ``value``."""
    holds = value < op["threshold"] if op.get("cmp") == "lt" else value > op["threshold"]
    return "then" if holds else "otherwise"


def apply_op(graph: nx.DiGraph, op: Op) -> Answer | None:
    """Apply one operation in place; return its answer if it reads, else ``None``.

    Control flow: ``for_each`` applies ``do`` with ``{X}`` bound to each item of
    ``loop_items``; ``if`` measures ``measure`` and applies the operations of ``then`` when
    it is greater than ``threshold`` (less than, with ``"cmp": "lt"``), else those of
    ``otherwise``.
    """
    kind = op["op"]
    if kind in WRITE_OPS:
        _write(graph, op)
        return None
    if kind in READ_OPS:
        return _read(graph, op)
    if kind == "for_each":
        _need(graph, op["parent"])
        answer = None
        for item in loop_items(graph, op):
            answer = apply_op(graph, _bind(op["do"], item)) or answer
        return answer
    if kind == "if":
        return _sequence(graph, op[taken(op, measure_value(graph, op["measure"]))])
    raise ConfigError(f"malt: unknown operation {kind!r}")


def _sequence(graph: nx.DiGraph, ops: list[Op]) -> Answer | None:
    answer: Answer | None = None
    for op in ops:
        answer = apply_op(graph, op) or answer
    return answer


def apply_ops(graph: nx.DiGraph, ops: list[Op]) -> Answer:
    """Apply operations in order, in place; the answer of the last one that reads, or ``graph``."""
    return _sequence(graph, ops) or {"type": "graph", "data": None}
