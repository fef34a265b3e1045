"""The reference operator works from observation text alone and restores the healthy state."""

from __future__ import annotations

import json

import pytest

from netarena.common.agents import Observation
from netarena.k8s import K8sApp
from netarena.k8s.actions import command_from_reply
from netarena.k8s.faults import model_namespaces, model_pods
from netarena.k8s.generator import build_model
from netarena.k8s.judge import judge
from netarena.k8s.manifests import render_policies
from netarena.k8s.solver import SNAPSHOT_COMMAND, ReferenceK8sAgent, plan_fixes


def _observation(app: K8sApp, seed: int, state_report: str) -> str:
    prompt = app.generate(seed, 1, "RI").prompt
    return f"{prompt}\n\n## Current probe report (turn 1)\n{state_report}\n\n## History"


def test_first_move_is_the_snapshot() -> None:
    app = K8sApp()
    q = app.generate(3, 1, "RI")
    reply = ReferenceK8sAgent().decide(q.prompt + "\n\n## Current probe report\n1 of 121 ...")
    assert command_from_reply(reply, "default").text == SNAPSHOT_COMMAND


def test_healthy_snapshot_needs_no_fix() -> None:
    app = K8sApp()
    model = build_model(app.config, 3)
    healthy = judge(model, model_pods(model), model_namespaces(model), render_policies(model))
    text = _observation(app, 3, healthy.report())
    assert plan_fixes(text, {"items": render_policies(model)}) == []


def test_recreates_deleted_and_removes_extra_policies_last() -> None:
    app = K8sApp()
    model = build_model(app.config, 3)
    pols = [p for p in render_policies(model) if p["metadata"]["name"] != "adservice"]
    pols.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                 "metadata": {"name": "oops", "namespace": "default"},
                 "spec": {"podSelector": {}, "ingress": [{}]}})
    state = judge(model, model_pods(model), model_namespaces(model), pols)
    assert any("networkpolicy adservice: label team=" in line for line in state.ownership)
    plan = plan_fixes(_observation(app, 3, state.report()), {"items": pols})
    assert [c for c, _ in plan] == ["kubectl apply -f -", "kubectl delete networkpolicy oops"]
    recreated = json.loads(plan[0][1] or "{}")
    assert recreated["metadata"]["labels"] == model.detail.labels["adservice"]


@pytest.mark.slow
@pytest.mark.parametrize("code", ["RI", "AI", "CP", "CPR", "AE"])
def test_every_fault_type_is_repaired_safely_from_text(code: str) -> None:
    app = K8sApp()
    agent = ReferenceK8sAgent()
    for seed in range(8):
        ep = app.open(app.generate(seed, 1, code))
        try:
            for _ in range(6):
                if ep.step(agent.decide(ep.observe())).done:
                    break
            score = ep.score()
            assert score.correct and score.safe, (seed, ep.query.truth["faults"])
        finally:
            ep.close()


@pytest.mark.slow
async def test_repairs_agent_made_damage_through_kubectl() -> None:
    """Damage the solver could not know from Query.truth: it must read it from kubectl."""
    app = K8sApp()
    ep = app.open(app.generate(8, 1, "CPR"))
    try:
        ep.step("```\nkubectl delete networkpolicy cartservice\n```")
        extra = ("```\nkubectl apply -f -\n```\n```yaml\napiVersion: networking.k8s.io/v1\n"
                 "kind: NetworkPolicy\nmetadata:\n  name: open-email\nspec:\n  podSelector:\n"
                 "    matchLabels:\n      app: emailservice\n  ingress:\n  - {}\n```")
        assert ep.step(extra).valid
        agent = ReferenceK8sAgent()
        for turn in range(8):
            result = ep.step(await agent.act(Observation(ep.observe(), "ctx", turn)))
            if result.done:
                break
        assert ep.score().correct
    finally:
        ep.close()


@pytest.mark.slow
async def test_large_graph_reads_only_implicated_policies() -> None:
    from netarena.common.runner import QueryPlan, RunConfig, Runner, plan_queries

    app = K8sApp({"num_services": 40})
    queries = plan_queries(app, QueryPlan(num_queries=5, seed=12))
    results = await Runner(app, app.reference_agent(), RunConfig(concurrency=3)).run(queries)
    assert all(r.correct and r.safe for r in results), results
    q = queries[0]
    ep = app.open(q)
    try:
        first = ReferenceK8sAgent().decide(ep.observe())
        line = command_from_reply(first, "default").text
        assert line.startswith("kubectl get networkpolicy deny-all ") and line.endswith(" -o json")
    finally:
        ep.close()
