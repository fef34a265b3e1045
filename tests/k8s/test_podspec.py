"""The rendered workloads carry what the upstream Online Boutique manifests give them."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from netarena.k8s.manifests import render_all
from netarena.k8s.model import online_boutique, synthetic_app
from tests.helpers.data import shared_data

UPSTREAM = shared_data("online-boutique", "kubernetes-manifests.yaml")
needs_upstream = pytest.mark.skipif(not UPSTREAM.exists(),
                                    reason=f"upstream Online Boutique copy not at {UPSTREAM}")
_NOT_MODELLED = {"SHOPPING_ASSISTANT_SERVICE_ADDR", "ENABLE_PROFILER"}
"""Upstream frontend variables for a service and a switch the model does not have."""


def _by(objs: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs if o["kind"] == kind}


@needs_upstream
def test_workloads_match_upstream() -> None:
    upstream = [d for d in yaml.safe_load_all(UPSTREAM.read_text()) if d]
    ours = render_all(online_boutique())
    theirs_deploy, ours_deploy = _by(upstream, "Deployment"), _by(ours, "Deployment")
    assert set(theirs_deploy) == set(ours_deploy)
    for name, theirs in theirs_deploy.items():
        t_pod, o_pod = theirs["spec"]["template"]["spec"], ours_deploy[name]["spec"][
            "template"]["spec"]
        t_c, o_c = t_pod["containers"][0], o_pod["containers"][0]
        assert o_pod.get("serviceAccountName") == t_pod.get("serviceAccountName"), name
        assert o_c["name"] == t_c["name"], name
        assert o_pod["securityContext"] == t_pod["securityContext"], name
        assert o_c["resources"] == t_c["resources"], name
        assert o_c["securityContext"] == t_c["securityContext"], name
        t_env = {e["name"]: e.get("value") for e in t_c.get("env") or []
                 if e["name"] not in _NOT_MODELLED}
        assert {e["name"]: e["value"] for e in o_c.get("env") or []} == t_env, name
        probe_kinds = {k for k in t_c.get("readinessProbe") or {} if k in (
            "grpc", "httpGet", "tcpSocket")}
        assert probe_kinds == {k for k in o_c.get("readinessProbe") or {} if k in (
            "grpc", "httpGet", "tcpSocket")}, name
    assert set(_by(upstream, "ServiceAccount")) == set(_by(ours, "ServiceAccount"))
    external = _by(ours, "Service")["frontend-external"]
    theirs_external = _by(upstream, "Service")["frontend-external"]
    assert external["spec"] == theirs_external["spec"]


def test_synthetic_apps_get_the_same_shape() -> None:
    model = synthetic_app(6, random.Random(3))
    objs = render_all(model)
    deploy = _by(objs, "Deployment")
    gateway = deploy["gateway"]["spec"]["template"]["spec"]
    assert gateway["serviceAccountName"] == "gateway"
    callees = {s.name for s in model.servers if "gateway" in s.sources}
    env = {e["name"] for e in gateway["containers"][0]["env"]}
    assert {f"{c.split('-')[0].upper()}_ADDR" for c in callees} <= env
    assert "gateway-external" in _by(objs, "Service")
