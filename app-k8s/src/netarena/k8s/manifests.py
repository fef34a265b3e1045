"""Kubernetes objects rendered from an ``AppModel``: Deployments, Services, NetworkPolicies.

Without ``model.detail`` the policies follow the upstream Online Boutique layout exactly
(a ``deny-all`` plus one policy per service, each with egress allow-all), so for Online
Boutique they equal the upstream files; a test keeps it that way. With detail they also
carry what other teams put there (``detail``): a monitoring rule, a restricted egress to
an external range, labels and annotations; and the monitoring namespace is rendered
with its Prometheus and Grafana.

Every policy is written in the API server's field order (``canonical_policy``), so a
policy whose spec was rewritten cannot be told from the others by its key order.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from netarena.k8s.design import TEAM_LABEL
from netarena.k8s.detail import DNS_PORTS, KUBE_DNS_LABELS, ClusterDetail, PolicyExtras
from netarena.k8s.model import ANYONE, AppModel, ServiceSpec
from netarena.k8s.podspec import external_service, pod_details, service_accounts

__all__ = [
    "callee_rule",
    "render_namespace",
    "render_deployment",
    "render_service",
    "render_policy",
    "render_policies",
    "render_all",
    "canonical_policy",
    "in_cluster_egress",
    "locked_egress",
    "dns_rule",
    "namespace_labels",
    "monitoring_rule",
    "peer",
    "DENY_ALL",
    "NS_NAME",
]

DENY_ALL = "deny-all"
"""Name of the default-deny policy."""
NS_NAME = "kubernetes.io/metadata.name"
"""The label every namespace carries with its own name."""

Manifest = dict[str, Any]
_ORDER = ("apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations",
          "spec", "podSelector", "ingress", "egress", "policyTypes", "from", "to", "ports",
          "podSelector", "namespaceSelector", "ipBlock", "cidr", "except", "protocol", "port",
          "endPort", "matchLabels", "matchExpressions", "key", "operator", "values")
_RANK = {k: i for i, k in reversed(list(enumerate(_ORDER)))}


def canonical_policy(value: Any) -> Any:
    """``value`` with mapping keys in the API server's (Go struct) order, recursively."""
    if isinstance(value, dict):
        keys = sorted(value, key=lambda k: (_RANK.get(k, len(_ORDER)), k))
        return {k: canonical_policy(value[k]) for k in keys}
    if isinstance(value, list):
        return [canonical_policy(v) for v in value]
    return value


def _meta(name: str, namespace: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if labels:
        meta["labels"] = labels
    return meta


def namespace_labels(model: AppModel, name: str) -> dict[str, str]:
    """A namespace's labels: its name (as Kubernetes sets it), its team if another team's."""
    team = model.detail.teams.get(name) if model.detail is not None else None
    return {NS_NAME: name, **({TEAM_LABEL: team} if team else {})}


def render_namespace(model: AppModel, name: str | None = None) -> Manifest:
    """A namespace (the application's by default), labelled as Kubernetes does."""
    ns = name or model.namespace
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": ns, "labels": namespace_labels(model, ns)}}


def _deployment(name: str, namespace: str, labels: dict[str, str], image: str,
                ports: list[dict[str, Any]],
                extra: tuple[dict[str, Any], dict[str, Any]] | None = None) -> Manifest:
    container: dict[str, Any] = {"name": "server", "image": image}
    if ports:
        container["ports"] = ports
    pod: dict[str, Any] = {"containers": [container]}
    if extra is not None:
        pod_fields, container_fields = extra
        container.update(container_fields)
        pod.update(pod_fields)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(name, namespace, labels),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(labels)},
            "template": {"metadata": {"labels": dict(labels)}, "spec": pod},
        },
    }


def _cronjob(name: str, namespace: str, labels: dict[str, str], image: str) -> Manifest:
    """A CronJob (no pod until it runs): its template carries ``labels``."""
    return {"apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": _meta(name, namespace, labels),
            "spec": {"schedule": f"{sum(map(ord, name)) % 60} 2 * * *",
                     "concurrencyPolicy": "Forbid",
                     "jobTemplate": {"spec": {"template": {
                         "metadata": {"labels": dict(labels)},
                         "spec": {"restartPolicy": "OnFailure",
                                  "containers": [{"name": "job", "image": image}]}}}}}}


