"""The default user-facing ClusterRoles, rule by rule as Kubernetes' bootstrap policy has them.

``view``, ``edit`` and ``admin`` are aggregated upstream from ``system:aggregate-to-*``;
here they are written out whole, one rule per API group, so ``kubectl get clusterrole edit
-o yaml`` and ``kubectl auth can-i --list`` read as on a cluster (``deployments.apps``, not
``deployments`` in every group), and the on-call account may change what ``edit`` allows
in its namespace and nothing more (the Namespace object itself stays read-only).
"""

from __future__ import annotations

from typing import Any

__all__ = ["cluster_roles", "READ"]

READ = ["get", "list", "watch"]
"""The read verbs."""
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_Rule = tuple[str, list[str], list[str]]

_VIEW: list[_Rule] = [
    ("", ["configmaps", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status",
          "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
          "services", "services/status"], READ),
    ("", ["bindings", "events", "limitranges", "namespaces/status", "pods/log", "pods/status",
          "replicationcontrollers/status", "resourcequotas", "resourcequotas/status"], READ),
    ("", ["namespaces"], READ),
    ("discovery.k8s.io", ["endpointslices"], READ),
    ("apps", ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
              "deployments/scale", "deployments/status", "replicasets", "replicasets/scale",
              "replicasets/status", "statefulsets", "statefulsets/scale",
              "statefulsets/status"], READ),
    ("autoscaling", ["horizontalpodautoscalers", "horizontalpodautoscalers/status"], READ),
    ("batch", ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    ("policy", ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    ("networking.k8s.io", ["ingresses", "ingresses/status", "networkpolicies"], READ),
]
_EDIT: list[_Rule] = [
    ("", ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
          "services/proxy"], READ),
    ("", ["serviceaccounts"], ["impersonate"]),
    ("", ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], _WRITE),
    ("", ["pods/eviction"], ["create"]),
    ("", ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
          "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
          "services/proxy"], _WRITE),
    ("", ["serviceaccounts/token"], ["create"]),
    ("apps", ["daemonsets", "deployments", "deployments/rollback", "deployments/scale",
              "replicasets", "replicasets/scale", "statefulsets", "statefulsets/scale"], _WRITE),
    ("autoscaling", ["horizontalpodautoscalers"], _WRITE),
    ("batch", ["cronjobs", "jobs"], _WRITE),
    ("policy", ["poddisruptionbudgets"], _WRITE),
    ("networking.k8s.io", ["ingresses", "networkpolicies"], _WRITE),
    ("coordination.k8s.io", ["leases"], [*_WRITE[:3], "get", "list", *_WRITE[3:], "watch"]),
]
_ADMIN: list[_Rule] = [
    ("authorization.k8s.io", ["localsubjectaccessreviews"], ["create"]),
    ("rbac.authorization.k8s.io", ["rolebindings", "roles"], [*_WRITE[:3], "get", "list",
                                                              *_WRITE[3:], "watch"]),
]
_CLUSTER_READER: list[_Rule] = [
    ("", ["nodes", "namespaces"], READ),
    ("storage.k8s.io", ["*"], READ),
    ("scheduling.k8s.io", ["*"], READ),
    ("rbac.authorization.k8s.io", ["*"], READ),
    ("coordination.k8s.io", ["*"], READ),
]


def _rules(rules: list[_Rule]) -> list[dict[str, Any]]:
    return [{"apiGroups": [group], "resources": list(resources), "verbs": list(verbs)}
            for group, resources, verbs in rules]


def _role(name: str, rules: list[dict[str, Any]], aggregated: bool = True) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {
        "kubernetes.io/bootstrapping": "rbac-defaults"}}
    if aggregated:
        meta["annotations"] = {"rbac.authorization.kubernetes.io/autoupdate": "true"}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": meta, "rules": rules}


def cluster_roles() -> list[dict[str, Any]]:
    """The default user-facing ClusterRoles and the admin binding a cluster starts with."""
    view, edit = _rules(_VIEW), _rules(_EDIT)
    return [
        _role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _role("admin", _rules(_ADMIN) + edit + view),
        _role("edit", edit + view),
        _role("view", view),
        _role("cluster-reader", _rules(_CLUSTER_READER), aggregated=False),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "cluster-admin", "labels": {
             "kubernetes.io/bootstrapping": "rbac-defaults"},
             "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "cluster-admin"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                       "name": "system:masters"}]},
    ]
