"""MALT fabrics: Google's example model exactly, or a seeded heterogeneous datacenter.

The example model (``malt-example-final.textproto``) is one Jupiter fabric ``ju1`` with
superblocks ``ju1.aX`` of agg blocks ``ju1.aX.mY`` (switches ``s2c*`` and ``s3c*``), spine
blocks ``ju1.sX`` (switches ``s1c*`` and ``s2c*``), 16 ports per switch, one rack per block
and one control domain per superblock and per spine block. Every switch name is at once an
``EK_PACKET_SWITCH``, an ``EK_CHASSIS`` and an ``EK_CONTROL_POINT``; keyed by name those
merge into one node with a self-loop (``RK_CONTROLS`` wins, as it is the last relationship
between the pair in the file). Parameters scale every dimension.

In the example every port runs at 1 Gb/s and every block has the same size, so a ranking
by capacity is a ranking by name and a count is a constant. The default ``datacenter``
family keeps the example's names, kinds and hierarchy but draws, from ``topology_seed``,
what a fabric built over years looks like: superblocks of four hardware generations
(10/40/100/200 Gb/s ports with faster uplinks), agg blocks refreshed to the next generation,
blocks of different sizes, drained switch slots, unpopulated and down-rated ports.
"""

from __future__ import annotations

import random
from typing import Literal

import networkx as nx
from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "GOOGLE_EXAMPLE",
    "PORT_SPEEDS_BPS",
    "GENERATIONS_BPS",
    "SPEED_TIERS_BPS",
    "SWITCH_KINDS",
    "TopologyParams",
    "build_topology",
]

SWITCH_KINDS = ["EK_PACKET_SWITCH", "EK_CHASSIS", "EK_CONTROL_POINT"]
"""The kinds merged into every switch node, in the example file's order."""

PORT_SPEEDS_BPS = (1_000_000_000, 10_000_000_000, 40_000_000_000, 100_000_000_000)
"""Port speeds the ``mixed`` capacity profile draws from (one speed per switch)."""

CONTAINS, CONTROLS = "RK_CONTAINS", "RK_CONTROLS"


class TopologyParams(BaseModel):
    """Which fabric to build and how big. Defaults give the ``datacenter`` fabric of seed 0.

    ``google-example`` is Google's example model, reproduced exactly with its default sizes
    (the sizes then scale its uniform grid). ``datacenter`` is a heterogeneous fabric drawn
    from ``topology_seed``: superblocks of different hardware generations and sizes, agg
    blocks partly refreshed to the next generation, drained switches, unpopulated ports,
    faster uplinks and down-rated ports, so counts, capacities and rankings differ from
    block to block and from port name order; its sizes are upper bounds.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    topology: Literal["datacenter", "google-example"] = "datacenter"
    """The fabric family: a seeded heterogeneous ``datacenter`` or Google's ``google-example``."""
    topology_seed: int = 0
    """Seed of the ``datacenter`` fabric (and of the example's ``mixed`` capacity profile)."""
    superblocks: int | None = Field(None, ge=1, le=64)
    """Superblocks ``ju1.a1..aN`` (default 4 in the example, 12 in a datacenter)."""
    aggs_per_superblock: int | None = Field(None, ge=1, le=64)
    """Agg blocks per superblock ``ju1.aX.m1..mN`` (datacenter: the most, drawn from 2..N;
    default 4 in the example, 6 in a datacenter)."""
    spineblocks: int | None = Field(None, ge=0, le=64)
    """Spine blocks ``ju1.s1..sN`` (default 4)."""
    switches_per_stage: int | None = Field(None, ge=1, le=64)
    """Switches per stage in each block (agg: ``s2c*`` and ``s3c*``; spine: ``s1c*``,
    ``s2c*``); datacenter: the most, drawn per block (default 8)."""
    ports_per_switch: int | None = Field(None, ge=1, le=256)
    """Ports ``<switch>.p1..pN`` (datacenter: the most, drawn per block; default 16)."""
    port_capacity_bps: int | None = Field(None, gt=0)
    """``google-example`` only: speed of every port under the ``uniform`` profile (1 Gb/s)."""
    capacity_profile: Literal["uniform", "mixed"] | None = None
    """``google-example`` only: ``uniform`` (default) or ``mixed`` (a speed per switch drawn
    from ``PORT_SPEEDS_BPS`` with ``topology_seed``)."""

    @model_validator(mode="after")
    def _example_only(self) -> TopologyParams:
        if self.topology == "datacenter" and (
            self.port_capacity_bps is not None or self.capacity_profile is not None
        ):
            raise ValueError(
                "port_capacity_bps and capacity_profile apply to topology=google-example only "
                "(a datacenter fabric draws its speeds from topology_seed)"
            )
        return self

    def sizes(self) -> tuple[int, int, int, int, int]:
        """The sizes with this family's defaults filled in.

        Returns:
            ``(superblocks, aggs_per_superblock, spineblocks, switches_per_stage,
            ports_per_switch)``.
        """
        defaults = _EXAMPLE_SIZES if self.topology == "google-example" else _DATACENTER_SIZES
        given = (
            self.superblocks,
            self.aggs_per_superblock,
            self.spineblocks,
            self.switches_per_stage,
            self.ports_per_switch,
        )
        a, b, c, d, e = (d if g is None else g for g, d in zip(given, defaults, strict=True))
        return a, b, c, d, e

    def is_example(self) -> bool:
        """True when these parameters reproduce Google's example model exactly."""
        return (
            self.topology == "google-example"
            and self.sizes() == _EXAMPLE_SIZES
            and self.capacity_profile in (None, "uniform")
            and self.port_capacity_bps in (None, _EXAMPLE_BPS)
        )


