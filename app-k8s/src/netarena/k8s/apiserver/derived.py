"""Read-only kinds computed from stored objects: Endpoints, EndpointSlices, ReplicaSets.

A real cluster's controllers maintain these; here they are derived on every read, so they
can never drift from the Services, Pods and Deployments they describe. ``kubectl describe``
reads them (a Service's endpoints, a Deployment's new ReplicaSet). Events stay empty.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from typing import Any

from netarena.k8s.apiserver.kinds import KindInfo
from netarena.k8s.apiserver.names import safe_encode

__all__ = ["derived_objects", "heartbeat"]

Objects = Mapping[str, Mapping[tuple[str, str], dict[str, Any]]]


def derived_objects(objects: Objects, info: KindInfo) -> list[dict[str, Any]]:
    """Build every object of the generated kind ``info`` from the stored ``objects``."""
    if info.kind == "Endpoints":
        return [_endpoints(svc, objects) for svc in _services(objects)]
    if info.kind == "EndpointSlice":
        return [_endpoint_slice(svc, objects) for svc in _services(objects)]
    if info.kind == "ReplicaSet":
        return _replica_sets(objects)
    return []


def heartbeat(obj: dict[str, Any], now: float) -> dict[str, Any]:
    """Stamp what kubelets renew every few seconds: node heartbeats and node leases.

    A stored node would otherwise report its last heartbeat weeks ago; each node here
    renewed its lease within 10 s and posted its status within 5 minutes of ``now``.
    """
    kind = obj.get("kind")
    if kind not in ("Node", "Lease"):
        return obj
    name = obj["metadata"]["name"]
    phase = int(hashlib.sha256(name.encode()).hexdigest()[:4], 16) % 10_000 / 1_000
    renewed = now - ((now - phase) % 10)
    if kind == "Lease":
        spec = obj.setdefault("spec", {})
        spec["renewTime"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(renewed)) + (
            f".{int(renewed % 1 * 1e6):06d}Z")
    else:  # an unchanged status is reported every 5 minutes
        posted = now - ((now - 30 * phase) % 300)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(posted))
        for cond in (obj.get("status") or {}).get("conditions") or []:
            cond["lastHeartbeatTime"] = stamp
    return obj


def _services(objects: Objects) -> list[dict[str, Any]]:
    return [s for s in objects.get("Service", {}).values()
            if (s.get("spec") or {}).get("selector") or _is_apiserver(s)]


def _is_apiserver(svc: dict[str, Any]) -> bool:
    meta = svc["metadata"]
    return (meta.get("namespace"), meta["name"]) == ("default", "kubernetes")


def _apiserver_pods(objects: Objects) -> list[dict[str, Any]]:
    """The API server's endpoints: the control-plane node's address, port 6443."""
    return [
        {"metadata": {"name": p["metadata"]["name"], "namespace": "kube-system",
                      "uid": p["metadata"].get("uid", "")},
         "spec": {"nodeName": p["spec"].get("nodeName"),
                  "containers": [{"ports": [{"containerPort": 6443}]}]},
         "status": p.get("status") or {}}
        for (ns, _), p in sorted(objects.get("Pod", {}).items())
        if ns == "kube-system" and (p["metadata"].get("labels") or {}).get(
            "component") == "kube-apiserver"
    ]


def _backends(svc: dict[str, Any], objects: Objects) -> list[dict[str, Any]]:
    if _is_apiserver(svc):
        return _apiserver_pods(objects)
    ns = svc["metadata"]["namespace"]
    selector = svc["spec"]["selector"]
    return [
        p for (pns, _), p in sorted(objects.get("Pod", {}).items())
        if pns == ns and (p.get("status") or {}).get("podIP")
        and all((p["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
    ]


def _target_port(port: dict[str, Any], pods: list[dict[str, Any]]) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    for pod in pods:
        for c in pod["spec"].get("containers") or []:
            for cp in c.get("ports") or []:
                if cp.get("name") == target:
                    return int(cp["containerPort"])
    return None


def _ports(svc: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for port in svc["spec"].get("ports") or []:
        number = _target_port(port, pods)
        if number is not None:
            entry = {"port": number, "protocol": port.get("protocol", "TCP")}
            if port.get("name"):
                entry["name"] = port["name"]
            out.append(entry)
    return out


def _meta(svc: dict[str, Any], name: str, labels: dict[str, str]) -> dict[str, Any]:
    src = svc["metadata"]
    return {
        "name": name,
        "namespace": src["namespace"],
        "labels": labels,
        "uid": _uid(f"{src['uid']}/{name}"),
        "resourceVersion": src.get("resourceVersion", "1"),
        "creationTimestamp": src.get("creationTimestamp"),
    }


def _uid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def _ref(pod: dict[str, Any]) -> dict[str, Any]:
    meta = pod["metadata"]
    return {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
            "uid": meta.get("uid", "")}


def _endpoints(svc: dict[str, Any], objects: Objects) -> dict[str, Any]:
    pods = _backends(svc, objects)
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": _meta(svc, svc["metadata"]["name"], dict(svc["metadata"].get("labels") or {})),
    }
    ports = _ports(svc, pods)
    if pods and ports:
        obj["subsets"] = [{
            "addresses": [{"ip": p["status"]["podIP"], "nodeName": p["spec"].get("nodeName"),
                           "targetRef": _ref(p)} for p in pods],
            "ports": ports,
        }]
    return obj


def _endpoint_slice(svc: dict[str, Any], objects: Objects) -> dict[str, Any]:
    pods = _backends(svc, objects)
    name = svc["metadata"]["name"]
    labels = dict(svc["metadata"].get("labels") or {})
    labels["kubernetes.io/service-name"] = name
    if _is_apiserver(svc):  # the API server keeps its own slice, named like the Service
        slice_name = name
    else:
        suffix = safe_encode(hashlib.sha256(svc["metadata"]["uid"].encode()).digest(), 5)
        slice_name = f"{name}-{suffix}"
        labels["endpointslice.kubernetes.io/managed-by"] = "endpointslice-controller.k8s.io"
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": _meta(svc, slice_name, labels),
        "addressType": "IPv4",
        "endpoints": [
            {"addresses": [p["status"]["podIP"]],
             "conditions": {"ready": True, "serving": True, "terminating": False},
             "nodeName": p["spec"].get("nodeName"), "targetRef": _ref(p)}
            for p in pods
        ],
        "ports": _ports(svc, pods),
    }


def _replica_sets(objects: Objects) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for (ns, _), pod in sorted(objects.get("Pod", {}).items()):
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet":
                groups.setdefault((ns, ref["name"]), []).append(pod)
    out = []
    for (ns, rs_name), pods in groups.items():
        deploy = objects.get("Deployment", {}).get((ns, rs_name.rsplit("-", 1)[0]))
        if deploy is None:
            continue
        h = rs_name.rsplit("-", 1)[1]
        meta = deploy["metadata"]
        n = len(pods)
        selector = dict(deploy["spec"]["selector"])
        selector["matchLabels"] = dict(selector.get("matchLabels") or {},
                                       **{"pod-template-hash": h})
        out.append({
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": rs_name, "namespace": ns,
                "labels": dict(pods[0]["metadata"].get("labels") or {}),
                "uid": pods[0]["metadata"]["ownerReferences"][0]["uid"],
                "resourceVersion": meta.get("resourceVersion", "1"),
                "creationTimestamp": meta.get("creationTimestamp"),
                "annotations": {"deployment.kubernetes.io/revision": "1"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                     "name": meta["name"], "uid": meta["uid"],
                                     "controller": True, "blockOwnerDeletion": True}],
            },
            "spec": {"replicas": n, "selector": selector,
                     "template": deploy["spec"]["template"]},
            "status": {"replicas": n, "fullyLabeledReplicas": n, "readyReplicas": n,
                       "availableReplicas": n, "observedGeneration": 1},
        })
    return out
