"""Kubernetes objects rendered from an ``AppModel``: Deployments, Services, NetworkPolicies.

The policies follow the upstream Online Boutique layout exactly (a ``deny-all`` plus one
policy per service, each with egress allow-all), so for Online Boutique they equal the
upstream files; a test keeps it that way.
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.model import ANYONE, AppModel, ServiceSpec
from netarena.k8s.podspec import external_service, pod_details, service_accounts

__all__ = [
    "render_namespace",
    "render_deployment",
    "render_service",
    "render_policy",
    "render_policies",
    "render_all",
    "DENY_ALL",
]

DENY_ALL = "deny-all"
"""Name of the default-deny policy."""

Manifest = dict[str, Any]


def _meta(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return meta


def render_namespace(model: AppModel) -> Manifest:
    """The namespace the application lives in (labelled like Kubernetes does by default)."""
    ns = model.namespace
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}}


def render_deployment(spec: ServiceSpec, namespace: str,
                      model: AppModel | None = None) -> Manifest:
    """One single-replica Deployment whose pods carry ``app=<name>`` and a named port.

    With ``model``, the pods also carry what upstream gives them (``podspec``): their
    service account, environment, probes, resources and security context.
    """
    labels = {"app": spec.name}
    container: dict[str, Any] = {"name": "server", "image": spec.image or f"{spec.name}:latest"}
    if spec.container_port is not None:
        container["ports"] = [
            {"name": spec.port_name, "containerPort": spec.container_port, "protocol": "TCP"}
        ]
    pod: dict[str, Any] = {"containers": [container]}
    if model is not None:
        pod_fields, container_fields = pod_details(model, spec)
        container.update(container_fields)
        pod.update(pod_fields)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(spec.name, namespace, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": pod,
            },
        },
    }


def render_service(spec: ServiceSpec, namespace: str) -> Manifest | None:
    """The ClusterIP Service in front of ``spec`` (``None`` for client-only workloads)."""
    if spec.port is None:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(spec.name, namespace, {"app": spec.name}),
        "spec": {
            "type": "ClusterIP",
            "selector": {"app": spec.name},
            "ports": [{"name": spec.port_name, "port": spec.port,
                       "targetPort": spec.container_port, "protocol": "TCP"}],
        },
    }


def render_policy(spec: ServiceSpec, namespace: str) -> Manifest:
    """The service's own NetworkPolicy: its allowed ingress and egress allow-all.

    Client-only workloads get an Egress-only policy, as upstream ``loadgenerator`` does.
    """
    pol_spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": spec.name}}}
    if spec.port is None:
        pol_spec["policyTypes"] = ["Egress"]
    else:
        pol_spec["policyTypes"] = ["Ingress", "Egress"]
        if ANYONE in spec.sources:
            pol_spec["ingress"] = [{}]
        elif spec.sources:
            pol_spec["ingress"] = [{
                "from": [{"podSelector": {"matchLabels": {"app": s}}} for s in spec.sources],
                "ports": [{"port": spec.container_port, "protocol": "TCP"}],
            }]
    pol_spec["egress"] = [{}]
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": _meta(spec.name, namespace), "spec": pol_spec}


def render_policies(model: AppModel) -> list[Manifest]:
    """``deny-all`` followed by one policy per service (13 for Online Boutique)."""
    deny = {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": _meta(DENY_ALL, model.namespace),
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }
    return [deny] + [render_policy(s, model.namespace) for s in model.services]


def render_all(model: AppModel) -> list[Manifest]:
    """Everything the application needs, in creation order: namespace, workloads, policies."""
    objs: list[Manifest] = [render_namespace(model), *service_accounts(model)]
    external = external_service(model)
    for s in model.services:
        objs.append(render_deployment(s, model.namespace, model))
        svc = render_service(s, model.namespace)
        if svc is not None:
            objs.append(svc)
        if external is not None and external["spec"]["selector"]["app"] == s.name:
            objs.append(external)
    return objs + render_policies(model)
