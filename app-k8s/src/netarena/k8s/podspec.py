"""What each workload's pods carry, as in the upstream Online Boutique manifests.

Upstream every microservice runs as its own ServiceAccount, non-root with a read-only
root filesystem, with CPU and memory requests and limits, gRPC (or HTTP, or TCP) liveness
and readiness probes, and its callees' addresses in the environment
(``PRODUCT_CATALOG_SERVICE_ADDR=productcatalogservice:3550``). The frontend is also
exposed through a ``frontend-external`` LoadBalancer Service. A synthetic application
gets the same shape, with addresses taken from its call graph.
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.model import ANYONE, AppModel, ServiceSpec

__all__ = ["pod_details", "service_accounts", "external_service"]

_RESOURCES = {  # service: (requests cpu, memory, limits cpu, memory)
    "frontend": ("100m", "64Mi", "200m", "128Mi"),
    "adservice": ("200m", "180Mi", "300m", "300Mi"),
    "cartservice": ("200m", "64Mi", "300m", "128Mi"),
    "redis-cart": ("70m", "200Mi", "125m", "256Mi"),
    "loadgenerator": ("300m", "256Mi", "500m", "512Mi"),
    "recommendationservice": ("100m", "220Mi", "200m", "450Mi"),
}
_DEFAULT_RESOURCES = ("100m", "64Mi", "200m", "128Mi")
_NO_PROFILER = {"currencyservice", "recommendationservice", "emailservice",
                "paymentservice", "shippingservice", "productcatalogservice"}
_ENV_NAMES = {"productcatalogservice": "PRODUCT_CATALOG_SERVICE_ADDR"}
_CONTAINER_NAMES = {"loadgenerator": "main", "redis-cart": "redis"}
"""Upstream's container names where they are not ``server``."""
_FIXED_PORT = {"cartservice"}
"""Servers whose listening port is built in rather than read from ``PORT``."""
_CONTAINER_SECURITY = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                       "privileged": False, "readOnlyRootFilesystem": True}
_POD_SECURITY = {"fsGroup": 1000, "runAsGroup": 1000, "runAsNonRoot": True, "runAsUser": 1000}


def _address_variable(name: str) -> str:
    if name in _ENV_NAMES:
        return _ENV_NAMES[name]
    if name.endswith("service"):
        return f"{name.removesuffix('service').upper()}_SERVICE_ADDR"
    return f"{name.split('-')[0].upper()}_ADDR"


def _callees(model: AppModel, spec: ServiceSpec) -> list[ServiceSpec]:
    if spec.port is None:  # a client (the load generator) calls the public entry point
        return [s for s in model.servers if ANYONE in s.sources]
    return [s for s in model.servers if spec.name in s.sources]


def _probe(spec: ServiceSpec) -> dict[str, Any] | None:
    port = spec.container_port
    if port is None:
        return None
    if spec.port_name == "http":
        return {"httpGet": {"path": "/_healthz", "port": port, "httpHeaders": [
            {"name": "Cookie", "value": "shop_session-id=x-readiness-probe"}]},
            "initialDelaySeconds": 10}
    if spec.port_name.startswith("tcp"):
        return {"tcpSocket": {"port": port}, "periodSeconds": 5}
    return {"grpc": {"port": port}, "periodSeconds": 5}


def pod_details(model: AppModel, spec: ServiceSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """The pod-level and container-level fields of ``spec``'s Deployment template.

    Returns:
        ``(pod_spec_fields, container_fields)`` to merge into the rendered template.
    """
    env = [] if (spec.port is None or spec.port_name.startswith("tcp")
                 or spec.name in _FIXED_PORT) else [
        {"name": "PORT", "value": str(spec.container_port)}]
    env += [{"name": _address_variable(c.name), "value": f"{c.name}:{c.port}"}
            for c in _callees(model, spec)]
    if spec.name in _NO_PROFILER:
        env.append({"name": "DISABLE_PROFILER", "value": "1"})
    if spec.port is None:
        env += [{"name": "USERS", "value": "10"}, {"name": "RATE", "value": "1"}]
    req_cpu, req_mem, lim_cpu, lim_mem = _RESOURCES.get(spec.name, _DEFAULT_RESOURCES)
    container: dict[str, Any] = {
        "resources": {"requests": {"cpu": req_cpu, "memory": req_mem},
                      "limits": {"cpu": lim_cpu, "memory": lim_mem}},
        "securityContext": dict(_CONTAINER_SECURITY),
    }
    if spec.name in _CONTAINER_NAMES:
        container["name"] = _CONTAINER_NAMES[spec.name]
    if env:
        container["env"] = env
    probe = _probe(spec)
    if probe is not None:
        container["readinessProbe"] = probe
        container["livenessProbe"] = {**probe, "periodSeconds": 10}
    pod: dict[str, Any] = {"securityContext": dict(_POD_SECURITY),
                           "terminationGracePeriodSeconds": 5}
    if not spec.port_name.startswith("tcp"):
        pod["serviceAccountName"] = spec.name
    return pod, container


def service_accounts(model: AppModel) -> list[dict[str, Any]]:
    """One ServiceAccount per microservice (the datastore runs as ``default``)."""
    return [{"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": s.name, "namespace": model.namespace}}
            for s in model.services if not s.port_name.startswith("tcp")]


def external_service(model: AppModel) -> dict[str, Any] | None:
    """The LoadBalancer Service exposing the public entry point (``frontend-external``)."""
    entry = next((s for s in model.servers if ANYONE in s.sources), None)
    if entry is None:
        return None
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"{entry.name}-external", "namespace": model.namespace,
                         "labels": {"app": entry.name}},
            "spec": {"type": "LoadBalancer", "selector": {"app": entry.name},
                     "ports": [{"name": "http", "port": 80,
                                "targetPort": entry.container_port}]}}
