"""Safety invariants fire on violating states and never on ground truth; answers by type."""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx
import pytest

from netarena.malt.checks import INVARIANTS, DiffView, answer_mismatch, state_mismatch, violations
from netarena.malt.topology import TopologyParams, build_topology
from netarena.malt.worker import graph_diff

SMALL = TopologyParams(
    topology="google-example",
    superblocks=1,
    aggs_per_superblock=2,
    spineblocks=1,
    switches_per_stage=2,
    ports_per_switch=3,
)
SW, PORT = "ju1.a1.m1.s2c1", "ju1.a1.m1.s2c1.p1"


def _set(node: str, key: str, value: object) -> Callable[[nx.DiGraph], None]:
    return lambda g: g.nodes[node].__setitem__(key, value)


BREAKERS: dict[str, list[Callable[[nx.DiGraph], None]]] = {
    "invalid_node_type": [
        _set(PORT, "type", "EK_PORT"),
        _set(PORT, "type", ["EK_WIDGET"]),
        _set(SW, "type", []),
    ],
    "invalid_edge_type": [
        lambda g: g.add_edge("ju1.a1.m1", "ju1.a1.m2", type="RK_LINKS"),
        lambda g: g.add_edge(SW, PORT + "x", type=None),
    ],
    "containment_hierarchy": [
        lambda g: g.add_edge(PORT, "ju1.a1", type="RK_CONTAINS"),
        lambda g: g.add_edge("ju1.a1.m1", PORT, type="RK_CONTAINS"),
    ],
    "orphaned_node": [lambda g: g.remove_node(SW), lambda g: g.remove_edge("ju1.a1", "ju1.a1.m2")],
    "port_without_capacity": [
        lambda g: g.nodes[PORT].pop("physical_capacity_bps"),
        _set(PORT, "physical_capacity_bps", 0),
        _set(PORT, "physical_capacity_bps", "1e9"),
        _set(PORT, "physical_capacity_bps", True),
    ],
    "switch_without_ports": [
        lambda g: g.remove_nodes_from([f"{SW}.p{i}" for i in (1, 2, 3)]),
        lambda g: (
            g.add_node("ju1.a1.m1.s9c9", name="x", type=["EK_PACKET_SWITCH"])
            or g.add_edge("ju1.a1.m1", "ju1.a1.m1.s9c9", type="RK_CONTAINS")
        ),
    ],
}


def test_every_invariant_has_violating_states() -> None:
    assert set(BREAKERS) == set(INVARIANTS)


@pytest.mark.parametrize(
    ("invariant", "index"), [(k, i) for k, v in BREAKERS.items() for i in range(len(v))]
)
def test_invariant_fires_on_a_violating_state(invariant: str, index: int) -> None:
    base = build_topology(SMALL)
    assert violations(base) == []
    broken = base.copy()
    BREAKERS[invariant][index](broken)
    full = violations(broken)
    assert any(v.startswith(invariant + ":") for v in full), full
    via_diff = violations(DiffView(base, graph_diff(base._node, base._adj, broken)))
    assert any(v.startswith(invariant + ":") for v in via_diff), via_diff
    assert base.nodes[PORT]["type"] == ["EK_PORT"]  # the base is never touched


def test_legitimate_changes_are_safe() -> None:
    base = build_topology(SMALL)
    g = base.copy()
    g.remove_nodes_from(["ju1.a1.m2"] + [n for n in g if n.startswith("ju1.a1.m2.")])
    g.nodes[PORT]["physical_capacity_bps"] = 40_000_000_000
    g.add_node(SW + ".p9", name=SW + ".p9", type=["EK_PORT"], physical_capacity_bps=10**9)
    g.add_edge(SW, SW + ".p9", type="RK_CONTAINS")
    assert violations(g) == []
    assert violations(DiffView(base, graph_diff(base._node, base._adj, g))) == []


@pytest.mark.parametrize(
    ("expected", "got", "reason"),
    [
        (
            {"type": "list", "data": ["a", "b", "c"], "ordered": True},
            ["b", "a", "c"],
            "wrong order",
        ),
        ({"type": "list", "data": ["a", "b", "c"], "ordered": False}, ["a", "c"], "missing ['b']"),
        (
            {"type": "list", "data": ["a", "b"], "ordered": False},
            ["a", "b", "z"],
            "unexpected ['z']",
        ),
        ({"type": "list", "data": ["a"], "ordered": False}, "a", "list of names"),
        ({"type": "text", "data": 64}, 63, "expected 64"),
        ({"type": "text", "data": 64}, "many", "expected the number"),
        (
            {"type": "table", "data": [["a", 1e9], ["b", 2e9]]},
            [["a", 1e9], ["b", 3e9]],
            "table differs",
        ),
        ({"type": "table", "data": [["a", 1e9]]}, [["a", 1e9], ["b", 1e9]], "table differs"),
        ({"type": "table", "data": [["a", 1e9]]}, 5, "table of"),
    ],
)
def test_wrong_answers_are_caught_by_type(expected: dict, got: object, reason: str) -> None:
    mismatch = answer_mismatch(expected, {"type": expected["type"], "data": got})
    assert mismatch is not None and reason in mismatch


@pytest.mark.parametrize(
    ("expected", "got"),
    [
        ({"type": "list", "data": ["a", "b"], "ordered": True}, ["a", "b"]),
        ({"type": "list", "data": ["a", "b"], "ordered": False}, ["b", "a"]),
        ({"type": "text", "data": 1_000_000_000}, 1e9),
        ({"type": "text", "data": 1_000_000_000}, "1,000,000,000"),
        ({"type": "text", "data": 48}, "48 ports"),
        ({"type": "table", "data": [["a", 1e9], ["b", 2e9]]}, [["b", 2e9], ["a", 1000000000]]),
        ({"type": "table", "data": [["a", 1e9]]}, {"a": 1e9}),
        ({"type": "graph", "data": None}, "anything"),
    ],
)
def test_right_answers_in_tolerated_shapes_pass(expected: dict, got: object) -> None:
    assert answer_mismatch(expected, {"type": expected["type"], "data": got}) is None


def test_state_is_compared_as_a_labelled_graph() -> None:
    base = build_topology(SMALL)

    def diff(change: Callable[[nx.DiGraph], None]) -> dict:
        g = base.copy()
        change(g)
        return graph_diff(base._node, base._adj, g)

    target = diff(_set(PORT, "physical_capacity_bps", 10**10))
    assert state_mismatch(target, diff(_set(PORT, "physical_capacity_bps", 10**10))) is None
    wrong_attr = state_mismatch(target, diff(_set(PORT, "physical_capacity_bps", 10**11)))
    assert "attribute 'physical_capacity_bps'" in wrong_attr
    assert "should be" in state_mismatch(
        target, diff(_set(SW + ".p2", "physical_capacity_bps", 10**10))
    )
    removal = diff(lambda g: g.remove_nodes_from([SW, *[f"{SW}.p{i}" for i in (1, 2, 3)]]))
    assert "should have been removed" in state_mismatch(removal, diff(lambda g: g.remove_node(SW)))
    kept = diff(_set(PORT, "physical_capacity_bps", 10**10))
    assert "is missing" in state_mismatch(kept, diff(lambda g: g.remove_node(PORT)))
    renamed = diff(lambda g: nx.relabel_nodes(g, {PORT: PORT + "x"}, copy=False))
    assert state_mismatch(
        renamed, diff(lambda g: nx.relabel_nodes(g, {PORT: PORT + "y"}, copy=False))
    )
    assert "read-only query changed the graph" in state_mismatch({"nodes": {}, "edges": []}, target)
