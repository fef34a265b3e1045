"""The reference operator works from observation text alone and restores the healthy state."""

from __future__ import annotations

import json
import random

import pytest

from netarena.common.agents import Observation
from netarena.k8s import K8sApp
from netarena.k8s.actions import command_from_reply, parse_kubectl
from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.faults import apply_faults, inject_fault, model_namespaces, model_pods
from netarena.k8s.manifests import render_policies
from netarena.k8s.model import online_boutique
from netarena.k8s.policy_matrix import compute_connectivity
from netarena.k8s.solver import SNAPSHOT_COMMAND, ReferenceK8sAgent, plan_fixes


def _text(model_text: str) -> str:
    return "The app runs in namespace `default`.\n" + model_text


def test_first_move_is_the_snapshot() -> None:
    app = K8sApp()
    q = app.generate(3, 1, "RI")
    reply = ReferenceK8sAgent().decide(q.prompt + "\n\n## Current probe report\n1 of 121 ...")
    assert command_from_reply(reply, "default").text == SNAPSHOT_COMMAND


def test_healthy_snapshot_needs_no_fix() -> None:
    model = online_boutique()
    snapshot = {"items": render_policies(model)}
    assert plan_fixes(_text(model.describe()), snapshot) == []


def _apply_plan(policies: list[dict], plan: list[tuple[str, str | None]]) -> list[dict]:
    """Apply the solver's commands with the store's own patch semantics."""
    store = ObjectStore(seed=0)
    for p in policies:
        store.create(p)
    for cmd, manifest in plan:
        parsed = parse_kubectl(cmd, "default", manifest)
        argv = list(parsed.argv)
        if parsed.verb == "patch":
            store.patch("NetworkPolicy", "default", argv[2], json.loads(argv[6]), "json")
        elif parsed.verb == "delete":
            store.delete("NetworkPolicy", "default", argv[2])
        else:
            for doc in manifest.split("\n---\n"):
                store.create(json.loads(doc))
    return store.list("NetworkPolicy", "default")


@pytest.mark.parametrize("code", ["RI", "AI", "CP", "CPR", "AE"])
def test_plans_restore_every_fault_type_and_never_worsen(code: str) -> None:
    model = online_boutique()
    pods, nss = model_pods(model), model_namespaces(model)
    healthy = render_policies(model)
    for seed in range(15):
        rng = random.Random(seed)
        faults = [inject_fault(code, model, healthy, rng)]
        faults.append(inject_fault("AE", model, apply_faults(healthy, faults), rng))
        broken = apply_faults(healthy, faults)
        plan = plan_fixes(_text(model.describe()), {"items": broken})
        assert plan, faults
        # commands are accepted by the allowlist; ingress fixes come before egress fixes
        kinds = ["/spec/ingress" in cmd for cmd, _ in plan]
        assert kinds == sorted(kinds, reverse=True)
        count = len(compute_connectivity(model, pods, nss, broken).mismatches)
        state = broken
        for step in plan:
            state = _apply_plan(state, [step])
            now = len(compute_connectivity(model, pods, nss, state).mismatches)
            assert now <= count
            count = now
        assert count == 0


def test_recreates_deleted_and_removes_extra_policies() -> None:
    model = online_boutique()
    pols = [p for p in render_policies(model) if p["metadata"]["name"] != "adservice"]
    pols.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                 "metadata": {"name": "oops", "namespace": "default"},
                 "spec": {"podSelector": {}, "ingress": [{}]}})
    plan = plan_fixes(_text(model.describe()), {"items": pols})
    assert [c for c, _ in plan] == ["kubectl delete networkpolicy oops", "kubectl apply -f -"]
    restored = _apply_plan(pols, plan)
    conn = compute_connectivity(model, model_pods(model), model_namespaces(model), restored)
    assert not conn.mismatches


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
