"""The cluster's Pods and Namespaces as the model describes them (no store needed).

What the judge and the fault injector need to resolve selectors, and what the audit reads
as the peers' context.
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.detail import KUBE_DNS_LABELS
from netarena.k8s.manifests import namespace_labels
from netarena.k8s.model import AppModel

__all__ = ["model_namespaces", "model_pods"]

Policy = dict[str, Any]


def _pod(name: str, namespace: str, labels: dict[str, str], ports: list[tuple[str, int, str]],
         index: int) -> Policy:
    return {
        "metadata": {"name": f"{name}-0", "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "server", "ports": [
            {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]}]},
        "status": {"podIP": f"10.244.{index // 250}.{index % 250 + 2}"},
    }


def model_pods(model: AppModel) -> list[Policy]:
    """One Pod object per workload, as the Deployments would create them.

    The application's services, the monitoring namespace's Prometheus and Grafana, and
    the cluster DNS: what the judge needs to verify injections without a store (IPs are
    placeholders outside every external range the detail draws).
    """
    pods = []
    for i, s in enumerate(model.services):
        ports = [(s.port_name, s.container_port, "TCP")] if s.container_port is not None else []
        ports += [(n, p, "TCP") for n, p in (model.detail.declared(s.name) if model.detail
                                             else [])]
        pods.append(_pod(s.name, model.namespace, {"app": s.name}, ports, i))
    base = len(pods)
    if model.detail is not None:
        mon = model.detail.monitoring
        pods.append(_pod("prometheus", mon.namespace, dict(mon.scraper_labels),
                         [("web", 9090, "TCP")], base))
        pods.append(_pod("grafana", mon.namespace, dict(mon.other_labels),
                         [("http", 3000, "TCP")], base + 1))
        for k, w in enumerate(model.detail.workloads):
            if w.running:
                pods.append(_pod(w.name, w.namespace, dict(w.labels), [], base + 3 + k))
    pods.append(_pod("coredns", "kube-system", dict(KUBE_DNS_LABELS),
                     [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")], base + 2))
    return pods


def model_namespaces(model: AppModel) -> list[Policy]:
    """The application's namespace, the monitoring namespace and ``kube-system``."""
    names = [model.namespace, "kube-system"]
    if model.detail is not None:
        names += [model.detail.monitoring.namespace, *model.detail.namespaces]
    return [{"metadata": {"name": ns, "labels": namespace_labels(model, ns)}}
            for ns in dict.fromkeys(names)]