_EXAMPLE_SIZES = (4, 4, 4, 8, 16)
_DATACENTER_SIZES = (12, 6, 4, 8, 16)
_EXAMPLE_BPS = 1_000_000_000

GOOGLE_EXAMPLE = TopologyParams(topology="google-example")
"""Google's example model (5,493 nodes, 6,424 edges), exactly."""


def _switch(graph: nx.DiGraph, name: str, stage: int) -> None:
    graph.add_node(name, name=name, type=list(SWITCH_KINDS), switch_loc={"stage": stage})


def _ports(graph: nx.DiGraph, switch: str, speeds: dict[int, int]) -> None:
    """Add ``<switch>.p<i>`` for each ``i -> speed`` of ``speeds``."""
    for p, capacity in speeds.items():
        port = f"{switch}.p{p}"
        graph.add_node(port, name=port, type=["EK_PORT"], physical_capacity_bps=capacity)
        graph.add_edge(switch, port, type=CONTAINS)


def _switches(graph: nx.DiGraph, block: str, stages: dict[int, list[int]]) -> list[str]:
    """Add a block's switches ``<block>.s<stage>c<i>``; return their names."""
    switches = []
    for stage, indices in stages.items():
        for c in indices:
            name = f"{block}.s{stage}c{c}"
            _switch(graph, name, stage)
            graph.add_edge(block, name, type=CONTAINS)
            switches.append(name)
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


def _skeleton(graph: nx.DiGraph, superblocks: int, aggs: list[int], spines: int) -> list[str]:
    """The fabric, its superblocks, spine blocks and agg blocks; return the agg blocks."""
    graph.add_node("ju1", name="ju1", type=["EK_JUPITER"], jupiter_type="JDT_COLO")
    for i in range(1, superblocks + 1):
        graph.add_node(
            f"ju1.a{i}", name=f"ju1.a{i}", type=["EK_SUPERBLOCK"], index_within_jupiter=i
        )
        graph.add_edge("ju1", f"ju1.a{i}", type=CONTAINS)
    for i in range(1, spines + 1):
        graph.add_node(f"ju1.s{i}", name=f"ju1.s{i}", type=["EK_SPINEBLOCK"])
        graph.add_edge("ju1", f"ju1.s{i}", type=CONTAINS)
    blocks = []
    for i, count in enumerate(aggs, 1):
        for m in range(1, count + 1):
            agg = f"ju1.a{i}.m{m}"
            graph.add_node(agg, name=agg, type=["EK_AGG_BLOCK"])
            graph.add_edge(f"ju1.a{i}", agg, type=CONTAINS)
            blocks.append(agg)
    return blocks


def _example(params: TopologyParams) -> nx.DiGraph:
    """Google's example layout: a uniform grid, scaled by the sizes."""
    superblocks, aggs, spines, per_stage, ports = params.sizes()
    mixed = params.capacity_profile == "mixed"
    speed = random.Random(params.topology_seed) if mixed else None
    uniform = params.port_capacity_bps or _EXAMPLE_BPS
    g = nx.DiGraph()
    agg_blocks = _skeleton(g, superblocks, [aggs] * superblocks, spines)
    indices = list(range(1, per_stage + 1))
    members: dict[str, list[str]] = {}
    for block in agg_blocks + [f"ju1.s{i}" for i in range(1, spines + 1)]:
        stages = (2, 3) if block in agg_blocks else (1, 2)
        members[block] = _switches(g, block, {stage: indices for stage in stages})
        for name in members[block]:
            capacity = speed.choice(PORT_SPEEDS_BPS) if speed else uniform
            _ports(g, name, dict.fromkeys(range(1, ports + 1), capacity))
    for block, switches in members.items():
        domain = block.rsplit(".", 1)[0] + ".dom" if block in agg_blocks else f"{block}.dom"
        _rack_and_domain(g, f"{block}rack", domain, switches)
    return g


GENERATIONS_BPS = (
    (10_000_000_000, 40_000_000_000),
    (40_000_000_000, 100_000_000_000),
    (100_000_000_000, 200_000_000_000),
    (200_000_000_000, 400_000_000_000),
)
"""``(port speed, uplink speed)`` of each hardware generation of a ``datacenter`` block."""

