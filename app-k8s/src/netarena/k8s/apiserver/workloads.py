"""Controllers' work, done synchronously on write: IP allocation, pod status, Deployments.

A real cluster runs a scheduler, kubelets and a ReplicaSet controller; here their effect is
applied inside the store's write lock, so a Deployment's Pods exist (Running, Ready, with an
IP) the moment ``create`` returns. Pods carry ``pod-template-hash`` and an owner reference to
a ReplicaSet named ``<deployment>-<hash>`` as they would on a cluster (the ReplicaSet itself is
a derived read-only view). Mixed into ``ObjectStore``; it relies on the store's state.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import random
import uuid
from collections.abc import Callable
from typing import Any

from netarena.k8s.apiserver.fields import record_status, record_update
from netarena.k8s.apiserver.kinds import Invalid, KindInfo, clone, kind_info
from netarena.k8s.apiserver.names import random_suffix, rfc3339, safe_encode
from netarena.k8s.apiserver.status import (
    cluster_ca,
    deployment_status,
    internal_ip,
    running_status,
    tolerates,
)
from netarena.k8s.apiserver.watch import ChangeLog

__all__ = ["WorkloadController"]

_POD_NET = ipaddress.ip_network("10.244.0.0/16")
_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")
RESERVED_SERVICE_IPS = frozenset({"10.96.0.1", "10.96.0.10"})
_CA_NOTE = ("Contains a CA bundle that can be used to verify the kube-apiserver when using "
            "internal endpoints such as the internal service IP or kubernetes.default.svc. No "
            "other usage is guaranteed across distributions of Kubernetes clusters.")


class WorkloadController:
    """Mixin: allocation and controller behaviour for ``ObjectStore`` (not used alone)."""

    seed: int
    node_name: str
    _clock: Callable[[], float]
    _frozen_at: float | None
    _objects: dict[str, dict[tuple[str, str], dict[str, Any]]]
    _revision: int
    _written: dict[str, int]
    _rng: random.Random
    _next_pod_ip: dict[str, int]
    _service_ips: set[str]
    _spawned: dict[tuple[str, str], int]

    changes: ChangeLog

    def _record(self, change: str, kind: str, obj: dict[str, Any]) -> None:
        """Log a change for watchers (``ObjectStore.watch``)."""
        self.changes.add(self._revision, change, kind, obj)

    def _changed(self, kind: str) -> None:
        """Count a change to the objects of ``kind`` (``StoreReads.shared`` copies again)."""
        self._written[kind] = self._written.get(kind, 0) + 1

    def _uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _now(self) -> str:
        return rfc3339(self._frozen_at if self._frozen_at is not None else self._clock())

    def _created(self, info: KindInfo, obj: dict[str, Any]) -> None:
        """What controllers do when an object appears (namespace contents, workload pods)."""
        if info.kind == "Deployment":
            self._reconcile(obj)
        elif info.kind == "DaemonSet":
            self._run_daemons(obj)
        elif info.kind == "Namespace":
            self._populate_namespace(obj["metadata"]["name"])
        elif info.kind == "Node":
            for ds in list(self._objects.get("DaemonSet", {}).values()):
                self._run_daemons(ds)

    def _populate_namespace(self, ns: str) -> None:
        """The service-account and root-CA publishers' work in a new namespace."""
        published: tuple[dict[str, Any], ...] = (
            {"apiVersion": "v1", "kind": "ServiceAccount",
             "metadata": {"name": "default", "namespace": ns}},
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": "kube-root-ca.crt", "namespace": ns,
                          "annotations": {"kubernetes.io/description": _CA_NOTE}},
             "data": {"ca.crt": cluster_ca(self.seed)}})
        for obj in published:
            info = kind_info(obj["kind"])
            obj["metadata"].update(uid=self._uid(), creationTimestamp=self._now())
            self._write(info, (ns, obj["metadata"]["name"]), obj)

    def _nodes(self) -> list[dict[str, Any]]:
        return [n for _, n in sorted(self._objects.get("Node", {}).items())]

    def _schedule(self, spec: dict[str, Any]) -> str:
        """The node for a new pod: the least loaded node whose taints it tolerates."""
        nodes = [n for n in self._nodes() if tolerates(spec, n)]
        if not nodes:
            return self.node_name
        load: dict[str, int] = {n["metadata"]["name"]: 0 for n in nodes}
        for pod in self._objects.get("Pod", {}).values():
            if pod["spec"].get("nodeName") in load:
                load[pod["spec"]["nodeName"]] += 1
        return min(load, key=lambda name: (load[name], name))

    def _run_daemons(self, ds: dict[str, Any]) -> None:
        """The DaemonSet controller: one pod on every node the template tolerates."""
        h = self._template_hash(ds)
        served = {p["spec"].get("nodeName") for p in self._owned_pods(ds)}
        for node in self._nodes():
            template = clone(ds["spec"]["template"])
            if node["metadata"]["name"] not in served and tolerates(template["spec"], node):
                template["spec"]["nodeName"] = node["metadata"]["name"]
                self._spawn(ds, h, template, "DaemonSet")
        ready = len(self._owned_pods(ds))
        ds["status"] = {"currentNumberScheduled": ready, "desiredNumberScheduled": ready,
                        "numberAvailable": ready, "numberMisscheduled": 0,
                        "numberReady": ready, "observedGeneration": 1,
                        "updatedNumberScheduled": ready}
        self._changed("DaemonSet")  # its status, in place

    def _write(self, info: KindInfo, key: tuple[str, str], obj: dict[str, Any]) -> None:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        self._changed(info.key)
        objs = self._objects.setdefault(info.key, {})
        self._record("MODIFIED" if key in objs else "ADDED", info.key, obj)
        objs[key] = obj

    def _remove(self, kind: str, key: tuple[str, str]) -> dict[str, Any]:
        self._revision += 1
        self._changed(kind)
        obj = self._objects[kind].pop(key)
        gone = clone(obj)
        gone["metadata"]["resourceVersion"] = str(self._revision)
        self._record("DELETED", kind, gone)
        return obj

    def _admit(self, info: KindInfo, new: dict[str, Any], old: dict[str, Any] | None) -> None:
        """Allocate IPs and fill status; enforce immutable fields."""
        spec = new.get("spec") or {}
        if info.kind == "Service":
            self._admit_service(new, spec, old)
        elif info.kind == "Deployment" and old is not None:
            if spec.get("selector") != (old.get("spec") or {}).get("selector"):
                raise Invalid(
                    f'Deployment.apps "{new["metadata"]["name"]}" is invalid: spec.selector: '
                    "Invalid value: field is immutable",
                    {"name": new["metadata"]["name"], "group": "apps", "kind": "Deployment",
                     "causes": [{"reason": "FieldValueInvalid", "field": "spec.selector",
                                 "message": "Invalid value: field is immutable"}]},
                )
        elif info.kind == "Pod" and old is None:
            self._admit_pod(new)

    def _admit_service(
        self, new: dict[str, Any], spec: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        self._allocate_node_ports(spec, old)
        if old is not None:
            old_ip = old["spec"].get("clusterIP")
            if spec.get("clusterIP") in (None, "", old_ip):
                spec["clusterIP"] = old_ip
                spec["clusterIPs"] = old["spec"].get("clusterIPs", [old_ip])
                return
            raise Invalid(
                f'Service "{new["metadata"]["name"]}" is invalid: spec.clusterIPs[0]: '
                "Invalid value: field is immutable",
                {"name": new["metadata"]["name"], "kind": "Service",
                 "causes": [{"reason": "FieldValueInvalid", "field": "spec.clusterIPs[0]",
                             "message": "Invalid value: field is immutable"}]},
            )
        want = spec.get("clusterIP")
        if want in (None, ""):
            while True:
                offset = self._rng.randrange(2, _SERVICE_NET.num_addresses - 1)
                want = str(_SERVICE_NET.network_address + offset)
                if want not in self._service_ips and want not in RESERVED_SERVICE_IPS:
                    break
        elif want != "None":
            if ipaddress.ip_address(want) not in _SERVICE_NET or want in self._service_ips:
                raise Invalid(
                    f'Service "{new["metadata"]["name"]}" is invalid: spec.clusterIPs: Invalid '
                    f'value: ["{want}"]: failed to allocate IP {want}',
                    {"name": new["metadata"]["name"], "kind": "Service"},
                )
        self._service_ips.add(want)
        spec["clusterIP"] = want
        spec["clusterIPs"] = [want]

    def _allocate_node_ports(self, spec: dict[str, Any], old: dict[str, Any] | None) -> None:
        """NodePort and LoadBalancer Services get a port in 30000-32767 per Service port."""
        if spec.get("type") not in ("NodePort", "LoadBalancer"):
            return
        kept = {p.get("port"): p.get("nodePort") for p in ((old or {}).get("spec") or {}).get(
            "ports") or []}
        used = {p.get("nodePort") for s in self._objects.get("Service", {}).values()
                for p in (s.get("spec") or {}).get("ports") or []}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and not port.get("nodePort"):
                port["nodePort"] = kept.get(port.get("port")) or next(
                    n for n in iter(lambda: self._rng.randrange(30000, 32768), None)
                    if n not in used)
        if spec["type"] == "LoadBalancer":
            spec.setdefault("externalTrafficPolicy", "Cluster")
            spec.setdefault("allocateLoadBalancerNodePorts", True)

    def _admit_pod(self, pod: dict[str, Any]) -> None:
        spec = pod["spec"]
        node_name = spec.setdefault("nodeName", self._schedule(spec))
        node = self._objects.get("Node", {}).get(("", node_name))
        host_ip = internal_ip(node) if node else "172.18.0.2"
        ip = host_ip if spec.get("hostNetwork") else self._pod_ip(node_name, node)
        spec.setdefault("serviceAccountName", "default")
        spec.setdefault("serviceAccount", spec["serviceAccountName"])
        self._admit_pod_defaults(pod)
        now = pod["metadata"]["creationTimestamp"]
        pod["status"] = running_status(spec, ip, host_ip, now)

    def _admit_pod_defaults(self, pod: dict[str, Any]) -> None:
        """What admission adds to every pod: the API token volume, tolerations, priority."""
        spec = pod["spec"]
        spec.setdefault("enableServiceLinks", True)
        spec.setdefault("priority", 0)
        spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
        tolerations = spec.setdefault("tolerations", [])
        for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
            if not any(t.get("key") == key or (t.get("operator") == "Exists" and not t.get(
                    "key")) for t in tolerations):
                tolerations.append({"key": key, "operator": "Exists", "effect": "NoExecute",
                                    "tolerationSeconds": 300})
        if spec.get("automountServiceAccountToken") is False:
            return
        rng = random.Random(pod["metadata"].get("uid"))
        volume = f"kube-api-access-{random_suffix(rng)}"
        spec.setdefault("volumes", []).append({"name": volume, "projected": {
            "defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt",
                               "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                    "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}})
        for c in spec.get("containers") or []:
            c.setdefault("volumeMounts", []).append({
                "name": volume, "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"})

    def _pod_ip(self, node_name: str, node: dict[str, Any] | None) -> str:
        cidr = ((node or {}).get("spec") or {}).get("podCIDR")
        base = int(ipaddress.ip_network(cidr).network_address) if cidr else int(
            _POD_NET.network_address)
        n = self._next_pod_ip.get(node_name, 2)
        while (base + n) % 256 in (0, 1, 255):
            n += 1
        self._next_pod_ip[node_name] = n + 1
        return str(ipaddress.ip_address(base + n))

    # ------------------------------------------------------------ workloads
    def _template_hash(self, deploy: dict[str, Any]) -> str:
        text = json.dumps(deploy["spec"]["template"], sort_keys=True)
        meta = deploy["metadata"]
        blob = f"{self.seed}/{meta['namespace']}/{meta['name']}/{text}"
        return safe_encode(hashlib.sha256(blob.encode()).digest(), 10)

    def _owned_pods(self, owner: dict[str, Any]) -> list[dict[str, Any]]:
        prefix = f"{owner['metadata']['name']}-"
        ns = owner["metadata"]["namespace"]
        if owner["kind"] == "DaemonSet":
            uid = owner["metadata"]["uid"]
            return [p for (pns, _), p in sorted(self._objects.get("Pod", {}).items())
                    if pns == ns and any(ref.get("uid") == uid
                                         for ref in p["metadata"].get("ownerReferences") or [])]
        return [
            p for (pns, _), p in sorted(self._objects.get("Pod", {}).items())
            if pns == ns and any(ref.get("kind") == "ReplicaSet"
                                 and ref.get("name", "").startswith(prefix)
                                 and ref.get("name", "")[len(prefix):].isalnum()
                                 for ref in p["metadata"].get("ownerReferences") or [])
        ]

    def _owner_deployment(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        for ref in pod["metadata"].get("ownerReferences") or []:
            if ref.get("kind") == "ReplicaSet":
                name = ref["name"].rsplit("-", 1)[0]
                found = self._objects.get("Deployment", {}).get(
                    (pod["metadata"]["namespace"], name))
                if found is not None:
                    return found
        return None

    def _reconcile(self, deploy: dict[str, Any]) -> None:
        """Make the Deployment's pods match its template hash and replica count."""
        meta = deploy["metadata"]
        ns = meta["namespace"]
        h = self._template_hash(deploy)
        pods = self._owned_pods(deploy)
        for pod in pods:
            if pod["metadata"]["labels"].get("pod-template-hash") != h:
                self._remove("Pod", (ns, pod["metadata"]["name"]))
        pods = [p for p in pods if p["metadata"]["labels"].get("pod-template-hash") == h]
        want = int(deploy["spec"].get("replicas", 1))
        for pod in pods[want:]:
            self._remove("Pod", (ns, pod["metadata"]["name"]))
        for _ in range(want - len(pods)):
            self._spawn(deploy, h)
        deploy["status"] = deployment_status(deploy, h, want, self._now())
        self._changed("Deployment")  # its status, in place

    def _spawn(self, owner: dict[str, Any], h: str, template: dict[str, Any] | None = None,
               owner_kind: str = "ReplicaSet") -> None:
        meta = owner["metadata"]
        ns = meta["namespace"]
        index = self._spawned.get((ns, meta["name"]), 0)
        self._spawned[(ns, meta["name"])] = index + 1
        rng = random.Random(f"{self.seed}/{ns}/{meta['name']}/{h}/{index}")
        stem = f"{meta['name']}-{h}" if owner_kind == "ReplicaSet" else meta["name"]
        while True:
            name = f"{stem}-{random_suffix(rng)}"
            if (ns, name) not in self._objects.get("Pod", {}):
                break
        template = template or clone(owner["spec"]["template"])
        pod_meta = template.get("metadata") or {}
        extra = ({"pod-template-hash": h} if owner_kind == "ReplicaSet" else
                 {"controller-revision-hash": h, "pod-template-generation": "1"})
        labels = dict(pod_meta.get("labels") or {}, **extra)
        ref = ({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": stem,
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{meta['uid']}/{h}"))}
               if owner_kind == "ReplicaSet" else
               {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": meta["name"],
                "uid": meta["uid"]})
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **{k: v for k, v in pod_meta.items() if k in {"annotations"}},
                "name": name,
                "namespace": ns,
                "labels": labels,
                "uid": self._uid(),
                "creationTimestamp": self._now(),
                "generation": 1,
                "ownerReferences": [dict(ref, controller=True, blockOwnerDeletion=True)],
            },
            "spec": template["spec"],
        }
        self._admit_pod(pod)
        info = kind_info("Pod")
        record_update(info, None, pod, "kube-controller-manager", pod["metadata"][
            "creationTimestamp"])
        record_status(info, pod, "kubelet", pod["metadata"]["creationTimestamp"])
        self._write(info, (ns, name), pod)
