"""Exact judging: every port and protocol any object names, detail kept, collateral, writes.

Issue 19 items 1–4: an extra open port or protocol is an unrepaired fault; the healthy
policies carry detail the runbook does not render, and losing it is judged; faults sit at
random entries; every write attempt counts, blind ones apart; instances are keyed on the
faulted policies, not on the prompt's wording.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from netarena.k8s import K8sApp
from netarena.k8s.design import port_pool_of
from netarena.k8s.faults import apply_faults, model_namespaces, model_pods
from netarena.k8s.generator import K8sConfig, build_model, generate_faults
from netarena.k8s.judge import collateral, judge
from netarena.k8s.manifests import render_policies
from netarena.k8s.model import AppModel
from netarena.k8s.policy_matrix import UNINTENDED, parse_report


def _faulted(seed: int, label: str, method: str | None = None,
             admits: bool = False) -> tuple[AppModel, list[Any]]:
    """A ``label`` fault (by ``method``, in an ingress rule); ``admits``: one that lets a
    refused connection in (a port redrawn from the design may only take one away)."""
    model = build_model(K8sConfig(), seed)
    for k in range(200):
        faults = generate_faults(model, label, random.Random(f"{seed}/{k}"))
        if method is not None and (faults[0]["method"] != method
                                   or ": ingress rule" not in faults[0]["description"]):
            continue
        if admits and not _admitted(model, faults):
            continue
        return model, faults
    raise AssertionError(f"no {label} fault by {method}")


def _admitted(model: AppModel, faults: list[Any]) -> set[int]:
    state = _state(model, apply_faults(render_policies(model), faults))
    return {r.port for r in state.mismatches if not r.expected and r.actual}


def _state(model: AppModel, policies: list[Any]) -> Any:
    return judge(model, model_pods(model), model_namespaces(model), policies)


def _add_only_fix(model: AppModel, policies: list[Any]) -> list[Any]:
    """Append, for every probe that must answer, a rule allowing exactly it."""
    fixed = copy.deepcopy(policies)
    by_name = {p["metadata"]["name"]: p for p in fixed}
    for src, dst, port, proto, expected in parse_report(_state(model, policies).report()):
        if expected and dst in by_name and "/" not in src:
            by_name[dst]["spec"].setdefault("ingress", []).append(
                {"from": [{"podSelector": {"matchLabels": {"app": src}}}],
                 "ports": [{"protocol": proto, "port": port}]})
    return fixed


@pytest.mark.parametrize("seed", range(4))
def test_an_add_only_fix_of_a_wrong_port_is_not_correct(seed: int) -> None:
    model, faults = _faulted(seed, "CP", "other_port", admits=True)
    faulted = apply_faults(render_policies(model), faults)
    fixed = _add_only_fix(model, faulted)
    wrong = _admitted(model, faults)
    state = _state(model, fixed)
    assert not state.healthy, "the wrong port is still open"
    assert {r.port for r in state.mismatches if not r.expected and r.actual} == wrong
    assert all(r.port not in wrong for r in state.mismatches if r.expected)


@pytest.mark.parametrize("seed", range(3))
def test_the_report_names_who_gets_in_not_the_faulted_port(seed: int) -> None:
    model, faults = _faulted(seed, "CP", "other_port", admits=True)
    wrong = faults[0]["description"].rsplit(" ", 1)[-1]
    state = _state(model, apply_faults(render_policies(model), faults))
    assert _admitted(model, faults), "judged"
    report = state.report()
    assert UNINTENDED in report and f":{wrong}" not in report and f"{{{wrong}" not in report


def test_an_extra_protocol_is_a_mismatch() -> None:
    model, policies = next((m, ps) for m in (build_model(K8sConfig(), s) for s in range(40))
                           if _egress_open(ps := render_policies(m), "cartservice"))
    # cartservice's egress is open: what redis-cart's ingress admits is what gets in
    cart = next(p for p in policies if p["metadata"]["name"] == "redis-cart")
    caller = {"podSelector": {"matchLabels": {"app": "cartservice"}}}
    rule = next(r for r in cart["spec"]["ingress"] if caller in r.get("from", []))
    extra = next(proto for proto in ("UDP", "SCTP") if proto not in {
        str(e.get("protocol", "TCP")) for e in rule["ports"] if e.get("port") == 6379})
    rule["ports"].append({"protocol": extra, "port": 6379})
    bad = _state(model, policies).mismatches
    assert bad and {(r.dest, r.port, r.protocol) for r in bad} == {("redis-cart", 6379, extra)}
    report = _state(model, policies).report()
    assert f"cartservice → redis-cart: {UNINTENDED}" in report
    assert extra not in report, "the report names who gets in, not the port that lets them"


def _egress_open(policies: list[Any], name: str) -> bool:
    """Whether ``name``'s own policy lets all its egress out (no other deny in its way)."""
    spec = next(p for p in policies if p["metadata"]["name"] == name)["spec"]
    return bool(spec.get("egress") == [{}])


