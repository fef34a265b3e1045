"""Correctness and safety of a MALT answer.

Correctness: the returned value equals the ground truth by answer type (numbers with a
tolerance, ranked lists in order, unordered lists as multisets, tables as multisets of rows)
and the resulting topology equals the target, compared as *labelled* graphs through diffs
against the shared base topology (same node names, types, attributes, edges and edge types;
a read-only query's target diff is empty). Safety: the resulting topology keeps the model's
invariants. Both work on diffs, so judging an answer never copies the 5,493-node graph.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import networkx as nx

__all__ = [
    "KNOWN_KINDS",
    "EDGE_KINDS",
    "INVARIANTS",
    "GraphView",
    "DiffView",
    "violations",
    "answer_mismatch",
    "state_mismatch",
]

KNOWN_KINDS = frozenset(
    {
        "EK_JUPITER",
        "EK_SUPERBLOCK",
        "EK_SPINEBLOCK",
        "EK_AGG_BLOCK",
        "EK_PACKET_SWITCH",
        "EK_CHASSIS",
        "EK_CONTROL_POINT",
        "EK_PORT",
        "EK_RACK",
        "EK_CONTROL_DOMAIN",
    }
)
EDGE_KINDS = frozenset({"RK_CONTAINS", "RK_CONTROLS"})
INVARIANTS = (
    "invalid_node_type",
    "invalid_edge_type",
    "containment_hierarchy",
    "orphaned_node",
    "port_without_capacity",
    "switch_without_ports",
)
"""Names of the safety invariants, as reported in violations."""

_ALLOWED_CONTAINS = frozenset(
    {
        ("EK_JUPITER", "EK_SUPERBLOCK"),
        ("EK_JUPITER", "EK_SPINEBLOCK"),
        ("EK_SUPERBLOCK", "EK_AGG_BLOCK"),
        ("EK_AGG_BLOCK", "EK_PACKET_SWITCH"),
        ("EK_SPINEBLOCK", "EK_PACKET_SWITCH"),
        ("EK_PACKET_SWITCH", "EK_PORT"),
        ("EK_RACK", "EK_CHASSIS"),
        ("EK_CONTROL_DOMAIN", "EK_CONTROL_POINT"),
        ("EK_CHASSIS", "EK_PACKET_SWITCH"),
        ("EK_CHASSIS", "EK_CONTROL_POINT"),
    }
)
_PARENTS = {
    "EK_PORT": {"EK_PACKET_SWITCH"},
    "EK_PACKET_SWITCH": {"EK_AGG_BLOCK", "EK_SPINEBLOCK"},
    "EK_AGG_BLOCK": {"EK_SUPERBLOCK"},
    "EK_SUPERBLOCK": {"EK_JUPITER"},
    "EK_SPINEBLOCK": {"EK_JUPITER"},
}


class GraphView:
    """Read access to a whole networkx graph, for full checks."""

    def __init__(self, graph: nx.DiGraph) -> None:
        """Wrap ``base`` (never modified)."""
        self.graph = graph

    def attrs(self, node: str) -> Mapping[str, Any] | None:
        """Attributes of ``node``, or ``None`` when it does not exist."""
        found: Mapping[str, Any] | None = self.graph._node.get(node)
        return found

    def succ(self, node: str) -> Mapping[str, Mapping[str, Any]]:
        """``{child: edge attributes}`` of ``node``'s outgoing edges."""
        found: Mapping[str, Mapping[str, Any]] = self.graph._adj.get(node, {})
        return found

    def pred(self, node: str) -> Mapping[str, Mapping[str, Any]]:
        """``{parent: edge attributes}`` of ``node``'s incoming edges."""
        if not self.graph.is_directed():
            return self.succ(node)
        found: Mapping[str, Mapping[str, Any]] = self.graph._pred.get(node, {})
        return found

    def nodes(self) -> Iterable[str]:
        """The nodes to check."""
        nodes: Iterable[str] = self.graph._node
        return nodes


