"""The k8s baselines that repair part of a query do exactly their part, from text alone.

``one-fault-type`` changes only ingress port numbers: it solves a lone ``CP`` fault that
moved an ingress port and on a two-fault query fixes the port and leaves the other fault.
``ingress-only`` never touches egress: it solves ingress faults and leaves every ``AE`` symptom.
"""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.core.agents import Observation
from netarena.common.core.app import find_baseline
from netarena.common.core.types import Query
from netarena.k8s import K8sApp

pytestmark = pytest.mark.slow


def _play(app: K8sApp, name: str, query: Query) -> tuple[bool, int, int]:
    """(solved, mismatches before, mismatches after) of ``name`` on ``query``."""
    agent = find_baseline(app, name).make()
    with app.open(query) as ep:
        initial = len(ep.initial.mismatches)
        for _ in range(8):
            if ep.step(asyncio.run(agent.act(Observation(ep.observe(), query.id)))).done:
                break
        return ep.score().correct, initial, len(ep.state.mismatches)


def _ingress_port_queries(app: K8sApp, level: int, label: str, n: int) -> list[Query]:
    """Queries of ``label`` whose CP fault moved an ingress port to another number."""
    out = []
    for seed in range(200):
        q = app.generate(seed, level, label)
        cp = next(f for f in q.truth["faults"] if f["code"] == "CP")
        if cp["method"] == "other_port" and ": ingress rule" in cp["description"]:
            out.append(q)
        if len(out) == n:
            return out
    raise AssertionError(f"no {label} query with an ingress port change")


def test_one_fault_type_fixes_the_port_and_only_the_port() -> None:
    app = K8sApp()
    assert all(_play(app, "one-fault-type", q)[0] for q in _ingress_port_queries(app, 1, "CP", 3))
    for label in ("CPR", "RI", "AE"):
        solved, before, after = _play(app, "one-fault-type", app.generate(5, 1, label))
        assert not solved and after == before, label
    partial = []
    for level, label in ((2, "RI+CP"), (3, "CP+CPR"), (3, "CP+AE")):
        for q in _ingress_port_queries(app, level, label, 2):
            solved, before, after = _play(app, "one-fault-type", q)
            assert not solved and after <= before, (q.seed, label)
            partial.append(after < before)
    assert sum(partial) >= len(partial) * 3 // 4, partial


def test_ingress_only_leaves_egress_faults() -> None:
    app = K8sApp()
    ingress = [q for q in (app.generate(seed, 2, "RI+AI") for seed in range(12))
               if not any("egress" in f["description"].lower() for f in q.truth["faults"])]
    assert len(ingress) >= 3
    for q in ingress[:3]:  # an AI fault may open an egress (a default deny's type dropped)
        assert _play(app, "ingress-only", q)[0], q.id
    for seed in range(3):
        solved, before, after = _play(app, "ingress-only", app.generate(seed, 1, "AE"))
        assert not solved and after == before
