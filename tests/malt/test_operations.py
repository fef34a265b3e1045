"""The ground-truth semantics of filters, rankings and control flow, on a hand-made block."""

from __future__ import annotations

import networkx as nx
import pytest

from netarena.malt.operations import apply_op, apply_ops, loop_items, total_capacity
from netarena.malt.prompts import describe
from netarena.malt.solver import parse_steps, write_program

G = 1_000_000_000


def _block() -> nx.DiGraph:
    """One agg block ``b`` with switches s2c1 (2x10G), s2c2 (1x100G), s3c1 (10G + 40G)."""
    g = nx.DiGraph()
    g.add_node("b", name="b", type=["EK_AGG_BLOCK"])
    layout = {"b.s2c1": (2, [10, 10]), "b.s2c2": (2, [100]), "b.s3c1": (3, [10, 40])}
    for sw, (stage, speeds) in layout.items():
        g.add_node(sw, name=sw, type=["EK_PACKET_SWITCH"], switch_loc={"stage": stage})
        g.add_edge("b", sw, type="RK_CONTAINS")
        for i, speed in enumerate(speeds, 1):
            g.add_node(
                f"{sw}.p{i}", name=f"{sw}.p{i}", type=["EK_PORT"], physical_capacity_bps=speed * G
            )
            g.add_edge(sw, f"{sw}.p{i}", type="RK_CONTAINS")
    return g


SW, PORT = "EK_PACKET_SWITCH", "EK_PORT"


@pytest.mark.parametrize(
    ("op", "answer"),
    [
        ({"op": "count", "node": "b", "kind": PORT, "speed": {"cmp": "ge", "bps": 40 * G}}, 2),
        ({"op": "count", "node": "b", "kind": PORT, "speed": {"cmp": "lt", "bps": 40 * G}}, 3),
        ({"op": "count", "node": "b", "kind": PORT, "speed": {"cmp": "eq", "bps": 10 * G}}, 3),
        ({"op": "count", "node": "b", "kind": SW, "stage": 2}, 2),
        ({"op": "count", "node": "b", "kind": SW, "total": {"cmp": "ge", "bps": 50 * G}}, 2),
        ({"op": "count", "node": "b", "kind": SW, "total": {"cmp": "lt", "bps": 50 * G}}, 1),
        ({"op": "capacity", "node": "b", "speed": {"cmp": "lt", "bps": 100 * G}}, 70 * G),
        (
            {
                "op": "list",
                "parent": "b",
                "kind": PORT,
                "depth": "all",
                "speed": {"cmp": "ge", "bps": 40 * G},
            },
            ["b.s2c2.p1", "b.s3c1.p2"],
        ),
        ({"op": "rank", "parent": "b", "kind": SW}, ["b.s2c2", "b.s3c1", "b.s2c1"]),
        ({"op": "rank", "parent": "b", "kind": SW, "order": "asc"}, ["b.s2c1", "b.s3c1", "b.s2c2"]),
        ({"op": "rank", "parent": "b", "kind": SW, "top": 1}, ["b.s2c2"]),
        (
            {"op": "rank", "parent": "b", "kind": SW, "speed": {"cmp": "lt", "bps": 100 * G}},
            ["b.s3c1", "b.s2c1", "b.s2c2"],
        ),
        ({"op": "rank", "parent": "b.s3c1", "kind": PORT}, ["b.s3c1.p2", "b.s3c1.p1"]),
    ],
)
def test_reads_and_the_reference_program_agree(op: dict, answer: object) -> None:
    assert apply_op(_block(), op)["data"] == answer
    assert parse_steps(f"x\nTask:\n1. {describe(op)}\n\n") == [op]


def test_a_port_counts_its_own_capacity_when_ranked() -> None:
    assert total_capacity(_block(), "b.s2c2.p1") == 100 * G


def test_loops_select_once_then_change_and_if_takes_one_branch() -> None:
    g = _block()
    loop = {
        "op": "for_each",
        "parent": "b",
        "kind": PORT,
        "depth": "all",
        "speed": {"cmp": "eq", "bps": 10 * G},
        "do": {"op": "update", "port": "{X}", "capacity_bps": 40 * G},
    }
    assert loop_items(g, loop) == ["b.s2c1.p1", "b.s2c1.p2", "b.s3c1.p1"]
    apply_ops(g, [loop])
    assert total_capacity(g, "b") == 260 * G
    branch = {
        "op": "if",
        "measure": {"op": "count", "node": "b", "kind": SW},
        "threshold": 2,
        "then": [{"op": "remove", "node": "b.s2c2"}, {"op": "count", "node": "b", "kind": PORT}],
        "otherwise": [{"op": "capacity", "node": "b"}],
    }
    assert apply_ops(g, [branch]) == {"type": "text", "data": 4}
    assert "b.s2c2" not in g and "b.s2c2.p1" not in g
    assert parse_steps(f"x\nTask:\n1. {describe(branch)}\n\n") == [branch]
    assert "for X in keep(under('b', 'EK_PORT'), 'eq', 10000000000)" in write_program([loop])
