"""The reference operator works from observation text alone and restores the healthy state."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from netarena.common.core.agents import Observation
from netarena.k8s import K8sApp
from netarena.k8s.faults import apply_faults, model_namespaces, model_pods
from netarena.k8s.generator import K8sConfig, build_model
from netarena.k8s.judge import judge, newly_wrong
from netarena.k8s.manifests import render_policies
from netarena.k8s.repair import repairs
from netarena.k8s.reply_commands import command_from_reply
from netarena.k8s.solver import SNAPSHOT_COMMAND, ReferenceK8sAgent, plan_fixes


def _observation(app: K8sApp, seed: int, state_report: str) -> str:
    prompt = app.generate(seed, 1, "RI").prompt
    return f"{prompt}\n\n## Current probe report (turn 1)\n{state_report}\n\n## History"


def test_first_move_is_the_snapshot() -> None:
    app = K8sApp()
    q = app.generate(3, 1, "RI")
    reply = ReferenceK8sAgent().decide(q.prompt + "\n\n## Current probe report\n1 of 121 ...")
    assert reply == f"```\n{SNAPSHOT_COMMAND}\n```"


def test_healthy_snapshot_needs_no_fix() -> None:
    app = K8sApp()
    model = build_model(app.config, 3)
    pods, nss = model_pods(model), model_namespaces(model)
    healthy = judge(model, pods, nss, render_policies(model))
    text = _observation(app, 3, healthy.report())
    assert plan_fixes(text, render_policies(model), pods, nss) == []


def test_repairs_touch_only_the_faulted_entries() -> None:
    """The plan edits the faulted policy's entry and keeps every rule the fault left alone."""
    app = K8sApp()
    for seed in range(4):
        q = app.generate(seed, 1, "CP")
        model = build_model(app.config, seed)
        pods, nss = model_pods(model), model_namespaces(model)
        faulted = apply_faults(render_policies(model), q.truth["faults"])
        text = _observation(app, seed, judge(model, pods, nss, faulted).report())
        plan = plan_fixes(text, faulted, pods, nss)
        assert plan and all(cmd.startswith("kubectl patch networkpolicy "
                                           f"{q.truth['faults'][0]['policy']} ")
                            for cmd, _ in plan), plan


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
            assert score.collateral == [], score.collateral
        finally:
            ep.close()


def test_a_failed_patch_is_read_again_and_retried_once() -> None:
    """A write that failed (a timeout under load) may or may not have landed: re-read."""
    app = K8sApp()
    agent = ReferenceK8sAgent()
    with app.open(app.generate(3, 1, "CP")) as ep:
        for _ in range(2):
            ep.step(agent.decide(ep.observe()))
        text = ep.observe()
    patch = agent.decide(text).strip("`\n")
    assert patch.startswith("kubectl patch networkpolicy ")
    cue = text.rindex("\nReply with")
    failed = f"\n[turn 3] $ {patch}\nUnable to connect to the server: net/http: TLS handshake "\
             "timeout\n[exit 1]\n"
    once = text[:cue] + failed + text[cue:]
    assert agent.decide(once) == f"```\n{SNAPSHOT_COMMAND}\n```"
    snapshot = text[text.index("[turn 1] $ "):text.index("[turn 2] $ ")].replace(
        "[turn 1]", "[turn 4]")
    again = once[:once.rindex("\nReply with")] + "\n" + snapshot + once[once.rindex(
        "\nReply with"):]
    assert agent.decide(again).strip("`\n") == patch  # the same patch, sent again
    twice = again[:again.rindex("\nReply with")] + failed.replace("[turn 3]", "[turn 5]") \
        + "\n" + snapshot.replace("[turn 4]", "[turn 6]") + again[again.rindex("\nReply with"):]
    assert agent.decide(twice).strip("`\n") != patch  # two failures: given up


