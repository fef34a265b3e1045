"""Generator vs loader on Google's example model, the parser's syntax, and scaling."""

from __future__ import annotations

from pathlib import Path

import pytest

from netarena.common.core.errors import ConfigError
from netarena.malt.checks import violations
from netarena.malt.loader import graph_from_model, load_textproto, parse_textproto
from netarena.malt.topology import (
    GOOGLE_EXAMPLE,
    PORT_SPEEDS_BPS,
    SPEED_TIERS_BPS,
    TopologyParams,
    build_topology,
)
from tests.helpers.data import shared_data

EXAMPLE = shared_data("malt", "malt-example-final.textproto")


def _edges(graph):
    return {(u, v): d for u, v, d in graph.edges(data=True)}


@pytest.mark.skipif(not EXAMPLE.exists(), reason=f"the MALT example model is not at {EXAMPLE}")
def test_generator_reproduces_the_example_file_exactly() -> None:
    loaded, generated = load_textproto(EXAMPLE), build_topology(GOOGLE_EXAMPLE)
    assert loaded.number_of_nodes() == generated.number_of_nodes() == 5493
    assert loaded.number_of_edges() == generated.number_of_edges() == 6424
    assert dict(loaded.nodes(data=True)) == dict(generated.nodes(data=True))
    assert _edges(loaded) == _edges(generated)
    assert sum(d["type"] == "RK_CONTROLS" for d in _edges(loaded).values()) == 320
    assert loaded.nodes["ju1.a1.m1.s2c1"]["type"] == [
        "EK_PACKET_SWITCH",
        "EK_CHASSIS",
        "EK_CONTROL_POINT",
    ]
    assert loaded.nodes["ju1.s3.s1c2.p7"]["physical_capacity_bps"] == 1_000_000_000
    assert loaded.nodes["ju1.a2"]["index_within_jupiter"] == 2
    assert loaded.nodes["ju1.a3.m2.s3c4"]["switch_loc"] == {"stage": 3}


def test_the_example_topology_keeps_every_invariant() -> None:
    assert violations(build_topology(GOOGLE_EXAMPLE)) == []


def test_parser_handles_the_text_format_variants() -> None:
    text = """
    # a comment
    entity { id { kind: EK_PORT name: "p\\"1" }
      port_attr: { physical_capacity_bps: 1e9 } }
    entity < id < kind: EK_PACKET_SWITCH, name: 'sw' >
      packet_switch_attr { switch_loc { stage: 2 } } >;
    relationship { kind: RK_CONTAINS a { kind: EK_PACKET_SWITCH name: "sw" }
      z { kind: EK_PORT name: "p\\"1" } }
    tags: [1, 2, -3] flag: true
    """
    model = parse_textproto(text)
    assert model["tags"] == [1, 2, -3] and model["flag"] == [True]
    graph = graph_from_model(model)
    assert graph.nodes['p"1'] == {"name": 'p"1', "type": ["EK_PORT"], "physical_capacity_bps": 1e9}
    assert graph.nodes["sw"]["switch_loc"] == {"stage": 2}
    assert graph.edges["sw", 'p"1'] == {"type": "RK_CONTAINS"}


@pytest.mark.parametrize("bad", ["entity { id { kind: EK_PORT }", "entity }", "x: @"])
def test_parser_rejects_malformed_text(bad: str) -> None:
    with pytest.raises(ConfigError):
        parse_textproto(bad)


def test_loader_reports_missing_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_textproto(tmp_path / "nope.textproto")


def test_topology_scales_by_parameters() -> None:
    p = TopologyParams(
        topology="google-example",
        superblocks=2,
        aggs_per_superblock=3,
        spineblocks=1,
        switches_per_stage=2,
        ports_per_switch=4,
    )
    g = build_topology(p)
    switches = 2 * 3 * 4 + 1 * 4
    kinds = [k for _, d in g.nodes(data=True) for k in d["type"]]
    assert kinds.count("EK_PACKET_SWITCH") == switches
    assert kinds.count("EK_PORT") == switches * 4
    assert kinds.count("EK_AGG_BLOCK") == 6 and kinds.count("EK_RACK") == 7
    assert kinds.count("EK_CONTROL_DOMAIN") == 3
    assert violations(g) == []
    assert not p.is_example() and GOOGLE_EXAMPLE.is_example()
    assert not TopologyParams().is_example()


