"""The events a deploy leaves: scheduler, kubelet and controller reports, kept for an hour.

A cluster records an Event when the scheduler places a pod, the kubelet pulls an image
and starts a container, and the Deployment and ReplicaSet controllers scale; the API
server drops events after an hour. ``deploy_events`` writes those a freshly deployed
application would still show, timed a few seconds apart after the deploy.
"""

from __future__ import annotations

import hashlib
import random
from typing import TYPE_CHECKING, Any

from netarena.k8s.apiserver.names import rfc3339

if TYPE_CHECKING:
    from netarena.k8s.apiserver.profile import ClusterProfile
    from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["deploy_events", "event"]


def event(obj: dict[str, Any], reason: str, message: str, component: str, at: float,
          host: str | None = None, field_path: str | None = None) -> dict[str, Any]:
    """One ``v1`` Event about ``obj`` (a stored object), reported by ``component`` at ``at``."""
    meta = obj["metadata"]
    involved = {"kind": obj["kind"], "namespace": meta["namespace"], "name": meta["name"],
                "uid": meta.get("uid", ""), "apiVersion": obj["apiVersion"],
                "resourceVersion": meta.get("resourceVersion", "")}
    if field_path:
        involved["fieldPath"] = field_path
    digest = hashlib.sha256(f"{meta.get('uid')}/{reason}/{at}".encode()).hexdigest()[:16]
    stamp = rfc3339(at)
    source = {"component": component, **({"host": host} if host else {})}
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{digest}", "namespace": meta["namespace"]},
        "involvedObject": involved, "reason": reason, "message": message, "source": source,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": "Normal",
        "reportingComponent": component, "reportingInstance": host or "",
    }


def _pod_events(pod: dict[str, Any], start: float, rng: random.Random) -> list[
        tuple[float, dict[str, Any]]]:
    meta, node = pod["metadata"], pod["spec"].get("nodeName", "")
    out = [(start, event(pod, "Scheduled", f"Successfully assigned {meta['namespace']}/"
                         f"{meta['name']} to {node}", "default-scheduler", start))]
    t = start + rng.uniform(0.5, 1.5)
    for c in pod["spec"].get("containers") or []:
        image, path = c.get("image", ""), f"spec.containers{{{c['name']}}}"
        pull = rng.uniform(1.2, 9.0)
        size = rng.randint(8_000_000, 160_000_000)
        steps = [("Pulling", f'Pulling image "{image}"', 0.0),
                 ("Pulled", f'Successfully pulled image "{image}" in {pull:.3f}s ({pull:.3f}s '
                            f"including waiting). Image size: {size} bytes.", pull),
                 ("Created", f"Created container: {c['name']}", 0.2),
                 ("Started", f"Started container {c['name']}", 0.1)]
        for reason, message, delay in steps:
            t += delay
            out.append((t, event(pod, reason, message, "kubelet", t, node, path)))
    return out


def deploy_events(store: ObjectStore, profile: ClusterProfile,
                  objects: list[dict[str, Any]]) -> list[tuple[float, dict[str, Any]]]:
    """Events for the Deployments among ``objects`` and their pods, oldest first.

    Returns:
        ``(time, Event)`` pairs; create each inside ``store.at(time)``.
    """
    rng = random.Random(f"events/{profile.deployed_at}")
    timed: list[tuple[float, dict[str, Any]]] = []
    start = profile.deployed_at
    listed: dict[tuple[str, str], list[dict[str, Any]]] = {}

    def listing(kind: str, ns: str) -> list[dict[str, Any]]:
        """Read once per namespace (copying every pod per deployment was quadratic)."""
        if (kind, ns) not in listed:
            listed[kind, ns] = store.list(kind, ns)
        return listed[kind, ns]

    for obj in objects:
        if obj.get("kind") != "Deployment":
            continue
        ns = obj["metadata"].get("namespace", "default")
        deploy = store.get("Deployment", ns, obj["metadata"]["name"])
        for rs in listing("ReplicaSet", ns):
            if rs["metadata"]["ownerReferences"][0]["uid"] != deploy["metadata"]["uid"]:
                continue
            n = rs["spec"]["replicas"]
            timed.append((start, event(deploy, "ScalingReplicaSet",
                                       f"Scaled up replica set {rs['metadata']['name']} from 0 "
                                       f"to {n}", "deployment-controller", start)))
            for pod in listing("Pod", ns):
                if pod["metadata"]["ownerReferences"][0]["name"] != rs["metadata"]["name"]:
                    continue
                timed.append((start, event(rs, "SuccessfulCreate",
                                           f"Created pod: {pod['metadata']['name']}",
                                           "replicaset-controller", start)))
                timed.extend(_pod_events(pod, start + rng.uniform(0.01, 0.2), rng))
    timed.sort(key=lambda pair: pair[0])
    return timed