class DiffView(GraphView):
    """The base graph with a diff (``worker.graph_diff`` shape) applied, without copying.

    ``nodes()`` yields only the nodes the diff touches: the base is known to be safe, so
    only they (and their neighbours, which are edge endpoints in the diff) can break anything.
    """

    def __init__(self, base: nx.DiGraph, diff: Mapping[str, Any]) -> None:
        """Wrap ``base`` (never modified)."""
        super().__init__(base)
        self.node_changes: Mapping[str, Any] = diff.get("nodes") or {}
        self.out_changes: dict[str, dict[str, Any]] = {}
        self.in_changes: dict[str, dict[str, Any]] = {}
        for u, v, attrs in diff.get("edges") or []:
            self.out_changes.setdefault(u, {})[v] = attrs
            self.in_changes.setdefault(v, {})[u] = attrs

    def attrs(self, node: str) -> Mapping[str, Any] | None:
        """Attributes of ``node``, or ``None`` when it does not exist."""
        found: Mapping[str, Any] | None
        found = self.node_changes[node] if node in self.node_changes else self.graph._node.get(node)
        return found

    def _merge(self, base: Mapping[str, Any], changes: Mapping[str, Any] | None) -> dict[str, Any]:
        merged = {k: v for k, v in base.items() if self.attrs(k) is not None}
        for other, attrs in (changes or {}).items():
            if attrs is None:
                merged.pop(other, None)
            else:
                merged[other] = attrs
        return merged

    def succ(self, node: str) -> Mapping[str, Mapping[str, Any]]:
        """``{child: edge attributes}`` of ``node``'s outgoing edges."""
        return self._merge(self.graph._adj.get(node, {}), self.out_changes.get(node))

    def pred(self, node: str) -> Mapping[str, Mapping[str, Any]]:
        """``{parent: edge attributes}`` of ``node``'s incoming edges."""
        return self._merge(self.graph._pred.get(node, {}), self.in_changes.get(node))

    def nodes(self) -> Iterable[str]:
        """The nodes to check."""
        touched = set(self.node_changes) | set(self.out_changes) | set(self.in_changes)
        return sorted(n for n in touched if self.attrs(n) is not None)