def render_deployment(spec: ServiceSpec, namespace: str,
                      declared: list[tuple[str, int]] | None = None,
                      model: AppModel | None = None) -> Manifest:
    """One single-replica Deployment whose pods carry ``app=<name>`` and named ports.

    With ``model``, the pods also carry what upstream gives them (``podspec``): their
    service account, environment, probes, resources and security context.
    """
    ports = []
    if spec.container_port is not None:
        ports.append({"name": spec.port_name, "containerPort": spec.container_port,
                      "protocol": "TCP"})
    for name, port in declared or []:
        ports.append({"name": name, "containerPort": port, "protocol": "TCP"})
    extra = pod_details(model, spec) if model is not None else None
    return _deployment(spec.name, namespace, {"app": spec.name},
                       spec.image or f"{spec.name}:latest", ports, extra)


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


def peer(app: str) -> dict[str, Any]:
    """The network-policy peer selecting the pods of ``app``."""
    return {"podSelector": {"matchLabels": {"app": app}}}


def monitoring_rule(namespace: str, scraper: Mapping[str, str], port: int) -> dict[str, Any]:
    """The ingress rule letting Prometheus (its namespace AND its pods) scrape ``port``."""
    return {"from": [{"podSelector": {"matchLabels": dict(scraper)},
                      "namespaceSelector": {"matchLabels": {NS_NAME: namespace}}}],
            "ports": [{"protocol": "TCP", "port": port}]}


def in_cluster_egress(model: AppModel, name: str) -> list[dict[str, Any]]:
    """A restricted egress's in-cluster rules: the service's callees and cluster DNS.

    DNS comes first for the services the design draws so (``dns_first``).
    """
    callees = [d.name for d in model.callees(name)]
    rules = [callee_rule(model, callees)] if callees else []
    dns_first = model.detail is not None and name in model.detail.dns_first
    return [dns_rule(model, name), *rules] if dns_first else [*rules, dns_rule(model, name)]


def callee_rule(model: AppModel, callees: Sequence[str]) -> dict[str, Any]:
    """The egress rule to ``callees``: each callee, and entry for entry its port."""
    return {"to": [peer(c) for c in callees],
            "ports": [{"protocol": "TCP", "port": model.service(c).container_port}
                      for c in callees]}


def dns_rule(model: AppModel, name: str) -> dict[str, Any]:
    """The egress rule letting ``name``'s pods resolve names (cluster DNS on port 53).

    UDP and TCP, or UDP only for the services the design draws so (``dns_udp_only``).
    """
    udp_only = model.detail is not None and name in model.detail.dns_udp_only
    return {"to": [{"podSelector": {"matchLabels": dict(KUBE_DNS_LABELS)},
                    "namespaceSelector": {"matchLabels": {NS_NAME: "kube-system"}}}],
            "ports": [dict(p) for p in DNS_PORTS if not udp_only or p["protocol"] == "UDP"]}


def locked_egress(model: AppModel, name: str, lock: str) -> list[dict[str, Any]]:
    """A locked-down egress: ``callees`` (callees and DNS), ``dns`` (DNS only), ``none``."""
    if lock == "callees":
        return in_cluster_egress(model, name)
    return [dns_rule(model, name)] if lock == "dns" else []


def _egress(model: AppModel, spec: ServiceSpec) -> list[dict[str, Any]]:
    """Egress allow-all, a locked-down egress, or an external dependency's restricted set.

    The restricted set: callees, DNS and the external ranges.
    """
    external = model.detail.egress_of(spec.name) if model.detail else []
    if not external:
        lock = model.detail.locks.get(spec.name) if model.detail else None
        return locked_egress(model, spec.name, lock) if lock else [{}]
    rules = in_cluster_egress(model, spec.name)
    excepts = model.detail.except_cidrs if model.detail else {}
    for e in external:
        block: dict[str, Any] = {"cidr": e.cidr}
        if e.service in excepts:
            block["except"] = [excepts[e.service]]
        rules.append({"to": [{"ipBlock": block}],
                      "ports": [{"protocol": "TCP", "port": e.port}]})
    return rules