@pytest.mark.slow
async def test_repairs_agent_made_damage_through_kubectl() -> None:
    """Damage the solver could not know from Query.truth: it must read it from kubectl."""
    app = K8sApp()
    ep = app.open(app.generate(8, 1, "CPR"))
    try:
        extra = json.dumps([{"op": "add", "path": "/spec/ingress/0/from/-",
                             "value": {"podSelector": {"matchLabels": {"app": "frontend"}}}}])
        assert ep.step(f"```\nkubectl patch networkpolicy paymentservice --type json "
                       f"-p '{extra}'\n```").valid
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
    from netarena.common.core.plan import QueryPlan, plan_queries
    from netarena.common.core.runner import RunConfig, Runner

    app = K8sApp({"num_services": 40})
    queries = plan_queries(app, QueryPlan(num_queries=5, seed=12))
    results = await Runner(app, app.reference_agent(), RunConfig(concurrency=3)).run(queries)
    assert all(r.correct and r.safe for r in results), results
    q = queries[0]
    ep = app.open(q)
    try:
        first = ReferenceK8sAgent().decide(ep.observe())
        assert command_from_reply(first, "default").argv[:3] == ("get", "networkpolicy", "-o")
    finally:
        ep.close()


_RANGE_CASE = json.loads((Path(__file__).parent / "data" / "range_case.json").read_text())
"""A CP+CPR instance (seed 20260's plan before issue 19's report change): cartservice's
range 44032–44053 turned UDP. A port-only planner moved the range's start onto a port the
step's universe did not probe, and broke two probes that matched."""


def test_a_planned_edit_breaks_no_probe_it_moves() -> None:
    model = build_model(K8sConfig(), _RANGE_CASE["seed"])
    pods, nss = model_pods(model), model_namespaces(model)
    policies = apply_faults(render_policies(model), _RANGE_CASE["faults"])
    state = judge(model, pods, nss, policies)
    steps = 0
    for _ in range(10):
        report = [(r.source, r.dest, r.port, r.protocol, r.expected) for r in state.mismatches]
        edits = repairs(model.namespace, policies, pods, nss, report, frozenset({"port"}),
                        max_steps=1, directions=frozenset({"ingress"}))
        if not edits:
            break
        policies = [{**p, "spec": edits[0].spec} if p["metadata"]["name"] == edits[0].policy
                    else p for p in policies]
        after = judge(model, pods, nss, policies)
        assert not newly_wrong(model, pods, nss, state, after), edits[0]
        state, steps = after, steps + 1
    assert steps >= 1, "the port edit of currencyservice is still made"


def test_an_ingress_edit_judged_where_its_policy_selects_scores_as_a_full_judgement() -> None:
    """``Search.score(trial, ingress_of=policy)`` re-judges only the endpoints the edited
    policy selects; every candidate edit must score as when the whole universe is judged."""
    from netarena.k8s.policy_matrix import parse_report
    from netarena.k8s.repair import EDIT_KINDS, _candidates, _implicated
    from netarena.k8s.repair_search import Search

    app = K8sApp()
    compared = 0
    for seed in range(6):
        q = app.generate(seed, 2, "RI+AI")
        model = build_model(app.config, seed)
        pods, nss = model_pods(model), model_namespaces(model)
        faulted = apply_faults(render_policies(model), q.truth["faults"])
        report = parse_report(judge(model, pods, nss, faulted).report())
        search = Search(model.namespace, faulted, pods, nss, report)
        for pol, direction in _implicated(search, faulted):
            if direction != "ingress":
                continue
            for _, spec in _candidates(search, pol, direction, frozenset(EDIT_KINDS)):
                trial = [({**p, "spec": spec} if p is pol else p) for p in faulted]
                assert search.score(trial, pol) == search.score(trial)
                compared += 1
    assert compared > 50


@pytest.mark.parametrize("rewrite", ["default_deny", "default_deny_added", "open_port",
                                     "unlock"])
