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
    external = ",".join(spec.get("externalIPs") or []) or "<none>"
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
    return [_age(ev, now), ev.get("type", ""), ev.get("reason", ""),
            f"{str(obj.get('kind', '')).lower()}/{obj.get('name', '')}", ev.get("message", "")]


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
    columns, row_of = _SPECS.get(info.kind, ([_NAME, _AGE], lambda o, n: [
        o["metadata"]["name"], _age(o, n)]))
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
