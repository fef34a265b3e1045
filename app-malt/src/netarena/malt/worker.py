"""The MALT program that runs inside the sandbox's warm workers, plus the graph diff it uses.

This module's *source* is sent to the sandbox as its setup program, so it imports only the
standard library and networkx, never NetArena. ``setup`` builds the topology once per warm
worker; ``run`` executes one agent answer in a fresh forked child and reports the return value
and the resulting topology as a diff against the pristine topology (small, JSON, cheap to
compare). The evaluator imports the same ``graph_diff`` to express ground truth as a diff.
"""

from __future__ import annotations

import json
import time

TYPE_CHECKING = False  # names for the checker only; the sandbox worker imports no typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TypeAlias, TypedDict

    Json: TypeAlias = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

    class GraphDiff(TypedDict):
        """``graph_diff``'s result."""

        nodes: dict[str, Json]
        edges: list[list[Json]]

__all__ = ["setup", "run", "graph_diff", "jsonable", "graph_payload"]

_MISSING = object()
_MAX_DEPTH = 32


def jsonable(value: object, depth: int = 0) -> Json:
    """A JSON-safe copy of ``value``: containers become lists/dicts, other objects their repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and abs(value) != float("inf") else repr(value)
    if depth >= _MAX_DEPTH:
        return "<too deep>"
    if isinstance(value, dict):
        return {_key(k): jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((jsonable(v, depth + 1) for v in value), key=repr)
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item) and type(value).__module__.startswith("numpy"):
        try:
            return jsonable(item(), depth + 1)
        except Exception:  # noqa: BLE001 - fall back to the repr
            pass
    return repr(value)[:500]


def _key(node: object) -> str:
    return node if isinstance(node, str) else repr(node)


def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - exotic values compare as different
        return False


def graph_diff(
    base_node: Mapping[Any, Any], base_adj: Mapping[Any, Mapping[Any, Any]], graph: Any
) -> GraphDiff:
    """The changes from a base graph to ``graph``, as plain JSON data.

    Args:
        base_node: Base node attributes ``{name: attrs}`` (networkx ``_node``).
        base_adj: Base adjacency ``{u: {v: attrs}}`` (networkx ``_adj``).
        graph: Any networkx graph.

    Returns:
        ``{"nodes": {name: attrs or None}, "edges": [[u, v, attrs or None], ...]}`` listing
        added and changed nodes/edges with their full new attributes and removed ones as
        ``None``; edges sorted by ``(u, v)``. Equal graphs give empty ``nodes`` and ``edges``.
    """
    node, adj = graph._node, graph._adj
    nodes: dict[str, Json] = {}
    for n, attrs in node.items():
        old = base_node.get(n, _MISSING)
        if old is attrs:  # shared with the base (a fork's untouched node): unchanged
            continue
        if old is _MISSING or not _same(old, attrs):
            nodes[_key(n)] = jsonable(attrs)
    for n in base_node:
        if n not in node:
            nodes[_key(n)] = None
    edges: list[list[Json]] = []
    for u, nbrs in adj.items():
        old_nbrs = base_adj.get(u)
        if old_nbrs is nbrs or (old_nbrs is not None and _same(old_nbrs, nbrs)):
            continue
        old_nbrs = old_nbrs or {}
        for v, attrs in nbrs.items():
            old = old_nbrs.get(v, _MISSING)
            if old is _MISSING or not _same(old, attrs):
                edges.append([_key(u), _key(v), jsonable(attrs)])
        for v in old_nbrs:
            if v not in nbrs:
                edges.append([_key(u), _key(v), None])
    for u, old_nbrs in base_adj.items():
        if u not in adj:
            edges.extend([_key(u), _key(v), None] for v in old_nbrs)
    edges.sort(key=lambda e: (e[0], e[1]))
    return {"nodes": nodes, "edges": edges}


def graph_payload(graph: Any) -> bytes:
    """Serialize a topology for ``setup``: JSON nodes with attributes and typed edges."""
    return json.dumps(
        {
            "nodes": [[n, d] for n, d in graph.nodes(data=True)],
            "edges": [[u, v, d] for u, v, d in graph.edges(data=True)],
        }
    ).encode()


def setup(payload: bytes) -> dict[str, Any]:
    """Build the pristine topology and a private copy of it to diff answers against."""
    import copy

    import networkx as nx

    data = json.loads(payload)
    graph = nx.DiGraph()
    graph.add_nodes_from((n, d) for n, d in data["nodes"])
    graph.add_edges_from((u, v, d) for u, v, d in data["edges"])
    base_node = copy.deepcopy(dict(graph._node))
    base_adj = copy.deepcopy({u: dict(nbrs) for u, nbrs in graph._adj.items()})
    # Warm what agents commonly call, so nothing needs loading once the child is confined.
    warm = graph.copy()
    nx.descendants(warm, "ju1") if "ju1" in warm else None
    nx.node_link_graph(nx.node_link_data(nx.path_graph(3, create_using=nx.DiGraph)))
    list(nx.topological_sort(nx.path_graph(3, create_using=nx.DiGraph)))
    nx.shortest_path_length(nx.path_graph(3), 0)
    nx.is_isomorphic(nx.path_graph(2), nx.path_graph(2))
    return {"graph": graph, "base_node": base_node, "base_adj": base_adj, "nx": nx}


def _as_graph(value: object, nx: Any) -> Any:
    if isinstance(value, nx.Graph):
        return value
    if isinstance(value, dict) and "nodes" in value and ("links" in value or "edges" in value):
        try:
            edges = "links" if "links" in value else "edges"
            return nx.node_link_graph(value, directed=True, edges=edges)
        except Exception:  # noqa: BLE001 - not a node-link graph after all
            return None
    return None


def run(state: dict[str, Any], request: bytes) -> bytes:
    """Run one answer: exec the code, call ``process_graph(graph)``, report answer and diff."""
    nx, graph = state["nx"], state["graph"]
    out: dict[str, Any] = {
        "error": None, "answer": None, "answer_error": None, "diff": None, "note": None
    }
    started = time.perf_counter()
    try:
        namespace: dict[str, Any] = {"__name__": "__agent__"}
        exec(compile(request.decode("utf-8", "replace"), "<agent code>", "exec"), namespace)
        fn = namespace.get("process_graph")
        if not callable(fn):
            out["error"] = "the code does not define process_graph(graph_data)"
            return json.dumps(out).encode()
        result = fn(graph)
    except BaseException as exc:  # noqa: BLE001 - the agent's failure is the answer
        out["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        return json.dumps(out).encode()
    out["code_s"] = round(time.perf_counter() - started, 6)
    final = None
    if isinstance(result, dict):
        final = _as_graph(result.get("updated_graph"), nx) or _as_graph(result.get("data"), nx)
        data = result.get("data")
        out["answer"] = {
            "type": jsonable(result.get("type")),
            "data": "<graph>" if _as_graph(data, nx) is not None else jsonable(data),
        }
    else:
        out["answer_error"] = f"process_graph returned {type(result).__name__}, not a dict"
    final = graph if final is None else final
    out["diff"] = graph_diff(state["base_node"], state["base_adj"], final)
    if final is not graph:
        own = graph_diff(state["base_node"], state["base_adj"], graph)
        if (own["nodes"] or own["edges"]) and own != out["diff"]:
            out["note"] = "graph_data was changed in place but the returned graph differs from it"
    return json.dumps(out).encode()