def test_a_default_deny_that_lost_or_gained_a_type_and_an_opened_rule_are_repaired(
        rewrite: str) -> None:
    """Faults the planner once could not plan (and the generator silently redrew).

    The deny-all policy losing its Ingress type (AI) admits everyone to pods with no
    ingress policy of their own; gaining a type (RI, AE) cuts those pods off on that side;
    the public entry point's port rule opened admits every port; a locked egress opened
    reaches addresses outside and ports beside its callee's and DNS's (the report names
    those pairs without ports). The plan puts the type back or takes it off, narrows the
    open ingress rule to the ports that must answer, or the open egress to the runbook's
    calls and DNS, in the faulted policy alone.
    """
    import random

    from netarena.k8s.fault_rewrites import default_deny, open_rule, unlock
    from netarena.k8s.policy_matrix import parse_report, parse_unintended
    from netarena.k8s.repair_search import lock_calls

    app, planned = K8sApp(), 0
    for seed in range(12):
        model = build_model(app.config, seed)
        pods, nss = model_pods(model), model_namespaces(model)
        healthy = render_policies(model)
        rng = random.Random(seed)
        cand = (default_deny(healthy, rng, None) if rewrite == "default_deny"
                else default_deny(healthy, rng, "Ingress") or default_deny(healthy, rng, "Egress")
                if rewrite == "default_deny_added"
                else unlock(model, healthy, rng) if rewrite == "unlock"
                else open_rule(model, healthy, rng, narrow=False))
        if cand is None:
            continue
        name, method, description, spec = cand
        faulted = apply_faults(healthy, [{"code": "AI", "type": "add_ingress", "policy": name,
                                          "method": method, "description": description,
                                          "spec": spec}])
        state, touched = judge(model, pods, nss, faulted), set()
        calls = lock_calls(model, [n for n, lock in model.detail.locks.items()
                                   if lock == "callees"] if model.detail else [])
        if not state.mismatches:
            continue  # the dropped type isolated nothing that is not isolated again
        for _ in range(4):  # as the reference: one edit planned from each new report
            if not state.mismatches:
                break
            report = state.report()
            edits = repairs(model.namespace, faulted, pods, nss, parse_report(report),
                            max_steps=1, unintended=parse_unintended(report),
                            calls=calls)
            assert edits, (seed, report[:400])
            touched.add(edits[0].policy)
            faulted = [{**p, "spec": edits[0].spec} if p["metadata"]["name"] == edits[0].policy
                       else p for p in faulted]
            state = judge(model, pods, nss, faulted)
        assert touched == {name} and not state.mismatches, (seed, touched)
        planned += 1
    assert planned >= 3


def test_an_unintended_pair_keeps_the_calls_a_lock_to_callees_makes() -> None:
    """An opened egress lock connects its pods to their callee on ports beside the called
    one, and to DNS beyond port 53; the report names those pairs without ports. Refused on
    every port, the callee's own call would be cut: the planner keeps what the notes' lock
    lets through (the runbook's calls and DNS, read back from the observation's text)."""
    import random

    from netarena.k8s.fault_rewrites import unlock
    from netarena.k8s.policy_matrix import parse_report, parse_unintended
    from netarena.k8s.solver import Intent

    app = K8sApp()
    for seed in range(20):
        query = app.generate(seed, 1, "RI")
        model = build_model(app.config, seed)
        healthy = render_policies(model)
        cand = unlock(model, healthy, random.Random(seed))
        if cand is not None:
            break
    assert cand is not None
    pods, nss = model_pods(model), model_namespaces(model)
    name, method, description, spec = cand
    faulted = apply_faults(healthy, [{"code": "AI", "type": "add_ingress", "policy": name,
                                      "method": method, "description": description,
                                      "spec": spec}])
    state = judge(model, pods, nss, faulted)
    report = state.report()
    assert (name, "frontend") in parse_unintended(report)
    calls = Intent(query.prompt).calls
    assert (name, "frontend", 8080, "TCP") in calls
    assert (name, "kube-system/kube-dns", 53, "UDP") in calls

    def broken(kept: frozenset[tuple[str, str, int, str]]) -> list[str]:
        edit = repairs(model.namespace, faulted, pods, nss, parse_report(report), max_steps=1,
                       unintended=parse_unintended(report), calls=kept)[0]
        after = [{**p, "spec": edit.spec} if p["metadata"]["name"] == edit.policy else p
                 for p in faulted]
        return [r.line() for r in newly_wrong(model, pods, nss, state,
                                              judge(model, pods, nss, after))]

    assert broken(calls) == []
    assert any(line.startswith(f"{name} → frontend:8080") for line in broken(frozenset()))