def _kinds(attrs: Mapping[str, Any] | None) -> list[str]:
    kinds = attrs.get("type") if attrs else None
    return [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else []


def _node_violations(view: GraphView, node: str) -> list[str]:
    attrs = view.attrs(node) or {}
    kinds = _kinds(attrs)
    found = []
    raw = attrs.get("type")
    if (
        not isinstance(raw, list)
        or not raw
        or len(kinds) != len(raw)
        or not set(kinds) <= KNOWN_KINDS
    ):
        found.append(f"invalid_node_type: {node!r} has type {raw!r}")
    succ, pred = view.succ(node), view.pred(node)
    for v, e in succ.items():
        etype = e.get("type") if isinstance(e, Mapping) else None
        if etype not in EDGE_KINDS:
            found.append(f"invalid_edge_type: {node!r} -> {v!r} has type {etype!r}")
        elif etype == "RK_CONTAINS" and not any(
            (a, b) in _ALLOWED_CONTAINS for a in kinds for b in _kinds(view.attrs(v))
        ):
            found.append(f"containment_hierarchy: {node!r} {kinds} may not contain {v!r}")
    parents = {
        k
        for u, e in pred.items()
        if u != node and e.get("type") == "RK_CONTAINS"
        for k in _kinds(view.attrs(u))
    }
    for kind in kinds:
        if kind in _PARENTS and not parents & _PARENTS[kind]:
            found.append(f"orphaned_node: {kind} {node!r} has no {sorted(_PARENTS[kind])} parent")
    if "EK_PORT" in kinds:
        cap = attrs.get("physical_capacity_bps")
        if (
            isinstance(cap, bool)
            or not isinstance(cap, (int, float))
            or not math.isfinite(cap)
            or cap <= 0
        ):
            found.append(f"port_without_capacity: {node!r} has physical_capacity_bps {cap!r}")
    if "EK_PACKET_SWITCH" in kinds and not any(
        v != node and e.get("type") == "RK_CONTAINS" and "EK_PORT" in _kinds(view.attrs(v))
        for v, e in succ.items()
    ):
        found.append(f"switch_without_ports: {node!r} contains no EK_PORT")
    return found


def violations(view: GraphView | nx.DiGraph) -> list[str]:
    """Every invariant violation in ``view``, each ``"<invariant>: <detail>"``.

    Args:
        view: A whole graph, or a ``DiffView`` (then only touched nodes are checked).
    """
    if isinstance(view, nx.Graph):
        view = GraphView(view)
    return [v for node in view.nodes() for v in _node_violations(view, node)]


_NUMBER = re.compile(r"[-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        found = _NUMBER.findall(value)
        if len(found) == 1:
            try:
                return float(found[0].replace(",", "").replace("_", ""))
            except ValueError:
                return None
    if isinstance(value, list) and len(value) == 1:
        return _number(value[0])
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def _rows(data: Any) -> list[tuple[str, float | None]] | None:
    if isinstance(data, dict):
        data = list(data.items())
    if not isinstance(data, list):
        return None
    rows = []
    for row in data:
        if isinstance(row, dict):
            row = list(row.values())
        if isinstance(row, tuple):
            row = list(row)
        if not isinstance(row, list) or len(row) != 2:
            return None
        rows.append((str(row[0]), _number(row[1])))
    return rows


def answer_mismatch(expected: Mapping[str, Any], got: Mapping[str, Any] | None) -> str | None:
    """Why the returned value differs from the expected one, or ``None`` when it matches.

    ``expected`` is a ground-truth answer (``type``, ``data``, ``ordered``); ``got`` is the
    JSON answer from the sandbox. ``graph`` answers are judged by the state alone.
    """
    kind = expected["type"]
    if kind == "graph":
        return None
    if not isinstance(got, Mapping):
        return "no answer value returned"
    data = got.get("data")
    if kind == "text":
        value = _number(data)
        if value is None:
            return f"expected the number {expected['data']}, got {str(data)[:80]!r}"
        return (
            None
            if _close(value, float(expected["data"]))
            else f"expected {expected['data']}, got {value:g}"
        )
    if kind == "list":
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            return f"expected a list of names, got {str(data)[:80]!r}"
        want = list(expected["data"])
        if expected.get("ordered"):
            if data == want:
                return None
            if Counter(data) == Counter(want):
                return "ranked list is in the wrong order"
        elif Counter(data) == Counter(want):
            return None
        missing, extra = sorted(set(want) - set(data)), sorted(set(data) - set(want))
        return f"list differs: missing {missing[:5]}, unexpected {extra[:5]}"
    rows = _rows(data)
    if rows is None:
        return f"expected a table of [name, value] rows, got {str(data)[:80]!r}"
    want_rows = sorted((str(n), float(v)) for n, v in expected["data"])
    got_rows = sorted(rows, key=lambda r: r[0])
    if len(want_rows) != len(got_rows) or any(
        a[0] != b[0] or b[1] is None or not _close(a[1], b[1])
        for a, b in zip(want_rows, got_rows, strict=True)
    ):
        return f"table differs from the expected {len(want_rows)} rows"
    return None


def state_mismatch(expected: Mapping[str, Any], got: Mapping[str, Any]) -> str | None:
    """Why the resulting topology differs from the target (both as diffs), or ``None``."""
    want_nodes, got_nodes = expected.get("nodes") or {}, got.get("nodes") or {}
    want_edges = {(u, v): a for u, v, a in expected.get("edges") or []}
    got_edges = {(u, v): a for u, v, a in got.get("edges") or []}
    if want_nodes == got_nodes and want_edges == got_edges:
        return None
    if not want_nodes and not want_edges:
        return (
            f"a read-only query changed the graph ({len(got_nodes)} nodes, {len(got_edges)} edges)"
        )
    for name in sorted(set(want_nodes) | set(got_nodes)):
        want, have = want_nodes.get(name, "unchanged"), got_nodes.get(name, "unchanged")
        if want != have:
            if want is None:
                return f"node {name!r} should have been removed"
            if have is None:
                return f"node {name!r} is missing"
            if have == "unchanged" or want == "unchanged":
                return f"node {name!r} should be {'unchanged' if want == 'unchanged' else want}"
            keys = sorted(k for k in set(want) | set(have) if want.get(k) != have.get(k))
            key = keys[0]
            got, wanted = have.get(key), want.get(key)
            return f"node {name!r} attribute {key!r} is {got!r}, expected {wanted!r}"
    for edge in sorted(set(want_edges) | set(got_edges)):
        if want_edges.get(edge, "unchanged") != got_edges.get(edge, "unchanged"):
            return f"edge {edge[0]!r} -> {edge[1]!r} differs from the target"
    return "the graph differs from the target"
