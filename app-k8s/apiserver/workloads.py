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
import time
import uuid
from collections.abc import Callable
from typing import Any

from netarena.k8s.apiserver.kinds import Invalid, KindInfo, clone, kind_info

__all__ = ["WorkloadController"]

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_POD_NET = ipaddress.ip_network("10.244.0.0/16")
_SERVICE_NET = ipaddress.ip_network("10.96.0.0/12")
RESERVED_SERVICE_IPS = frozenset({"10.96.0.1", "10.96.0.10"})
FIRST_POD_IP = int(_POD_NET.network_address) + 2


class WorkloadController:
    """Mixin: allocation and controller behaviour for ``ObjectStore`` (not used alone)."""

    seed: int
    node_name: str
    _clock: Callable[[], float]
    _objects: dict[str, dict[tuple[str, str], dict[str, Any]]]
    _revision: int
    _rng: random.Random
    _next_pod_ip: int
    _service_ips: set[str]
    _spawned: dict[tuple[str, str], int]

    def _uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _now(self) -> str:
        return rfc3339(self._clock())

    def _write(self, info: KindInfo, key: tuple[str, str], obj: dict[str, Any]) -> None:
        self._revision += 1
        obj["metadata"]["resourceVersion"] = str(self._revision)
        self._objects.setdefault(info.kind, {})[key] = obj

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
                if want not in self._service_ips:
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

    def _admit_pod(self, pod: dict[str, Any]) -> None:
        ip = str(ipaddress.ip_address(self._next_pod_ip))
        self._next_pod_ip += 1
        while self._next_pod_ip % 256 in (0, 1, 255):
            self._next_pod_ip += 1
        spec = pod["spec"]
        spec.setdefault("nodeName", self.node_name)
        spec.setdefault("serviceAccountName", "default")
        now = pod["metadata"]["creationTimestamp"]
        pod["status"] = _running_status(spec, ip, now)

    # ------------------------------------------------------------ workloads
    def _template_hash(self, deploy: dict[str, Any]) -> str:
        text = json.dumps(deploy["spec"]["template"], sort_keys=True)
        meta = deploy["metadata"]
        blob = f"{self.seed}/{meta['namespace']}/{meta['name']}/{text}"
        return hashlib.sha256(blob.encode()).hexdigest()[:10]

    def _owned_pods(self, deploy: dict[str, Any]) -> list[dict[str, Any]]:
        prefix = f"{deploy['metadata']['name']}-"
        ns = deploy["metadata"]["namespace"]
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
                del self._objects["Pod"][(ns, pod["metadata"]["name"])]
                self._revision += 1
        pods = [p for p in pods if p["metadata"]["labels"].get("pod-template-hash") == h]
        want = int(deploy["spec"].get("replicas", 1))
        for pod in pods[want:]:
            del self._objects["Pod"][(ns, pod["metadata"]["name"])]
            self._revision += 1
        for _ in range(want - len(pods)):
            self._spawn(deploy, h)
        deploy["status"] = _deployment_status(deploy, h, want, self._now())

    def _spawn(self, deploy: dict[str, Any], h: str) -> None:
        meta = deploy["metadata"]
        ns = meta["namespace"]
        index = self._spawned.get((ns, meta["name"]), 0)
        self._spawned[(ns, meta["name"])] = index + 1
        rng = random.Random(f"{self.seed}/{ns}/{meta['name']}/{h}/{index}")
        while True:
            suffix = "".join(rng.choice(_SAFE_ALPHABET) for _ in range(5))
            name = f"{meta['name']}-{h}-{suffix}"
            if (ns, name) not in self._objects.get("Pod", {}):
                break
        template = clone(deploy["spec"]["template"])
        pod_meta = template.get("metadata") or {}
        labels = dict(pod_meta.get("labels") or {}, **{"pod-template-hash": h})
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
                "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": f"{meta['name']}-{h}",
                    "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{meta['uid']}/{h}")),
                    "controller": True, "blockOwnerDeletion": True,
                }],
            },
            "spec": template["spec"],
        }
        self._admit_pod(pod)
        self._write(kind_info("Pod"), (ns, name), pod)



def rfc3339(ts: float) -> str:
    """Format seconds since the epoch as the API's timestamp (``2024-05-01T12:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))

def _running_status(spec: dict[str, Any], ip: str, now: str) -> dict[str, Any]:
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": "172.18.0.2",
        "hostIPs": [{"ip": "172.18.0.2"}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": "BestEffort",
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": "",
                "containerID": "containerd://" + hashlib.sha256(
                    f"{ip}/{c['name']}".encode()).hexdigest(),
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
                "lastState": {},
            }
            for c in spec.get("containers") or []
        ],
    }


def _deployment_status(deploy: dict[str, Any], h: str, ready: int, now: str) -> dict[str, Any]:
    meta = deploy["metadata"]
    rs = f"{meta['name']}-{h}"
    return {
        "observedGeneration": meta.get("generation", 1),
        "replicas": ready,
        "updatedReplicas": ready,
        "readyReplicas": ready,
        "availableReplicas": ready,
        "conditions": [
            {"type": "Available", "status": "True", "lastUpdateTime": now,
             "lastTransitionTime": now, "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            {"type": "Progressing", "status": "True", "lastUpdateTime": now,
             "lastTransitionTime": now, "reason": "NewReplicaSetAvailable",
             "message": f'ReplicaSet "{rs}" has successfully progressed.'},
        ],
    }
