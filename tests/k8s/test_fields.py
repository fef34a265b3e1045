"""Field ownership (managedFields) and server-side apply, as the API server keeps them."""

from __future__ import annotations

from typing import Any

import pytest

from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.apiserver.kinds import Conflict


def policy(name: str, port: int = 80, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
            "spec": {"podSelector": {"matchLabels": {"app": name}},
                     "ingress": [{"ports": [{"port": port, "protocol": "TCP"}]}]}}


def owners(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["manager"]: e for e in obj["metadata"]["managedFields"]}


def test_create_and_patch_record_owners() -> None:
    store = ObjectStore(seed=1)
    created = store.create(policy("web", labels={"team": "a"}), manager="deployer")
    entry = owners(created)["deployer"]
    assert entry["operation"] == "Update" and entry["apiVersion"] == "networking.k8s.io/v1"
    assert entry["fieldsV1"]["f:spec"] == {"f:ingress": {}, "f:podSelector": {},
                                           "f:policyTypes": {}}
    assert entry["fieldsV1"]["f:metadata"] == {"f:labels": {".": {}, "f:team": {}}}
    patched = store.patch("NetworkPolicy", "default", "web",
                          {"spec": {"ingress": [{"ports": [{"port": 81}]}]}}, "merge",
                          manager="kubectl-patch")
    by = owners(patched)
    assert by["kubectl-patch"]["fieldsV1"] == {"f:spec": {"f:ingress": {}}}
    assert "f:ingress" not in by["deployer"]["fieldsV1"]["f:spec"], "ownership moves"
    same = store.patch("NetworkPolicy", "default", "web", {"spec": {}}, "merge",
                       manager="noop")
    assert "noop" not in owners(same) and same["metadata"]["resourceVersion"] == patched[
        "metadata"]["resourceVersion"], "a write that changes nothing is not recorded"


def test_server_side_apply_conflicts_force_and_prunes() -> None:
    store = ObjectStore(seed=1)
    store.create(policy("web"), manager="deployer")
    with pytest.raises(Conflict, match='conflict with "deployer": .spec.ingress'):
        store.apply(policy("web", port=81), "sre")
    same, created = store.apply(policy("web", labels={"owner": "sre"}), "sre")
    assert not created and same["metadata"]["labels"] == {"owner": "sre"}
    forced, _ = store.apply(policy("web", port=81, labels={"owner": "sre"}), "sre",
                            force=True)
    assert forced["spec"]["ingress"][0]["ports"][0]["port"] == 81
    assert "f:ingress" not in owners(forced)["deployer"]["fieldsV1"]["f:spec"]
    assert owners(forced)["sre"]["operation"] == "Apply"
    pruned, _ = store.apply(policy("web", port=81), "sre")
    assert "labels" not in pruned["metadata"], "a field the applier dropped is removed"


def test_apply_creates_missing_objects() -> None:
    store = ObjectStore(seed=1)
    obj, created = store.apply(policy("new"), "kubectl")
    assert created and owners(obj)["kubectl"]["operation"] == "Apply"
    assert store.get("NetworkPolicy", "default", "new")["metadata"]["managedFields"][0][
        "operation"] == "Apply"
