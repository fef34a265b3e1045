"""app-malt: datacenter capacity planning on Google's MALT topology model.

The agent answers each query with Python code defining ``process_graph(graph_data)``; the code
runs in a confined, pre-forked sandbox that already holds the topology. Correctness compares
the returned value and the resulting topology with ground truth computed by our own state
transitions; safety checks the topology invariants. Registered as the ``malt`` app.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import networkx as nx

from netarena.common.core.agents import Baseline
from netarena.common.core.app import App, AppConfig
from netarena.common.core.evidence import AuditCheck, AuditObject
from netarena.common.core.types import Query
from netarena.common.sandbox import SandboxLimits, SandboxPool, SandboxSpec, shared_pool
from netarena.common.sandbox.host import log_start_up_checks
from netarena.malt import worker
from netarena.malt.audit import audit_checks
from netarena.malt.baselines import BASELINES
from netarena.malt.checks import INVARIANTS, answer_mismatch, state_mismatch, violations
from netarena.malt.config import MaltConfig
from netarena.malt.episode import MaltEpisode, extract_code
from netarena.malt.generator import LABEL_SETS, LABELS, draw
from netarena.malt.loader import load_textproto, parse_textproto
from netarena.malt.prompts import render_prompt
from netarena.malt.sampler import index
from netarena.malt.solver import MaltReferenceAgent
from netarena.malt.topology import GOOGLE_EXAMPLE, TopologyParams, build_topology

__all__ = [
    "GOOGLE_EXAMPLE",
    "INVARIANTS",
    "LABELS",
    "LABEL_SETS",
    "MaltApp",
    "MaltConfig",
    "MaltEpisode",
    "MaltReferenceAgent",
    "TopologyParams",
    "answer_mismatch",
    "base_topology",
    "build_topology",
    "extract_code",
    "load_textproto",
    "parse_textproto",
    "state_mismatch",
    "violations",
]


@functools.lru_cache(maxsize=8)
def base_topology(params: TopologyParams) -> nx.DiGraph:
    """The shared, read-only base topology for ``params`` (built once per process)."""
    return build_topology(params)


@functools.lru_cache(maxsize=8)
def _facts(params: TopologyParams) -> dict[str, Any]:
    """What every prompt on this topology states: its size, kind and two example names."""
    base = base_topology(params)
    fabric = index(base)
    return {
        "nodes": base.number_of_nodes(),
        "edges": base.number_of_edges(),
        "varied": params.topology == "datacenter",
        "block": fabric.blocks[0],
        "port": fabric.ports[-1],
    }


@functools.lru_cache(maxsize=8)
def _spec(params: TopologyParams) -> SandboxSpec:
    source = Path(worker.__file__).read_text(encoding="utf-8")
    return SandboxSpec(
        setup_source=source,
        payload=worker.graph_payload(base_topology(params)),
        preload=("networkx",),
    )


def _answer_limit_bytes(spec: SandboxSpec) -> int:
    """The largest answer (result and topology diff, as JSON) the evaluator reads, bytes.

    A diff lists at most every node and edge of the topology with its attributes, which is
    what the setup payload holds; the returned value is at most as large again. Twice the
    payload plus 1 MiB leaves room for every honest answer and bounds what is parsed.
    """
    return 2 * len(spec.payload) + (1 << 20)


class MaltApp(App):
    """The ``malt`` app: constructive, one turn, answers are sandboxed ``process_graph`` code."""

    name = "malt"
    kind = "constructive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = LABELS
    label_sets: ClassVar[dict[str, tuple[str, ...]]] = LABEL_SETS
    config_model = MaltConfig
    default_max_turns = 1
    config: MaltConfig

    def __init__(self, config: AppConfig | dict[str, Any] | None = None) -> None:
        """Validate ``config``; the first instance in a process logs what the sandbox lacks."""
        super().__init__(config)
        log_start_up_checks()

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        """Generate one query; pure in ``(seed, level, label, config)``."""
        rng = random.Random(seed)
        label = self.pick_label(rng, level, label)
        topology = self.config.topology_params()
        base = base_topology(topology)
        truth, qualifiers = draw(base, rng, level, label)
        stats = {**_facts(topology), "timeout": self.config.timeout_s}
        prompt = render_prompt(truth["ops"], self.config.prompt_style, stats)
        return self.make_query(seed, level, label, prompt, truth, qualifiers=qualifiers)

    _pool: SandboxPool | None = None

    def sandbox(self) -> SandboxPool:
        """The warm sandbox pool for this app's topology and limits.

        Held by the app instance, so it lives as long as the evaluation using it (and its open
        episodes) and is shared with other instances of the same configuration meanwhile; once
        nobody holds it, ``shared_pool`` keeps only a few warm and the rest are closed.
        """
        if self._pool is None or self._pool.closed:
            spec = _spec(self.config.topology_params())
            limits = SandboxLimits(
                wall_s=self.config.timeout_s,
                cpu_s=max(1, round(self.config.timeout_s)),
                max_output_bytes=_answer_limit_bytes(spec),
            )
            self._pool = shared_pool(spec, limits, self.config.sandbox_workers)
        return self._pool

    def open(self, query: Query) -> MaltEpisode:
        """Open the episode; its answer runs against this app's topology."""
        return MaltEpisode(
            query, base_topology(self.config.topology_params()), self.sandbox(), self.config
        )

    def audit_objects(self, query: Query) -> Sequence[AuditObject]:
        """None: a MALT query has no fault for a classifier to tell from the design.

        The audit's classifiers learn whether an injected fault looks different from the
        healthy objects around it; a MALT task injects nothing (its topology is the shared
        base), and its stated qualifiers and bounds have no fault/design label to learn:
        every one is, by construction, a detail the answer depends on. What can go wrong
        with them is that one does not matter, which the metamorphic checks
        (``audit_checks``) test directly; labelling details "fault" by whether a misreading
        of them is caught would only relabel those checks.
        """
        return []

    def audit_checks(self, queries: Sequence[Query]) -> Sequence[AuditCheck]:
        """Every qualifier ignored and every bound misread, judged on the queries it changes.

        One ``AuditCheck`` per misreading (``qualifier:depth``, ``bound:exactly->at least``,
        ...; ``netarena.malt.audit``): of the queries whose task the misreading changes,
        the share where its answer and resulting topology are judged wrong (at least 0.9).
        """
        return audit_checks(base_topology(self.config.topology_params()), queries)

    def baselines(self) -> tuple[Baseline, ...]:
        """MALT's calibration ladder (``netarena.malt.baselines``)."""
        return BASELINES

    def reference_agent(self) -> MaltReferenceAgent:
        """The text-only reference solver."""
        return MaltReferenceAgent()
