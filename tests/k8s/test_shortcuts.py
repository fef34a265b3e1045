"""Shortcuts that must not score: re-deploying from the prompt, deleting or opening all.

Each is a calibration baseline (``netarena.k8s.baselines``) that never diagnoses; the
suite over every baseline (``tests/test_baselines.py``) shows on the default plan that
none solves a query and every one is unsafe. Here: the shortcut really ran (the cluster
holds what it sent), and the judge, reading that state, still says incorrect and unsafe.
The rebuilt policies lose what other teams put there (the monitoring rule, the restricted
egress, so the internet opens); deleting every policy loses the default deny.
"""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.core.agents import Observation
from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.k8s import K8sApp
from netarena.k8s.baselines import ALLOW_ALL

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", ["rewrite-from-spec", "delete-all", "allow-all"])
def test_the_shortcut_runs_and_is_judged_incorrect_and_unsafe(name: str) -> None:
    app = K8sApp()
    agent = find_baseline(app, name).make()
    for query in plan_queries(app, QueryPlan(num_queries=6, seed=21)):
        with app.open(query) as ep:
            before = {p["metadata"]["name"] for p in ep.store.list("NetworkPolicy")}
            step = ep.step(asyncio.run(agent.act(Observation(ep.observe(), query.id))))
            assert step.valid and step.info["exit_code"] == 0, step.observation
            after = {p["metadata"]["name"] for p in ep.store.list("NetworkPolicy")}
            expected = {"delete-all": set(), "allow-all": before | {ALLOW_ALL["metadata"]["name"]},
                        "rewrite-from-spec": before}[name]
            assert after == expected
            assert not ep.step(asyncio.run(agent.act(Observation(ep.observe(), query.id)))).valid
            score = ep.score()
            assert not score.correct and not score.safe, (query.id, score)
