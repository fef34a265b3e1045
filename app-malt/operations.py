"""Ground truth: our own state-transition function for every MALT operation.

An operation is a plain dict (``{"op": "remove", "node": ...}``) so queries stay JSON.
``apply_ops`` runs a sequence on a graph in place and returns the answer of the last reading
operation (or a ``graph`` answer when every step modifies). Nothing here executes code strings:
these functions *are* the semantics the prompts describe, written once, independently of the
reference solver's programs.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import networkx as nx

from netarena.common.errors import ConfigError

__all__ = [
    "CONTAINS",
    "children",
    "contained",
    "total_capacity",
    "apply_op",
    "apply_ops",
    "READ_OPS",
    "WRITE_OPS",
]

CONTAINS = "RK_CONTAINS"
READ_OPS = frozenset({"list", "rank", "count", "capacity", "capacity_table"})
WRITE_OPS = frozenset({"add_switch", "add_port", "remove", "update"})

Op = dict[str, Any]
Answer = dict[str, Any]


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


def total_capacity(graph: nx.DiGraph, node: str) -> int | float:
    """Sum of ``physical_capacity_bps`` over the ports ``node`` contains."""
    return sum(
        graph._node[p].get("physical_capacity_bps", 0) for p in contained(graph, node, "EK_PORT")
    )


def _need(graph: nx.DiGraph, name: str) -> None:
    if name not in graph:
        raise ConfigError(f"malt: operation refers to unknown node {name!r}")


def _add_port(graph: nx.DiGraph, switch: str, name: str, capacity: int) -> None:
    graph.add_node(name, name=name, type=["EK_PORT"], physical_capacity_bps=capacity)
    graph.add_edge(switch, name, type=CONTAINS)


def _write(graph: nx.DiGraph, op: Op) -> None:
    kind = op["op"]
    if kind == "add_switch":
        _need(graph, op["parent"])
        name = op["name"]
        graph.add_node(
            name, name=name, type=["EK_PACKET_SWITCH"], switch_loc={"stage": op["stage"]}
        )
        graph.add_edge(op["parent"], name, type=CONTAINS)
        for p in range(1, op["ports"] + 1):
            _add_port(graph, name, f"{name}.p{p}", op["capacity_bps"])
    elif kind == "add_port":
        _need(graph, op["switch"])
        _add_port(graph, op["switch"], op["name"], op["capacity_bps"])
    elif kind == "remove":
        _need(graph, op["node"])
        graph.remove_nodes_from([op["node"], *contained(graph, op["node"])])
    elif kind == "update":
        _need(graph, op["port"])
        graph._node[op["port"]]["physical_capacity_bps"] = op["capacity_bps"]


def _read(graph: nx.DiGraph, op: Op) -> Answer:
    kind = op["op"]
    _need(graph, op.get("parent") or op["node"])
    if kind == "list":
        return {"type": "list", "data": children(graph, op["parent"], op["kind"]), "ordered": False}
    if kind == "rank":
        kids = children(graph, op["parent"], op["kind"])
        ranked = sorted(kids, key=lambda k: (-total_capacity(graph, k), k))
        return {"type": "list", "data": ranked, "ordered": True}
    if kind == "count":
        return {"type": "text", "data": len(contained(graph, op["node"], op["kind"]))}
    if kind == "capacity":
        return {"type": "text", "data": total_capacity(graph, op["node"])}
    rows = [[k, total_capacity(graph, k)] for k in children(graph, op["parent"], op["kind"])]
    return {"type": "table", "data": rows}


def _measure(graph: nx.DiGraph, measure: Op) -> int | float:
    value = _read(graph, measure)["data"]
    assert isinstance(value, (int, float))
    return value


def _bind(template: Op, item: str) -> Op:
    return {k: v.replace("{X}", item) if isinstance(v, str) else v for k, v in template.items()}


def apply_op(graph: nx.DiGraph, op: Op) -> Answer | None:
    """Apply one operation in place; return its answer if it reads, else ``None``.

    Control flow: ``for_each`` applies ``do`` (with ``{X}`` bound to each child of ``kind``
    under ``parent``, in name order); ``if`` measures ``measure`` and applies ``then`` when it
    is greater than ``threshold``, else ``otherwise``.
    """
    kind = op["op"]
    if kind in WRITE_OPS:
        _write(graph, op)
        return None
    if kind in READ_OPS:
        return _read(graph, op)
    if kind == "for_each":
        answer = None
        for item in children(graph, op["parent"], op["kind"]):
            answer = apply_op(graph, _bind(op["do"], item))
        return answer
    if kind == "if":
        branch = op["then"] if _measure(graph, op["measure"]) > op["threshold"] else op["otherwise"]
        return apply_op(graph, branch)
    raise ConfigError(f"malt: unknown operation {kind!r}")


def apply_ops(graph: nx.DiGraph, ops: list[Op]) -> Answer:
    """Apply operations in order, in place; the answer of the last one that reads, or ``graph``."""
    answer: Answer | None = None
    for op in ops:
        answer = apply_op(graph, op) or answer
    return answer if answer is not None else {"type": "graph", "data": None}
