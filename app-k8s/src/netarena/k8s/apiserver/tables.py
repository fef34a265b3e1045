"""Server-side printing: ``meta.k8s.io/v1`` Table responses, column for column like upstream.

kubectl asks for a Table on plain ``get`` and ``-o wide``; the server chooses the columns.
Columns with priority 1 appear only with ``-o wide``. Ages are rendered with upstream's
``HumanDuration`` rules so output reads like a real cluster's.
"""

from __future__ import annotations

import calendar
import time
from collections.abc import Callable
from typing import Any

from netarena.k8s.apiserver.kinds import KindInfo

__all__ = ["human_duration", "render_table"]

Row = list[Any]
Columns = list[tuple[str, str, int]]


def human_duration(seconds: float) -> str:
    """Format an age like kubectl (``45s``, ``5m30s``, ``3h``, ``2d4h``)."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m" if s % 60 == 0 else f"{m}m{s % 60}s"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h" if m % 60 == 0 else f"{h}h{m % 60}m"
    if h < 48:
        return f"{h}h"
    if h < 24 * 8:
        return f"{h // 24}d" if h % 24 == 0 else f"{h // 24}d{h % 24}h"
    if h < 24 * 365 * 2:
        return f"{h // 24}d"
    if h < 24 * 365 * 8:
        return f"{h // 24 // 365}y{(h // 24) % 365}d"
    return f"{h // 24 // 365}y"


def _age(obj: dict[str, Any], now: float) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return "<unknown>"
    created = calendar.timegm(time.strptime(ts, "%Y-%m-%dT%H:%M:%SZ"))
    return human_duration(now - created)


def _selector_text(sel: dict[str, Any] | None) -> str:
    if not sel:
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for e in sel.get("matchExpressions") or []:
        op, key, values = e.get("operator"), e.get("key"), e.get("values") or []
        if op == "In":
            parts.append(f"{key} in ({','.join(values)})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({','.join(values)})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts) or "<none>"


def _pod_row(pod: dict[str, Any], now: float) -> Row:
    status = pod.get("status") or {}
    containers = pod["spec"].get("containers") or []
    statuses = status.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    phase = "Terminating" if pod["metadata"].get("deletionTimestamp") else status.get(
        "phase", "Pending")
    return [pod["metadata"]["name"], f"{ready}/{len(containers)}", phase, str(restarts),
            _age(pod, now), status.get("podIP") or "<none>",
            pod["spec"].get("nodeName") or "<none>", "<none>", "<none>"]


def _service_ports(spec: dict[str, Any]) -> str:
    out = []
    for p in spec.get("ports") or []:
        text = str(p.get("port"))
        if p.get("nodePort"):
            text += f":{p['nodePort']}"
        out.append(f"{text}/{p.get('protocol', 'TCP')}")
    return ",".join(out) or "<none>"


def _service_row(svc: dict[str, Any], now: float) -> Row:
    spec = svc.get("spec") or {}
    ingress = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    external = ",".join([i.get("ip") or i.get("hostname", "") for i in ingress]
                        + list(spec.get("externalIPs") or [])) or (
        "<pending>" if spec.get("type") == "LoadBalancer" else "<none>")
    selector = ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items()))
    return [svc["metadata"]["name"], spec.get("type", "ClusterIP"),
            spec.get("clusterIP") or "<none>", external, _service_ports(spec), _age(svc, now),
            selector or "<none>"]


def _deployment_row(d: dict[str, Any], now: float) -> Row:
    spec, status = d.get("spec") or {}, d.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [d["metadata"]["name"],
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0), _age(d, now),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            _selector_text(spec.get("selector"))]


def _replicaset_row(rs: dict[str, Any], now: float) -> Row:
    spec, status = rs.get("spec") or {}, rs.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return [rs["metadata"]["name"], spec.get("replicas", 0), status.get("replicas", 0),
            status.get("readyReplicas", 0), _age(rs, now),
            ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            _selector_text(spec.get("selector"))]


def _netpol_row(np: dict[str, Any], now: float) -> Row:
    return [np["metadata"]["name"], _selector_text((np.get("spec") or {}).get("podSelector")),
            _age(np, now)]


def _namespace_row(ns: dict[str, Any], now: float) -> Row:
    return [ns["metadata"]["name"], (ns.get("status") or {}).get("phase", "Active"),
            _age(ns, now)]


def _endpoints_row(ep: dict[str, Any], now: float) -> Row:
    addrs = [f"{a['ip']}:{p['port']}" for s in ep.get("subsets") or []
             for p in s.get("ports") or [] for a in s.get("addresses") or []]
    text = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [ep["metadata"]["name"], text or "<none>", _age(ep, now)]


def _slice_row(es: dict[str, Any], now: float) -> Row:
    ports = ",".join(str(p.get("port")) for p in es.get("ports") or []) or "<unset>"
    addrs = [a for e in es.get("endpoints") or [] for a in e.get("addresses") or []]
    text = ",".join(addrs[:3]) + (f" + {len(addrs) - 3} more..." if len(addrs) > 3 else "")
    return [es["metadata"]["name"], es.get("addressType", "IPv4"), ports, text or "<unset>",
            _age(es, now)]


def _event_row(ev: dict[str, Any], now: float) -> Row:
    obj = ev.get("involvedObject") or {}
    last = ev.get("lastTimestamp") or ev.get("eventTime")
    seen = _age({"metadata": {"creationTimestamp": last[:19] + "Z"}}, now) if last else _age(
        ev, now)
    return [seen, ev.get("type", ""), ev.get("reason", ""),
            f"{str(obj.get('kind', '')).lower()}/{obj.get('name', '')}", ev.get("message", "")]


def _node_row(node: dict[str, Any], now: float) -> Row:
    status, labels = node.get("status") or {}, node["metadata"].get("labels") or {}
    ready: dict[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    state = "Ready" if ready.get("status") == "True" else "NotReady"
    roles = ",".join(sorted(k.split("/", 1)[1] for k in labels
                            if k.startswith("node-role.kubernetes.io/"))) or "<none>"
    info = status.get("nodeInfo") or {}
    addrs = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    return [node["metadata"]["name"], state, roles, _age(node, now),
            info.get("kubeletVersion", ""), addrs.get("InternalIP", "<none>"),
            addrs.get("ExternalIP", "<none>"), info.get("osImage", ""),
            info.get("kernelVersion", ""), info.get("containerRuntimeVersion", "")]


def _count_row(field: str) -> Callable[[dict[str, Any], float], Row]:
    def row(obj: dict[str, Any], now: float) -> Row:
        return [obj["metadata"]["name"], len(obj.get(field) or {}) + len(
            obj.get("binaryData") or {}) * (field == "data"), _age(obj, now)]
    return row


def _daemonset_row(ds: dict[str, Any], now: float) -> Row:
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    pod_spec = (spec.get("template") or {}).get("spec") or {}
    containers = pod_spec.get("containers") or []
    selector = ",".join(f"{k}={v}" for k, v in sorted(
        (pod_spec.get("nodeSelector") or {}).items())) or "<none>"
    return [ds["metadata"]["name"], status.get("desiredNumberScheduled", 0),
            status.get("currentNumberScheduled", 0), status.get("numberReady", 0),
            status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
            selector, _age(ds, now), ",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers),
            _selector_text(spec.get("selector"))]


def _binding_row(b: dict[str, Any], now: float) -> Row:
    ref = b.get("roleRef") or {}
    subjects = b.get("subjects") or []

    def names(kind: str) -> str:
        return ",".join((f"{s.get('namespace')}/{s['name']}" if kind == "ServiceAccount"
                         else s["name"]) for s in subjects if s.get("kind") == kind)
    return [b["metadata"]["name"], f"{ref.get('kind')}/{ref.get('name')}", _age(b, now),
            names("User"), names("Group"), names("ServiceAccount")]


def _created_row(obj: dict[str, Any], now: float) -> Row:
    return [obj["metadata"]["name"], obj["metadata"].get("creationTimestamp", "")]


def _lease_row(lease: dict[str, Any], now: float) -> Row:
    return [lease["metadata"]["name"], (lease.get("spec") or {}).get("holderIdentity", ""),
            _age(lease, now)]


def _storage_class_row(sc: dict[str, Any], now: float) -> Row:
    default = (sc["metadata"].get("annotations") or {}).get(
        "storageclass.kubernetes.io/is-default-class") == "true"
    return [sc["metadata"]["name"] + (" (default)" if default else ""),
            sc.get("provisioner", ""), sc.get("reclaimPolicy", "Delete"),
            sc.get("volumeBindingMode", "Immediate"),
            str(bool(sc.get("allowVolumeExpansion"))).lower(), _age(sc, now)]


def _priority_row(pc: dict[str, Any], now: float) -> Row:
    return [pc["metadata"]["name"], pc.get("value", 0),
            str(bool(pc.get("globalDefault"))).lower(), _age(pc, now),
            pc.get("preemptionPolicy", "PreemptLowerPriority")]


def _ingress_row(ing: dict[str, Any], now: float) -> Row:
    spec = ing.get("spec") or {}
    hosts = ",".join(r.get("host", "*") for r in spec.get("rules") or []) or "*"
    lb = ((ing.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
    address = ",".join(a.get("ip") or a.get("hostname", "") for a in lb)
    ports = "80, 443" if spec.get("tls") else "80"
    return [ing["metadata"]["name"], spec.get("ingressClassName") or "<none>", hosts,
            address, ports, _age(ing, now)]


_NAME = ("Name", "string", 0)
_AGE = ("Age", "string", 0)
_SPECS: dict[str, tuple[Columns, Callable[[dict[str, Any], float], Row]]] = {
    "Pod": ([_NAME, ("Ready", "string", 0), ("Status", "string", 0),
             ("Restarts", "string", 0), _AGE, ("IP", "string", 1), ("Node", "string", 1),
             ("Nominated Node", "string", 1), ("Readiness Gates", "string", 1)], _pod_row),
    "Service": ([_NAME, ("Type", "string", 0), ("Cluster-IP", "string", 0),
                 ("External-IP", "string", 0), ("Port(s)", "string", 0), _AGE,
                 ("Selector", "string", 1)], _service_row),
    "Deployment": ([_NAME, ("Ready", "string", 0), ("Up-to-date", "string", 0),
                    ("Available", "string", 0), _AGE, ("Containers", "string", 1),
                    ("Images", "string", 1), ("Selector", "string", 1)], _deployment_row),
    "ReplicaSet": ([_NAME, ("Desired", "integer", 0), ("Current", "integer", 0),
                    ("Ready", "integer", 0), _AGE, ("Containers", "string", 1),
                    ("Images", "string", 1), ("Selector", "string", 1)], _replicaset_row),
    "NetworkPolicy": ([_NAME, ("Pod-Selector", "string", 0), _AGE], _netpol_row),
    "Namespace": ([_NAME, ("Status", "string", 0), _AGE], _namespace_row),
    "Endpoints": ([_NAME, ("Endpoints", "string", 0), _AGE], _endpoints_row),
    "EndpointSlice": ([_NAME, ("AddressType", "string", 0), ("Ports", "string", 0),
                       ("Endpoints", "string", 0), _AGE], _slice_row),
    "Event": ([("Last Seen", "string", 0), ("Type", "string", 0), ("Reason", "string", 0),
               ("Object", "string", 0), ("Message", "string", 0)], _event_row),
    "Node": ([_NAME, ("Status", "string", 0), ("Roles", "string", 0), _AGE,
              ("Version", "string", 0), ("Internal-IP", "string", 1),
              ("External-IP", "string", 1), ("OS-Image", "string", 1),
              ("Kernel-Version", "string", 1), ("Container-Runtime", "string", 1)], _node_row),
    "ConfigMap": ([_NAME, ("Data", "integer", 0), _AGE], _count_row("data")),
    "Secret": ([_NAME, ("Type", "string", 0), ("Data", "integer", 0), _AGE],
               lambda o, n: [o["metadata"]["name"], o.get("type", "Opaque"),
                             len(o.get("data") or {}), _age(o, n)]),
    "ServiceAccount": ([_NAME, ("Secrets", "integer", 0), _AGE], _count_row("secrets")),
    "DaemonSet": ([_NAME, ("Desired", "integer", 0), ("Current", "integer", 0),
                   ("Ready", "integer", 0), ("Up-to-date", "integer", 0),
                   ("Available", "integer", 0), ("Node Selector", "string", 0), _AGE,
                   ("Containers", "string", 1), ("Images", "string", 1),
                   ("Selector", "string", 1)], _daemonset_row),
    "RoleBinding": ([_NAME, ("Role", "string", 0), _AGE, ("Users", "string", 1),
                     ("Groups", "string", 1), ("ServiceAccounts", "string", 1)], _binding_row),
    "ClusterRoleBinding": ([_NAME, ("Role", "string", 0), _AGE, ("Users", "string", 1),
                            ("Groups", "string", 1), ("ServiceAccounts", "string", 1)],
                           _binding_row),
    "Role": ([_NAME, ("Created At", "date", 0)], _created_row),
    "ClusterRole": ([_NAME, ("Created At", "date", 0)], _created_row),
    "Lease": ([_NAME, ("Holder", "string", 0), _AGE], _lease_row),
    "StorageClass": ([_NAME, ("Provisioner", "string", 0), ("ReclaimPolicy", "string", 0),
                      ("VolumeBindingMode", "string", 0),
                      ("AllowVolumeExpansion", "string", 0), _AGE], _storage_class_row),
    "PriorityClass": ([_NAME, ("Value", "integer", 0), ("Global-Default", "boolean", 0),
                       _AGE, ("PreemptionPolicy", "string", 0)], _priority_row),
    "Ingress": ([_NAME, ("Class", "string", 0), ("Hosts", "string", 0),
                 ("Address", "string", 0), ("Ports", "string", 0), _AGE], _ingress_row),
}


def _row_object(obj: dict[str, Any], include: str) -> dict[str, Any]:
    if include == "Object":
        return obj
    if include == "None":
        return {}
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata", {})}


def render_table(
    info: KindInfo,
    objects: list[dict[str, Any]],
    resource_version: str,
    include_object: str = "Metadata",
    now: float | None = None,
) -> dict[str, Any]:
    """Render ``objects`` of kind ``info`` as a ``meta.k8s.io/v1`` Table.

    Args:
        info: The kind, which chooses the columns.
        objects: The rows, already filtered and sorted.
        resource_version: The list's resourceVersion.
        include_object: ``Object``, ``Metadata`` (the API default) or ``None``.
        now: Seconds since the epoch for ages (defaults to the wall clock).
    """
    when = time.time() if now is None else now
    columns, row_of = _SPECS.get(info.kind, ([_NAME, ("Created At", "date", 0)],
                                             _created_row))
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": [
            {"name": name, "type": typ, "format": "name" if name == "Name" else "",
             "description": "", "priority": prio}
            for name, typ, prio in columns
        ],
        "rows": [{"cells": row_of(o, when), "object": _row_object(o, include_object)}
                 for o in objects],
    }
