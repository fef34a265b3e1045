"""Known-field schemas, for the API server's field validation (``fieldValidation``).

A real API server drops fields it does not know; with ``fieldValidation=Strict`` (what
``kubectl apply`` and ``create`` send) it rejects them, and by default (``Warn``) it answers
with a warning kubectl prints. An agent's typo (``ingres:``) must not silently "work" here
and fail on a cluster. NetworkPolicy and Service are described field by field; for the
other kinds only the top level and ``metadata`` are checked (their specs pass untouched).
"""

from __future__ import annotations

from typing import Any

__all__ = ["prune_unknown_fields"]

_META = {k: None for k in (
    "name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
    "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
    "annotations", "ownerReferences", "finalizers", "managedFields")}
_SELECTOR = {"matchLabels": None,
             "matchExpressions": [{"key": None, "operator": None, "values": None}]}
_PEER = {"podSelector": _SELECTOR, "namespaceSelector": _SELECTOR,
         "ipBlock": {"cidr": None, "except": None}}
_POLICY_PORT = {"protocol": None, "port": None, "endPort": None}
_SERVICE_PORT = {k: None for k in ("name", "protocol", "appProtocol", "port", "targetPort",
                                   "nodePort")}
_SERVICE_SPEC: dict[str, Any] = {k: None for k in (
    "selector", "clusterIP", "clusterIPs", "type", "externalIPs", "sessionAffinity",
    "loadBalancerIP", "loadBalancerSourceRanges", "externalName", "externalTrafficPolicy",
    "healthCheckNodePort", "publishNotReadyAddresses", "sessionAffinityConfig", "ipFamilies",
    "ipFamilyPolicy", "allocateLoadBalancerNodePorts", "loadBalancerClass",
    "internalTrafficPolicy", "trafficDistribution")}
_SERVICE_SPEC["ports"] = [_SERVICE_PORT]

_SCHEMAS: dict[str, dict[str, Any]] = {
    "NetworkPolicy": {
        "spec": {"podSelector": _SELECTOR, "policyTypes": None,
                 "ingress": [{"from": [_PEER], "ports": [_POLICY_PORT]}],
                 "egress": [{"to": [_PEER], "ports": [_POLICY_PORT]}]},
    },
    "Service": {"spec": _SERVICE_SPEC, "status": None},
}


def _walk(value: Any, schema: Any, path: str, found: list[str]) -> Any:
    if schema is None:
        return value
    if isinstance(schema, list):
        if isinstance(value, list):
            return [_walk(v, schema[0], f"{path}[{i}]", found) for i, v in enumerate(value)]
        return value
    if not isinstance(value, dict):
        return value
    out = {}
    for key, sub in value.items():
        where = f"{path}.{key}" if path else key
        if key not in schema:
            found.append(where)
            continue
        out[key] = _walk(sub, schema[key], where, found)
    return out


def prune_unknown_fields(obj: dict[str, Any], kind: str) -> tuple[dict[str, Any], list[str]]:
    """Drop fields the API does not know, as the real server's decoder does.

    Returns:
        The pruned object and the dotted paths of the dropped fields
        (``spec.ingress[0].ports[0].prot``), in document order.
    """
    schema: dict[str, Any] = {"apiVersion": None, "kind": None, "metadata": _META,
                              "spec": None, "status": None}
    if kind in _SCHEMAS:
        schema = {**schema, **_SCHEMAS[kind]}
    found: list[str] = []
    pruned = _walk(obj, schema, "", found)
    return pruned, found