def render_policy(spec: ServiceSpec, namespace: str, model: AppModel | None = None) -> Manifest:
    """The service's own NetworkPolicy: its allowed ingress, and its egress.

    Client-only workloads get an Egress-only policy, as upstream ``loadgenerator`` does.
    With ``model.detail`` the monitoring rule, restricted egress and ownership are added.
    """
    detail = model.detail if model is not None else None
    pol_spec: dict[str, Any] = {"podSelector": {"matchLabels": {"app": spec.name}}}
    if spec.port is None:
        pol_spec["policyTypes"] = ["Egress"]
    else:
        pol_spec["policyTypes"] = ["Ingress", "Egress"]
        extras = detail.extras.get(spec.name) if detail is not None else None
        if ANYONE in spec.sources:
            pol_spec["ingress"] = [{"ports": [{"port": spec.container_port, "protocol": "TCP"}]}
                                   if detail is not None and detail.public_port_only else {}]
        elif spec.sources:
            pol_spec["ingress"] = _main_rules(spec, extras)
        scrape = detail.monitoring.metrics_ports.get(spec.name) if detail else None
        if detail is not None and scrape is not None:
            mon = detail.monitoring
            rule = monitoring_rule(mon.namespace, mon.scraper_labels, scrape)
            rules = pol_spec.setdefault("ingress", [])
            if extras is not None and extras.monitoring_first:
                rules.insert(random.Random(extras.shuffle).randrange(len(rules) + 1), rule)
            else:
                rules.append(rule)
    pol_spec["egress"] = _egress(model, spec) if model is not None else [{}]
    meta = _meta(spec.name, namespace)
    _own(meta, detail, spec.name)
    policy: dict[str, Any] = canonical_policy({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
        "spec": pol_spec})
    return policy


def _main_rules(spec: ServiceSpec, extras: PolicyExtras | None) -> list[dict[str, Any]]:
    """The runbook's rule (callers on the service port) with what other teams added to it.

    With extras, the port may be named, extra peers and ports join, and the callers may
    each have a rule of their own (as teams that add one client at a time write them).
    """
    port: int | str | None = spec.container_port
    if extras is not None and extras.named_port:
        port = spec.port_name
    peers = [peer(s) for s in spec.sources]
    ports = [{"port": port, "protocol": "TCP"}]
    if extras is None:
        return [{"from": peers, "ports": ports}]
    rng = random.Random(extras.shuffle)
    ports += [dict(p) for p in extras.ports]
    rng.shuffle(ports)
    others = [copy.deepcopy(p) for p in extras.peers]
    if extras.split_callers:
        rules = [{"from": [p], "ports": copy.deepcopy(ports)} for p in peers + others]
    else:
        peers += others
        rng.shuffle(peers)
        rules = [{"from": peers, "ports": ports}]
    for rule in extras.rules:
        rules.insert(rng.randrange(len(rules) + 1), copy.deepcopy(rule))
    return rules


def _own(meta: dict[str, Any], detail: ClusterDetail | None, name: str) -> None:
    if detail is not None and detail.labels.get(name):
        meta["labels"] = dict(detail.labels[name])
    if detail is not None and detail.annotations.get(name):
        meta["annotations"] = dict(detail.annotations[name])


def render_policies(model: AppModel) -> list[Manifest]:
    """``deny-all`` followed by one policy per service (13 for Online Boutique)."""
    meta = _meta(DENY_ALL, model.namespace)
    _own(meta, model.detail, DENY_ALL)
    deny = canonical_policy({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {"podSelector": {}, "policyTypes": list(
            model.detail.default_deny if model.detail else ("Ingress", "Egress"))},
    })
    return [deny] + [render_policy(s, model.namespace, model) for s in model.services]


def render_monitoring(model: AppModel) -> list[Manifest]:
    """The monitoring namespace with one Prometheus and one Grafana (empty without detail)."""
    if model.detail is None:
        return []
    mon = model.detail.monitoring
    others: list[Manifest] = []
    for ns in model.detail.namespaces:
        others.append(render_namespace(model, ns))
    for w in model.detail.workloads:
        image = f"registry.example.com/{w.namespace}/{w.name}:1"
        others.append(_deployment(w.name, w.namespace, dict(w.labels), image, [])
                      if w.running else _cronjob(w.name, w.namespace, dict(w.labels), image))
    return others + [
        render_namespace(model, mon.namespace),
        _deployment("prometheus", mon.namespace, dict(mon.scraper_labels),
                    "quay.io/prometheus/prometheus:v2.53.0",
                    [{"name": "web", "containerPort": 9090, "protocol": "TCP"}]),
        _deployment("grafana", mon.namespace, dict(mon.other_labels),
                    "docker.io/grafana/grafana:11.1.0",
                    [{"name": "http", "containerPort": 3000, "protocol": "TCP"}]),
    ]


def render_all(model: AppModel) -> list[Manifest]:
    """Everything the application needs, in creation order: namespaces, workloads, policies."""
    objs: list[Manifest] = [render_namespace(model), *render_monitoring(model),
                            *service_accounts(model)]
    external = external_service(model)
    for s in model.services:
        declared = model.detail.declared(s.name) if model.detail else []
        objs.append(render_deployment(s, model.namespace, declared, model))
        svc = render_service(s, model.namespace)
        if svc is not None:
            objs.append(svc)
        if external is not None and external["spec"]["selector"]["app"] == s.name:
            objs.append(external)
    return objs + render_policies(model)