def test_mixed_capacity_profile_is_seeded() -> None:
    p = TopologyParams(
        topology="google-example",
        superblocks=1,
        spineblocks=1,
        capacity_profile="mixed",
        topology_seed=5,
    )
    caps = [
        d["physical_capacity_bps"]
        for _, d in build_topology(p).nodes(data=True)
        if "EK_PORT" in d["type"]
    ]
    again = [
        d["physical_capacity_bps"]
        for _, d in build_topology(p).nodes(data=True)
        if "EK_PORT" in d["type"]
    ]
    assert caps == again and len(set(caps)) > 1 and set(caps) <= set(PORT_SPEEDS_BPS)


def _profile(graph):
    """Per block: switch count, port count and total capacity; the port speeds seen."""
    blocks = {}
    for block in [
        n for n, d in graph.nodes(data=True) if {"EK_AGG_BLOCK", "EK_SPINEBLOCK"} & set(d["type"])
    ]:
        switches = [v for v in graph.successors(block)]
        ports = [p for s in switches for p in graph.successors(s) if p != s]
        caps = [graph.nodes[p]["physical_capacity_bps"] for p in ports]
        blocks[block] = (len(switches), len(ports), sum(caps))
    speeds = {
        d["physical_capacity_bps"] for _, d in graph.nodes(data=True) if "EK_PORT" in d["type"]
    }
    return blocks, speeds


def test_the_default_datacenter_fabric_is_heterogeneous() -> None:
    graph = build_topology()
    assert violations(graph) == []
    blocks, speeds = _profile(graph)
    assert len(speeds) >= 4 and speeds <= set(SPEED_TIERS_BPS)
    sizes = [switches for switches, _, _ in blocks.values()]
    totals = [total for _, _, total in blocks.values()]
    assert len(set(sizes)) >= 4 and len(set(totals)) >= 0.9 * len(totals)
    # switches of one block differ in capacity, and not in name order
    block = max(blocks, key=lambda b: blocks[b][0])
    by_switch = {
        s: sum(graph.nodes[p]["physical_capacity_bps"] for p in graph.successors(s) if p != s)
        for s in graph.successors(block)
    }
    ranked = sorted(by_switch, key=lambda s: (-by_switch[s], s))
    assert len(set(by_switch.values())) > 1 and ranked != sorted(by_switch)
    # drained switch slots and unpopulated ports: names have gaps
    names = [n for n, d in graph.nodes(data=True) if "EK_PORT" in d["type"]]
    assert any(n.endswith(".p1") for n in names)
    switches = [n for n, d in graph.nodes(data=True) if "EK_PACKET_SWITCH" in d["type"]]
    assert sum(1 for s in switches if f"{s}.p1" not in graph) > 0


def test_datacenter_fabrics_are_seeded() -> None:
    a, b = (
        build_topology(TopologyParams(topology_seed=1)),
        build_topology(TopologyParams(topology_seed=2)),
    )
    again = build_topology(TopologyParams(topology_seed=1))
    assert dict(a.nodes(data=True)) == dict(again.nodes(data=True))
    assert set(a.edges) == set(again.edges)
    assert _profile(a) != _profile(b)
    assert violations(b) == []


def test_datacenter_sizes_are_upper_bounds() -> None:
    p = TopologyParams(
        superblocks=2,
        aggs_per_superblock=3,
        spineblocks=1,
        switches_per_stage=4,
        ports_per_switch=6,
    )
    graph = build_topology(p)
    kinds = [k for _, d in graph.nodes(data=True) for k in d["type"]]
    assert kinds.count("EK_SUPERBLOCK") == 2 and kinds.count("EK_SPINEBLOCK") == 1
    assert 4 <= kinds.count("EK_AGG_BLOCK") <= 6
    assert (
        max(
            len(list(graph.successors(n)))
            for n, d in graph.nodes(data=True)
            if "EK_AGG_BLOCK" in d["type"]
        )
        <= 8
    )
    assert violations(graph) == []


@pytest.mark.parametrize("bad", [{"capacity_profile": "mixed"}, {"port_capacity_bps": 10}])
def test_example_only_parameters_are_rejected_for_a_datacenter(bad: dict) -> None:
    with pytest.raises(ValueError, match="google-example"):
        TopologyParams(**bad)
