"""Defaulting, as the real API server applies it on every write (validation: ``validation.py``).

Defaulting matters for fidelity: a NetworkPolicy created without ``policyTypes`` reads
back with them (Ingress, plus Egress when it has egress rules), ports get protocol TCP, a
Namespace gets its ``kubernetes.io/metadata.name`` label that namespaceSelectors match.
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.apiserver.kinds import KindInfo

__all__ = ["apply_defaults"]


def _default_container(c: dict[str, Any]) -> None:
    c.setdefault("imagePullPolicy", "IfNotPresent")
    c.setdefault("terminationMessagePath", "/dev/termination-log")
    c.setdefault("terminationMessagePolicy", "File")
    c.setdefault("resources", {})
    for port in c.get("ports") or []:
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
    for which in ("livenessProbe", "readinessProbe", "startupProbe"):
        probe = c.get(which)
        if isinstance(probe, dict):
            _default_probe(probe)


def _default_probe(probe: dict[str, Any]) -> None:
    for key, value in (("timeoutSeconds", 1), ("periodSeconds", 10), ("successThreshold", 1),
                       ("failureThreshold", 3)):
        probe.setdefault(key, value)
    if isinstance(probe.get("httpGet"), dict):
        probe["httpGet"].setdefault("scheme", "HTTP")
    if isinstance(probe.get("grpc"), dict):
        probe["grpc"].setdefault("service", "")


def _default_pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("securityContext", {})
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            _default_container(c)


def apply_defaults(obj: dict[str, Any], info: KindInfo) -> None:
    """Fill the defaults the real API server would, in place."""
    obj["apiVersion"] = info.api_version
    obj["kind"] = info.kind
    meta = obj.setdefault("metadata", {})
    _omit_empty(meta, ("labels", "annotations", "finalizers", "ownerReferences"))
    spec = obj.get("spec")
    if info.kind == "Namespace":
        meta.setdefault("labels", {})["kubernetes.io/metadata.name"] = meta.get("name", "")
        obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        obj.setdefault("status", {}).setdefault("phase", "Active")
    elif info.kind == "Pod" and isinstance(spec, dict):
        _default_pod_spec(spec)
    elif info.kind == "Deployment" and isinstance(spec, dict):
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)
        spec.setdefault(
            "strategy",
            {"type": "RollingUpdate",
             "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        )
        template = spec.get("template")
        if isinstance(template, dict) and isinstance(template.get("spec"), dict):
            _default_pod_spec(template["spec"])
    elif info.kind == "Service" and isinstance(spec, dict):
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                if "port" in port:
                    port.setdefault("targetPort", port["port"])
        obj.setdefault("status", {"loadBalancer": {}})
    elif info.kind == "NetworkPolicy" and isinstance(spec, dict):
        _default_network_policy(spec)


def _omit_empty(obj: dict[str, Any], keys: tuple[str, ...]) -> None:
    """Drop ``keys`` whose value is null, ``[]`` or ``{}`` (Go's ``omitempty``)."""
    for key in keys:
        if key in obj and obj[key] in (None, [], {}):
            del obj[key]


def _omit_empty_selector(holder: dict[str, Any], key: str) -> None:
    selector = holder.get(key)
    if selector is None:
        holder.pop(key, None)
    elif isinstance(selector, dict):
        _omit_empty(selector, ("matchLabels", "matchExpressions"))


def _omit_empty_policy(spec: dict[str, Any]) -> None:
    """A NetworkPolicy as the API server stores it: empty lists, maps and nulls left out.

    ``ingress: []`` reads back as no ``ingress``; ``podSelector: {}`` stays.
    """
    _omit_empty(spec, ("ingress", "egress", "policyTypes"))
    if spec.get("podSelector") is None:
        spec["podSelector"] = {}
    _omit_empty_selector(spec, "podSelector")
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        for rule in spec.get(direction) or []:
            if not isinstance(rule, dict):
                continue
            _omit_empty(rule, (peers_key, "ports"))
            for peer in rule.get(peers_key) or []:
                if isinstance(peer, dict):
                    _omit_empty_selector(peer, "podSelector")
                    _omit_empty_selector(peer, "namespaceSelector")
                    if isinstance(peer.get("ipBlock"), dict):
                        _omit_empty(peer["ipBlock"], ("except",))
                    elif "ipBlock" in peer and peer["ipBlock"] is None:
                        del peer["ipBlock"]
            for port in rule.get("ports") or []:
                if isinstance(port, dict):
                    _omit_empty(port, ("port", "endPort", "protocol"))


def _default_network_policy(spec: dict[str, Any]) -> None:
    _omit_empty_policy(spec)
    if not spec.get("policyTypes"):
        types = ["Ingress"]
        if spec.get("egress"):
            types.append("Egress")
        spec["policyTypes"] = types
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            if not isinstance(rule, dict):
                continue
            for port in rule.get("ports") or []:
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")