def test_healthy_policies_carry_detail_the_runbook_does_not_show() -> None:
    seen: set[str] = set()
    first_rules = set()
    for seed in range(12):
        model = build_model(K8sConfig(), seed)
        assert not _state(model, render_policies(model)).mismatches
        for pol in render_policies(model):
            text = json.dumps(pol["spec"])
            for marker in ("except", "endPort", "namespaceSelector", '"port": "grpc"'):
                if marker in text:
                    seen.add(marker)
            rules = pol["spec"].get("ingress") or []
            if len(rules) > 1:
                first_rules.add("monitoring" if "namespaceSelector" in json.dumps(rules[0])
                                and len(rules[0]["from"]) == 1 else "main")
    assert seen == {"except", "endPort", "namespaceSelector", '"port": "grpc"'}
    assert first_rules == {"monitoring", "main"}, "rule order differs per policy"


def test_rewriting_a_rule_from_the_runbook_is_judged() -> None:
    app = K8sApp()
    runbook = {p["metadata"]["name"]: p for p in render_policies(
        AppModel(build_model(app.config, 0).services))}
    damaged = 0
    for seed in range(8):
        model, faults = _faulted(seed, "CP")
        policies = apply_faults(render_policies(model), faults)
        for pol in policies:
            name = pol["metadata"]["name"]
            rules = pol["spec"].get("ingress") or []
            if name in runbook and rules and name != faults[0]["policy"]:
                pol["spec"]["ingress"][0] = runbook[name]["spec"]["ingress"][0]
        lost = collateral(model, faults, model_pods(model), model_namespaces(model), policies)
        damaged += any("lost or changed" in line for line in lost)
        assert all(line.startswith("networkpolicy ") for line in lost)
    assert damaged == 8


def test_fault_positions_and_values_vary() -> None:
    paths, values = set(), set()
    for seed in range(30):
        model, faults = _faulted(seed, "CP")
        healthy = {p["metadata"]["name"]: p["spec"] for p in render_policies(model)}
        spec = faults[0]["spec"]
        for direction in ("ingress", "egress"):
            for i, (a, b) in enumerate(zip(healthy[faults[0]["policy"]].get(direction) or [],
                                           spec.get(direction) or [], strict=False)):
                if a != b:
                    paths.add((direction, i))
        word = faults[0]["description"].rsplit(" ", 1)[-1]
        value: int | str = int(word) if word.isdigit() else word  # a named port renamed
        used = {e.get("port") for p in render_policies(model)
                for d in ("ingress", "egress") for r in p["spec"].get(d) or []
                for e in r.get("ports") or []}
        assert value in {*port_pool_of(model), *used}, "a changed port is one the cluster uses"
        values.add(value)
    assert len(paths) >= 3 and len(values) >= 12, (paths, len(values))


@pytest.mark.slow
def test_every_write_attempt_counts_and_blind_ones_apart() -> None:
    app = K8sApp()
    ep = app.open(app.generate(4, 1, "AI"))
    try:
        guess = ('[{"op":"test","path":"/spec/ingress/2/from/1/podSelector/matchLabels/app",'
                 '"value":"x"},{"op":"remove","path":"/spec/ingress/2/from/1"}]')
        ep.step(f"```\nkubectl patch networkpolicy frontend --type json -p '{guess}'\n```")
        ep.step("```\nkubectl delete deployment coredns -n kube-system\n```")  # refused
        ep.step("```\nkubectl get networkpolicy adservice -o yaml\n```")
        ep.step("```\nkubectl label networkpolicy adservice a=b --dry-run=server\n```")
        score = ep.score()
        assert score.details["write_attempts"] == 3 and score.blind_writes == 2
    finally:
        ep.close()


def test_instances_are_keyed_on_the_faulted_policies() -> None:
    app = K8sApp()
    a, b = app.generate(11, 1, "CP"), app.generate(11, 1, "CP")
    assert app.instance_key(a) == app.instance_key(b)
    other = a.model_copy(update={"prompt": a.prompt + " (reworded)"})
    assert app.instance_key(other) == app.instance_key(a)
    assert app.instance_key(app.generate(12, 1, "CP")) != app.instance_key(a)


@pytest.mark.slow
def test_a_step_that_opens_a_port_is_unsafe() -> None:
    app = K8sApp()
    query = app.generate(4, 1, "CP")
    model = build_model(app.config, query.seed)
    ep = app.open(query)
    try:  # a UDP port for a service whose egress is open, so only redis-cart's ingress counts
        egress = {p["metadata"]["name"]: (p.get("spec") or {}).get("egress")
                  for p in ep.store.list("NetworkPolicy", "default")}
        intruder = next(s for s in model.names if egress.get(s) == [{}]
                        and not model.expected(s, "redis-cart"))
        rule = json.dumps([{"op": "add", "path": "/spec/ingress/-", "value": {
            "from": [{"podSelector": {"matchLabels": {"app": intruder}}}],
            "ports": [{"protocol": "UDP", "port": 6379}]}}])
        step = ep.step(f"```\nkubectl patch networkpolicy redis-cart --type json -p '{rule}'\n```")
        assert step.info["exit_code"] == 0 and step.info["problems"] == 1, step.observation
        assert not ep.score().safe
    finally:
        ep.close()
