"""What the kubelet and controllers report: pod and Deployment status, node facts.

A real cluster fills these asynchronously; the store applies them when it admits a pod
or reconciles a Deployment, so every pod is Running and Ready with container statuses,
image digests and a QoS class derived from its resources.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Any

__all__ = ["cluster_ca", "deployment_status", "internal_ip", "running_status", "tolerates"]


def cluster_ca(seed: int) -> str:
    """A PEM certificate block standing for the cluster's CA (stable per seed)."""
    body = base64.b64encode(hashlib.sha512(f"ca/{seed}".encode()).digest() * 12).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"


def internal_ip(node: dict[str, Any]) -> str:
    """A node's ``InternalIP`` address."""
    for addr in (node.get("status") or {}).get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return str(addr["address"])
    return "172.18.0.2"


def tolerates(spec: dict[str, Any], node: dict[str, Any]) -> bool:
    """Whether a pod spec tolerates every NoSchedule taint of ``node``."""
    tolerations = spec.get("tolerations") or []
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(t.get("operator") == "Exists" and not t.get("key")
                   or t.get("key") == taint.get("key") for t in tolerations):
            return False
    return True



def running_status(spec: dict[str, Any], ip: str, host_ip: str, now: str) -> dict[str, Any]:
    """A pod's status once its containers run and pass readiness (since ``now``)."""
    conditions = [
        {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
        for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                  "PodScheduled")
    ]
    return {
        "phase": "Running",
        "conditions": conditions,
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": now,
        "qosClass": _qos_class(spec),
        "containerStatuses": [
            {
                "name": c["name"],
                "image": c.get("image", ""),
                "imageID": _image_id(c.get("image", "")),
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


def _qos_class(spec: dict[str, Any]) -> str:
    resources = [c.get("resources") or {} for c in spec.get("containers") or []]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    guaranteed = all(r.get("limits") and all(
        (r.get("requests") or r["limits"]).get(k) == v for k, v in r["limits"].items())
        and set(r["limits"]) >= {"cpu", "memory"} for r in resources)
    return "Guaranteed" if guaranteed else "Burstable"


def _image_id(image: str) -> str:
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    if "/" not in repo:
        repo = f"docker.io/library/{repo}"
    elif "." not in repo.split("/", 1)[0]:
        repo = f"docker.io/{repo}"
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


def deployment_status(deploy: dict[str, Any], h: str, ready: int, now: str) -> dict[str, Any]:
    """A rolled-out Deployment's status (``ready`` replicas of template hash ``h``)."""
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