SPEED_TIERS_BPS = (
    1_000_000_000,
    10_000_000_000,
    25_000_000_000,
    40_000_000_000,
    100_000_000_000,
    200_000_000_000,
    400_000_000_000,
)
"""Every port speed a ``datacenter`` fabric (or an update to it) uses, slowest first."""

_G = 1_000_000_000
_DOWNRATE = {
    10 * _G: _G,
    40 * _G: 10 * _G,
    100 * _G: 40 * _G,
    200 * _G: 100 * _G,
    400 * _G: 200 * _G,
}
"""The speed a down-rated port runs at (an optic or cable of the previous generation)."""
_REFRESH, _DRAINED, _UNPOPULATED, _DOWNRATED = 0.3, 0.1, 0.06, 0.1
"""Chances: an agg block is one generation newer than its superblock; a switch slot is
drained (absent); a port slot is unpopulated (absent); a port runs one tier slower."""


def _size(rng: random.Random, most: int, least: int = 2) -> int:
    """A size between about half of ``most`` and ``most`` (at least ``least``), uniformly."""
    return rng.randint(min(most, max(least, most // 2)), most)


def _present(rng: random.Random, count: int, absent: float, keep: int) -> list[int]:
    """Indices ``1..count`` with each missing at chance ``absent``, at least ``keep`` left."""
    indices = [i for i in range(1, count + 1) if rng.random() >= absent]
    return indices if len(indices) >= min(keep, count) else list(range(1, count + 1))


def _port_speeds(rng: random.Random, ports: int, generation: int) -> dict[int, int]:
    """One switch's ports: the top quarter are uplinks; some are unpopulated or down-rated."""
    speed, uplink = GENERATIONS_BPS[generation]
    speeds = {}
    for p in _present(rng, ports, _UNPOPULATED, 1):
        capacity = uplink if p > ports - max(1, ports // 4) else speed
        if rng.random() < _DOWNRATED:
            capacity = _DOWNRATE[capacity]
        speeds[p] = capacity
    return speeds


def _datacenter_block(
    g: nx.DiGraph,
    rng: random.Random,
    block: str,
    stages: tuple[int, int],
    generation: int,
    sizes: tuple[int, int],
) -> list[str]:
    """Add one block of a ``datacenter`` fabric: its own size, switches and port speeds.

    The block's switch model fixes the switches per stage and the ports of each stage's
    switches; drained slots and unpopulated ports then vary switch by switch.
    """
    per_stage, ports = sizes
    count = _size(rng, per_stage)
    models = {stage: _size(rng, ports) for stage in stages}
    members = _switches(g, block, {stage: _present(rng, count, _DRAINED, 2) for stage in stages})
    for name in members:
        stage = g.nodes[name]["switch_loc"]["stage"]
        _ports(g, name, _port_speeds(rng, models[stage], generation))
    return members


def _datacenter(params: TopologyParams) -> nx.DiGraph:
    """A heterogeneous fabric drawn from ``params.topology_seed`` (sizes are upper bounds)."""
    rng = random.Random(params.topology_seed)
    superblocks, most_aggs, spines, per_stage, ports = params.sizes()
    newest = len(GENERATIONS_BPS) - 1
    generations = [rng.randrange(len(GENERATIONS_BPS)) for _ in range(superblocks)]
    aggs = [rng.randint(min(2, most_aggs), most_aggs) for _ in range(superblocks)]
    g = nx.DiGraph()
    members: dict[str, list[str]] = {}
    for agg in _skeleton(g, superblocks, aggs, spines):
        superblock_generation = generations[int(agg.split(".")[1][1:]) - 1]
        generation = min(newest, superblock_generation + (rng.random() < _REFRESH))
        members[agg] = _datacenter_block(g, rng, agg, (2, 3), generation, (per_stage, ports))
        _rack_and_domain(g, f"{agg}rack", agg.rsplit(".", 1)[0] + ".dom", members[agg])
    for i in range(1, spines + 1):
        spine = f"ju1.s{i}"
        generation = rng.choice([newest - 1, newest])
        members[spine] = _datacenter_block(g, rng, spine, (1, 2), generation, (per_stage, ports))
        _rack_and_domain(g, f"{spine}rack", f"{spine}.dom", members[spine])
    return g


def build_topology(params: TopologyParams | None = None) -> nx.DiGraph:
    """Build a fabric in the agents' in-memory shape.

    Args:
        params: Family, seed and sizes; ``None`` gives the default ``datacenter`` fabric.

    Returns:
        A ``DiGraph`` keyed by name: node attributes ``name``, ``type`` (list of kinds) and
        the flattened ``*_attr`` fields; edges carry ``type`` (``RK_CONTAINS``/``RK_CONTROLS``).
    """
    params = params or TopologyParams()
    if params.topology == "google-example":
        return _example(params)
    return _datacenter(params)
