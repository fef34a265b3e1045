"""Query generation: determinism, labels, and verified fault injection."""

from __future__ import annotations

import random

import pytest

from netarena.common.core.errors import UnfitSeed
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.k8s import K8sApp
from netarena.k8s.faults import (
    FAULT_TYPES,
    apply_faults,
    inject_fault,
    model_namespaces,
    model_pods,
)
from netarena.k8s.generator import LABELS, build_model
from netarena.k8s.judge import judge
from netarena.k8s.manifests import render_policies

ALL_LABELS = [(lv, lb) for lv, labels in LABELS.items() for lb in labels]


def test_levels_and_labels_are_the_briefs() -> None:
    assert LABELS[1] == ("RI", "AI", "CP", "CPR", "AE")
    assert LABELS[2] == ("RI+AI", "RI+CP", "RI+CPR", "AI+CP", "AI+CPR")
    assert LABELS[3] == ("CP+CPR", "CP+AE", "CPR+AE", "RI+AE", "AI+AE")


def test_same_seed_same_query_and_different_seeds_differ() -> None:
    app = K8sApp()
    a, b = app.generate(11, 2, "RI+CP"), app.generate(11, 2, "RI+CP")
    assert a == b and a.model_dump_json() == b.model_dump_json()
    others = {app.generate(s, 2, "RI+CP").model_dump_json() for s in range(12, 20)}
    assert len(others) > 1
    assert K8sApp().generate(5, 1).label == K8sApp().generate(5, 1).label


@pytest.mark.parametrize(("level", "label"), ALL_LABELS)
def test_each_label_injects_its_fault_types_and_breaks_connectivity(level: int, label: str) -> None:
    app = K8sApp()
    for seed in range(6):
        q = app.generate(seed, level, label)
        model = build_model(app.config, seed)
        pods, nss = model_pods(model), model_namespaces(model)
        faults = q.truth["faults"]
        assert [f["code"] for f in faults] == label.split("+")
        assert all(f["type"] == FAULT_TYPES[f["code"]] for f in faults)
        state = render_policies(model)
        assert judge(model, pods, nss, state).healthy
        for fault in faults:  # every single injection changed what the judge sees
            before = set(judge(model, pods, nss, state).mismatches)
            state = apply_faults(state, [fault])
            assert set(judge(model, pods, nss, state).mismatches) != before
        assert judge(model, pods, nss, state).mismatches
        assert "faults" not in q.prompt and faults[0]["description"] not in q.prompt


def test_fault_methods_vary_with_the_seed() -> None:
    model = build_model(K8sApp().config, 5)
    pols = render_policies(model)
    for code in FAULT_TYPES:
        methods = {inject_fault(code, model, pols, random.Random(s))["method"] for s in range(40)}
        assert len(methods) >= 2, code


def test_synthetic_application_queries() -> None:
    app = K8sApp({"num_services": 20})
    q = app.generate(3, 3, "AI+AE")
    assert q == app.generate(3, 3, "AI+AE")
    assert q.params == {"num_services": 20} and q.id.startswith("k8s-L3-AI+AE-3-")
    assert "svc-1:" in q.prompt and "gateway" in q.prompt


def test_a_design_that_cannot_carry_a_label_is_unfit_and_the_plan_draws_another() -> None:
    """Three services at this seed leave no entry whose protocol change breaks anything.

    It used to raise a bare EmulatorError that stopped the whole plan (2 of 3 plans of 150
    queries at ``num_services=3``); ``UnfitSeed`` makes the plan draw that query afresh.
    """
    app = K8sApp({"num_services": 3})
    with pytest.raises(UnfitSeed, match="no CPR fault"):
        app.generate(1033, 2, "AI+CPR")
    queries = plan_queries(app, QueryPlan(num_queries=30, seed=101, labels=("AI+CPR",),
                                          levels=(2,)))
    assert len(queries) == 30 and {q.label for q in queries} == {"AI+CPR"}


def test_prompt_styles() -> None:
    plain = K8sApp().generate(1, 1, "CP").prompt
    few = K8sApp({"prompt_style": "fewshot_cot"}).generate(1, 1, "CP").prompt
    assert "Example" not in plain and "step by step" not in plain
    assert "Example" in few and "step by step" in few
    assert (
        "triple backticks" in plain and "frontend: service port 80 -> container port 8080" in plain
    )
    assert "$'" in few  # the few-shot shows a multi-line $'...' patch, as the original did
