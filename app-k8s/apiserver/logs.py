"""Container logs: what ``kubectl logs`` shows for a pod of the running application.

Each container prints its start-up lines when the pod starts, then a request log at a
steady rate (health checks, the load generator's traffic), timestamped from the pod's
start to now. Lines are drawn from the pod's name, so the same pod always logs the same.
"""

from __future__ import annotations

import calendar
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from netarena.k8s.apiserver.kinds import BadRequest

__all__ = ["container_log", "follow_log"]

_STARTUP = {
    "frontend": ['{"message":"starting server on :8080","severity":"info"}'],
    "redis": ["1:M * Server initialized", "1:M * Ready to accept connections tcp"],
    "loadgenerator": ["[INFO] Starting Locust 2.32.4", "[INFO] Ramping to 10 users at a rate "
                      "of 1.00 per second"],
}
_REQUEST = {
    "frontend": '{"http.req.method":"GET","http.req.path":"/","http.resp.status":200,'
                '"message":"request complete","severity":"debug"}',
    "redis": "1:M * 1 changes in 3600 seconds. Saving...",
    "loadgenerator": "[INFO] GET /product/OLJCESPC7Z 200",
}
_GRPC_START = '{"message":"starting grpc server at :%d","severity":"info"}'
_GRPC_REQUEST = '{"message":"request served","method":"%s","severity":"info"}'


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e9):09d}Z"


def _parse(ts: str) -> float:
    return float(calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")))


def container_log(pod: dict[str, Any], params: dict[str, str], now: float) -> str:
    """The log of one container of ``pod``.

    ``params`` are the query parameters kubectl sends: ``container``, ``tailLines``,
    ``timestamps``, ``sinceSeconds``, ``previous``.

    Raises:
        BadRequest: Unknown container, or ``previous`` for a container that never restarted.
    """
    containers = [c["name"] for c in pod["spec"].get("containers") or []]
    name = params.get("container") or containers[0]
    if name not in containers:
        raise BadRequest(f"container {name} is not valid for pod {pod['metadata']['name']}")
    if params.get("previous") == "true":
        raise BadRequest(f'previous terminated container "{name}" in pod '
                         f'"{pod["metadata"]["name"]}" not found')
    app = (pod["metadata"].get("labels") or {}).get("app", name)
    key = "redis" if app.startswith("redis") else app
    ports = [p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or []]
    start = _parse((pod.get("status") or {}).get("startTime") or pod["metadata"][
        "creationTimestamp"])
    rng = random.Random(pod["metadata"]["name"])
    lines = [(start + 0.4 + i * 0.01, text) for i, text in enumerate(
        _STARTUP.get(key) or [_GRPC_START % (ports[0] if ports else 8080)])]
    request = _REQUEST.get(key) or _GRPC_REQUEST % app
    since = now - float(params["sinceSeconds"]) if params.get("sinceSeconds") else start
    t = max(start + 5, since - rng.uniform(0, 30), now - 600)
    while t < now:
        lines.append((t, request))
        t += rng.uniform(5, 30)
    lines = [(ts, text) for ts, text in lines if ts >= since]
    tail = int(params.get("tailLines") or -1)
    if tail >= 0:
        lines = lines[len(lines) - tail:] if tail else []
    show_ts = params.get("timestamps") == "true"
    return "".join(f"{_stamp(ts) + ' ' if show_ts else ''}{text}\n" for ts, text in lines)


def follow_log(pod: dict[str, Any], params: dict[str, str], clock: Callable[[], float],
               stop: threading.Event) -> Iterator[str]:
    """``kubectl logs -f``: the log so far, then each new line as the container writes it.

    Ends when ``stop`` is set (the client's time limit ends it first).
    """
    yield container_log(pod, params, clock())
    app = (pod["metadata"].get("labels") or {}).get("app", "")
    line = _REQUEST.get("redis" if app.startswith("redis") else app) or _GRPC_REQUEST % app
    rng = random.Random(pod["metadata"]["name"] + "/follow")
    show_ts = params.get("timestamps") == "true"
    while not stop.wait(rng.uniform(5, 30)):
        yield f"{_stamp(clock()) + ' ' if show_ts else ''}{line}\n"
