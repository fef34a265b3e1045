"""A MALT datacenter topology generator that reproduces Google's example model by default.

The example model (``malt-example-final.textproto``) is one Jupiter fabric ``ju1`` with
superblocks ``ju1.aX`` of agg blocks ``ju1.aX.mY`` (switches ``s2c*`` and ``s3c*``), spine
blocks ``ju1.sX`` (switches ``s1c*`` and ``s2c*``), 16 ports per switch, one rack per block
and one control domain per superblock and per spine block. Every switch name is at once an
``EK_PACKET_SWITCH``, an ``EK_CHASSIS`` and an ``EK_CONTROL_POINT``; keyed by name those
merge into one node with a self-loop (``RK_CONTROLS`` wins, as it is the last relationship
between the pair in the file). Parameters scale every dimension; a capacity profile drawn
from ``seed`` gives ports different speeds, so capacity queries are not all ties.
"""

from __future__ import annotations

import random
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["TopologyParams", "build_topology", "SWITCH_KINDS", "PORT_SPEEDS_BPS"]

SWITCH_KINDS = ["EK_PACKET_SWITCH", "EK_CHASSIS", "EK_CONTROL_POINT"]
"""The kinds merged into every switch node, in the example file's order."""

PORT_SPEEDS_BPS = (1_000_000_000, 10_000_000_000, 40_000_000_000, 100_000_000_000)
"""Port speeds the ``mixed`` capacity profile draws from (one speed per switch)."""

CONTAINS, CONTROLS = "RK_CONTAINS", "RK_CONTROLS"


class TopologyParams(BaseModel):
    """Size and capacity profile of a generated fabric. Defaults reproduce the example."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    superblocks: int = Field(4, ge=1, le=64)
    """Superblocks ``ju1.a1..aN``."""
    aggs_per_superblock: int = Field(4, ge=1, le=64)
    """Agg blocks per superblock (``ju1.aX.m1..mN``)."""
    spineblocks: int = Field(4, ge=0, le=64)
    """Spine blocks ``ju1.s1..sN``."""
    switches_per_stage: int = Field(8, ge=1, le=64)
    """Switches per stage in each block (agg: ``s2c*`` and ``s3c*``; spine: ``s1c*``, ``s2c*``)."""
    ports_per_switch: int = Field(16, ge=1, le=256)
    """Ports ``<switch>.p1..pN`` on every switch."""
    port_capacity_bps: int = Field(1_000_000_000, gt=0)
    """Speed of every port under the ``uniform`` profile."""
    capacity_profile: Literal["uniform", "mixed"] = "uniform"
    """``uniform``: every port at ``port_capacity_bps``; ``mixed``: a speed per switch drawn
    from ``PORT_SPEEDS_BPS`` with ``capacity_seed``."""
    capacity_seed: int = 0
    """Seed of the ``mixed`` profile."""

    def is_example(self) -> bool:
        """True when these parameters reproduce Google's example model exactly."""
        return self == TopologyParams()


def _switch(graph: nx.DiGraph, name: str, stage: int) -> None:
    graph.add_node(name, name=name, type=list(SWITCH_KINDS), switch_loc={"stage": stage})


def _block(
    graph: nx.DiGraph,
    block: str,
    stages: tuple[int, int],
    params: TopologyParams,
    speed: random.Random | None,
) -> list[str]:
    """Add a block's switches and ports; return the switch names."""
    switches = []
    for stage in stages:
        for c in range(1, params.switches_per_stage + 1):
            name = f"{block}.s{stage}c{c}"
            _switch(graph, name, stage)
            graph.add_edge(block, name, type=CONTAINS)
            switches.append(name)
    for name in switches:
        capacity = speed.choice(PORT_SPEEDS_BPS) if speed else params.port_capacity_bps
        for p in range(1, params.ports_per_switch + 1):
            port = f"{name}.p{p}"
            graph.add_node(port, name=port, type=["EK_PORT"], physical_capacity_bps=capacity)
            graph.add_edge(name, port, type=CONTAINS)
    return switches


def _rack_and_domain(graph: nx.DiGraph, rack: str, domain: str | None, switches: list[str]) -> None:
    graph.add_node(rack, name=rack, type=["EK_RACK"])
    if domain is not None and domain not in graph:
        graph.add_node(domain, name=domain, type=["EK_CONTROL_DOMAIN"])
    for name in switches:
        graph.add_edge(name, name, type=CONTROLS)  # chassis/control point/switch self-loop
        graph.add_edge(rack, name, type=CONTAINS)
        if domain is not None:
            graph.add_edge(domain, name, type=CONTAINS)


def build_topology(params: TopologyParams | None = None) -> nx.DiGraph:
    """Build a fabric in the agents' in-memory shape.

    Args:
        params: Dimensions and capacity profile; ``None`` gives the example model.

    Returns:
        A ``DiGraph`` keyed by name: node attributes ``name``, ``type`` (list of kinds) and
        the flattened ``*_attr`` fields; edges carry ``type`` (``RK_CONTAINS``/``RK_CONTROLS``).
    """
    params = params or TopologyParams()
    speed = random.Random(params.capacity_seed) if params.capacity_profile == "mixed" else None
    g = nx.DiGraph()
    g.add_node("ju1", name="ju1", type=["EK_JUPITER"], jupiter_type="JDT_COLO")
    sbs = [f"ju1.a{i}" for i in range(1, params.superblocks + 1)]
    spines = [f"ju1.s{i}" for i in range(1, params.spineblocks + 1)]
    for i, sb in enumerate(sbs, 1):
        g.add_node(sb, name=sb, type=["EK_SUPERBLOCK"], index_within_jupiter=i)
        g.add_edge("ju1", sb, type=CONTAINS)
    for sp in spines:
        g.add_node(sp, name=sp, type=["EK_SPINEBLOCK"])
        g.add_edge("ju1", sp, type=CONTAINS)
    aggs: dict[str, list[str]] = {}
    for sb in sbs:
        for m in range(1, params.aggs_per_superblock + 1):
            agg = f"{sb}.m{m}"
            g.add_node(agg, name=agg, type=["EK_AGG_BLOCK"])
            g.add_edge(sb, agg, type=CONTAINS)
            aggs[agg] = []
    for agg in aggs:
        aggs[agg] = _block(g, agg, (2, 3), params, speed)
    spine_switches = {sp: _block(g, sp, (1, 2), params, speed) for sp in spines}
    for agg, switches in aggs.items():
        _rack_and_domain(g, f"{agg}rack", agg.rsplit(".", 1)[0] + ".dom", switches)
    for sp, switches in spine_switches.items():
        _rack_and_domain(g, f"{sp}rack", f"{sp}.dom", switches)
    return g
