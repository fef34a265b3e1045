"""The application model and its rendered manifests, checked against upstream Online Boutique."""

from __future__ import annotations

import random

import pytest
import yaml

from netarena.common.core.errors import ConfigError
from netarena.k8s.manifests import render_all, render_policies
from netarena.k8s.model import online_boutique, parse_intended, synthetic_app
from netarena.k8s.model_objects import model_namespaces, model_pods
from netarena.k8s.policy_matrix import compute_connectivity
from tests.helpers.data import shared_data

UPSTREAM = shared_data("online-boutique")
needs_upstream = pytest.mark.skipif(
    not UPSTREAM.exists(), reason=f"upstream Online Boutique copy not at {UPSTREAM}"
)


@needs_upstream
def test_rendered_policies_equal_upstream_files() -> None:
    upstream = {}
    for path in sorted((UPSTREAM / "network-policies").glob("network-policy-*.yaml")):
        doc = yaml.safe_load(path.read_text())
        upstream[doc["metadata"]["name"]] = doc
    rendered = render_policies(online_boutique())
    assert len(rendered) == len(upstream) == 13
    for pol in rendered:
        name = pol["metadata"]["name"]
        assert pol["metadata"]["namespace"] == "default"
        comparable = {**pol, "metadata": {"name": name}}
        assert comparable == upstream[name], name


@needs_upstream
def test_services_and_container_ports_match_upstream_manifests() -> None:
    docs = [
        d for d in yaml.safe_load_all((UPSTREAM / "kubernetes-manifests.yaml").read_text()) if d
    ]
    upstream_svcs = {
        d["metadata"]["name"]: d["spec"]["ports"][0]
        for d in docs
        if d["kind"] == "Service" and d["spec"].get("type") == "ClusterIP"
    }
    upstream_deps = {d["metadata"]["name"] for d in docs if d["kind"] == "Deployment"}
    model = online_boutique()
    assert set(model.names) == upstream_deps
    for svc in model.servers:
        up = upstream_svcs[svc.name]
        assert (svc.port, svc.container_port, svc.port_name) == (
            up["port"],
            up["targetPort"],
            up["name"],
        )


def test_render_all_kinds_and_labels() -> None:
    objs = render_all(online_boutique("shop"))
    kinds = [o["kind"] for o in objs]
    assert kinds.count("Deployment") == 12 and kinds.count("Service") == 12  # + external
    assert kinds.count("ServiceAccount") == 11
    assert kinds.count("NetworkPolicy") == 13 and kinds[0] == "Namespace"
    for o in objs:
        if o["kind"] == "Deployment":
            name = o["metadata"]["name"]
            assert o["spec"]["template"]["metadata"]["labels"] == {"app": name}
            assert o["metadata"]["namespace"] == "shop"


def test_healthy_matrix_has_no_mismatch_and_expected_edges() -> None:
    model = online_boutique()
    conn = compute_connectivity(
        model, model_pods(model), model_namespaces(model), render_policies(model)
    )
    assert not conn.mismatches and len(conn.results) == 121
    allowed = conn.actual_set()
    assert ("checkoutservice", "emailservice") in allowed
    assert ("frontend", "emailservice") not in allowed
    assert ("loadgenerator", "frontend") in allowed and ("cartservice", "redis-cart") in allowed
    assert len(allowed) == 11 + 15  # anyone → frontend, plus 15 explicit edges


def test_synthetic_graph_is_seeded_and_healthy() -> None:
    a = synthetic_app(25, random.Random("x"))
    b = synthetic_app(25, random.Random("x"))
    c = synthetic_app(25, random.Random("y"))
    assert a.describe() == b.describe() != c.describe()
    assert len(a.services) == 25
    conn = compute_connectivity(a, model_pods(a), model_namespaces(a), render_policies(a))
    assert not conn.mismatches
    with pytest.raises(ConfigError):
        synthetic_app(2, random.Random(0))


def test_intended_connectivity_round_trips_through_text() -> None:
    for model in (online_boutique(), synthetic_app(10, random.Random(3))):
        text = "preamble\n" + model.describe() + "\ntrailer"
        again = parse_intended(text, model.namespace)
        assert render_policies(again) == render_policies(model)
    with pytest.raises(ConfigError):
        parse_intended("nothing here")
