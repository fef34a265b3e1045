"""Handing the application over: its deploy into the embedded cluster and the on-call account.

The control plane (``netarena.k8s.apiserver``) holds a generic kind cluster (``bootstrap``);
what this app puts into it is decided here: the application's objects as its team deployed
them (``deploy``), and the account the agent works as (``OPERATOR_ACCOUNT``: ``edit`` in the
application's namespace, read access elsewhere) with the kubeconfig that carries its token.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from typing import Any

from netarena.k8s.apiserver import ClusterProfile, ObjectStore
from netarena.k8s.apiserver.cluster import idle_revisions
from netarena.k8s.apiserver.events import deploy_events
from netarena.k8s.apiserver.tls import serving_certificate
from netarena.k8s.kubectl import KubeconfigIdentity

__all__ = ["OPERATOR_ACCOUNT", "deploy", "operator_kubeconfig", "operator_objects"]

OPERATOR_ACCOUNT = "oncall"
"""The service account the agent's kubeconfig authenticates as, in the app's namespace."""


def deploy(store: ObjectStore, profile: ClusterProfile, objects: list[dict[str, Any]],
           manager: str = "kubectl-client-side-apply", server_side: bool = False) -> None:
    """Create an application's ``objects`` as deployed at ``profile.deployed_at``.

    ``manager`` wrote them (``server_side``: by server-side apply, as Argo CD, Flux or
    ``kubectl apply --server-side`` do). Pods created in the last hour get the events a
    cluster keeps for an hour (scheduled, image pulled, container started); the revision
    then moves on to ``profile.now``. The on-call operator's account
    (``operator_objects``) is set up in each namespace whose NetworkPolicies the
    operator manages, as the team would have before handing it over.
    """
    namespaces = sorted({o["metadata"].get("namespace", "default") for o in objects
                         if o.get("kind") == "NetworkPolicy"})
    with store.at(profile.deployed_at, manager=manager):
        for obj in objects:
            if server_side:
                store.apply(obj, manager)
            else:
                store.create(obj)
        for ns in namespaces:
            for obj in operator_objects(ns):
                store.create(obj)
    if profile.now - profile.deployed_at < 3_600:
        for at, event in deploy_events(store, profile, objects):
            with store.at(at):
                store.create(event)
    store.advance_revision(idle_revisions(profile.now - profile.deployed_at))


def operator_kubeconfig(cluster_name: str, namespace: str) -> KubeconfigIdentity:
    """The kubeconfig entries of the on-call account: kind's cluster name, its token, the CA.

    The token is shaped like a service-account token (a signed JWT) whose signature is
    random: each episode's server accepts only its own (``ApiServer(token=...)``), so a
    kubectl pointed at another episode's port is ``Unauthorized``. ``kubectl config view``
    shows it as ``REDACTED``.
    """
    def part(data: dict[str, Any]) -> str:
        raw = json.dumps(data, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    subject = f"system:serviceaccount:{namespace}:{OPERATOR_ACCOUNT}"
    kid = base64.urlsafe_b64encode(hashlib.sha256(cluster_name.encode()).digest()).decode()
    signature = base64.urlsafe_b64encode(os.urandom(256)).decode().rstrip("=")
    token = ".".join([part({"alg": "RS256", "kid": kid.rstrip("=")}),
                      part({"aud": ["https://kubernetes.default.svc.cluster.local"],
                            "iss": "https://kubernetes.default.svc.cluster.local",
                            "sub": subject}), signature])
    return KubeconfigIdentity(cluster=f"kind-{cluster_name}", user=OPERATOR_ACCOUNT,
                              token=token, ca_pem=serving_certificate().ca_pem)


def operator_objects(namespace: str) -> list[dict[str, Any]]:
    """The on-call operator's account: edit the application's namespace, read the cluster.

    A ServiceAccount in ``namespace`` bound there to the cluster's ``edit`` role (as teams
    give their on-call engineers), and cluster-wide to ``view`` plus node, namespace and
    cluster-object reads. The judge, not a missing permission, keeps changes to the task.
    """
    sa = {"apiVersion": "v1", "kind": "ServiceAccount",
          "metadata": {"name": OPERATOR_ACCOUNT, "namespace": namespace}}
    subject = [{"kind": "ServiceAccount", "name": OPERATOR_ACCOUNT, "namespace": namespace}]
    ref = {"apiGroup": "rbac.authorization.k8s.io"}
    return [
        sa,
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": f"{OPERATOR_ACCOUNT}-edit", "namespace": namespace},
         "roleRef": {**ref, "kind": "ClusterRole", "name": "edit"}, "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{OPERATOR_ACCOUNT}-view"},
         "roleRef": {**ref, "kind": "ClusterRole", "name": "view"}, "subjects": subject},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": f"{OPERATOR_ACCOUNT}-cluster-reader"},
         "roleRef": {**ref, "kind": "ClusterRole", "name": "cluster-reader"},
         "subjects": subject},
    ]
