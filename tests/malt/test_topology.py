"""Generator vs loader on Google's example model, the parser's syntax, and scaling."""

from __future__ import annotations

from pathlib import Path

import pytest

from netarena.common.errors import ConfigError
from netarena.malt.checks import violations
from netarena.malt.loader import graph_from_model, load_textproto, parse_textproto
from netarena.malt.topology import PORT_SPEEDS_BPS, TopologyParams, build_topology
from tests.helpers.data import shared_data

EXAMPLE = shared_data("malt", "malt-example-final.textproto")


def _edges(graph):
    return {(u, v): d for u, v, d in graph.edges(data=True)}


@pytest.mark.skipif(not EXAMPLE.exists(), reason=f"the MALT example model is not at {EXAMPLE}")
def test_generator_reproduces_the_example_file_exactly() -> None:
    loaded, generated = load_textproto(EXAMPLE), build_topology()
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
    assert violations(build_topology()) == []


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
    assert not p.is_example() and TopologyParams().is_example()


def test_mixed_capacity_profile_is_seeded() -> None:
    p = TopologyParams(superblocks=1, spineblocks=1, capacity_profile="mixed", capacity_seed=5)
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
