"""Container logs generated from the cluster as it was when each line was written.

Each container prints its start-up lines when the pod starts, then its requests at its
service's rate (``applogs``). What a request does is decided by the cluster's state at
that moment: ``LogHistory`` keeps every state the API server went through (the faulted
deploy, then each write), and a service's calls to the dependencies its environment
names (``PRODUCT_CATALOG_SERVICE_ADDR=productcatalogservice:3550``) are answered by the
same policy engine and DNS model as ``kubectl exec`` probes. A blocked call logs the
caller's real error with the callee's address; a service no caller can reach logs no
requests; CoreDNS logs the queries that reach it (the ``log`` plugin's format). Lines
written before a fix keep their errors, lines after it are clean: timestamps advance with
the wall clock. Request times are drawn per pod and time slot, so the same pod shows the
same lines on every read.
"""

from __future__ import annotations

import calendar
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from netarena.k8s.apiserver.coredns import CLUSTER_DOMAIN, DNS_LABELS
from netarena.k8s.apiserver.kinds import BadRequest
from netarena.k8s.pods.applogs import (
    DEFAULT_PERIOD_S,
    PERIOD_S,
    Call,
    request_lines,
    startup_lines,
    system_lines,
)
from netarena.k8s.pods.probes import ClusterView, outcome
from netarena.k8s.policy import PodView

__all__ = ["LogHistory", "container_log", "follow_log", "WINDOW_S"]

WINDOW_S = 600.0
"""How far back request lines go (start-up lines are always kept)."""
_DNS_PERIOD_S = 4.0
_COREDNS_START = (".:53", "[INFO] plugin/reload: Running configuration SHA512 = "
                  "591cf328cccc12bc490481273e738df59329c62c0b729d94e8b61db9961c2fa5f046dd37f1cf"
                  "888b953814040d180f52594972691cd6ff41be96639138a43908",
                  "CoreDNS-1.12.1", "linux/amd64, go1.24.1, 707c7c1")
_SYSTEM_NAMESPACES = ("kube-system", "local-path-storage")
"""Where the cluster's own components run (they log their start, not requests)."""
Objects = dict[str, list[dict[str, Any]]]


def _calls_of(pod: dict[str, Any]) -> list[tuple[str, int]]:
    """``(host, port)`` of each dependency the pod's environment names (``*_ADDR``)."""
    out = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        for env in container.get("env") or []:
            host, _, port = str(env.get("value") or "").rpartition(":")
            if env.get("name", "").endswith("_ADDR") and host and port.isdigit():
                out.append((host, int(port)))
    return out


class _State:
    """One state of the cluster and, computed on demand, what each pod's calls do in it."""

    def __init__(self, objects: Objects) -> None:
        self.objects = objects
        self._view: ClusterView | None = None
        self._calls: dict[str, dict[str, Call]] = {}
        self._reached: dict[str, bool] | None = None

    @property
    def view(self) -> ClusterView:
        if self._view is None:
            self._view = ClusterView(self.objects)
        return self._view

    def calls(self, pod: dict[str, Any]) -> dict[str, Call]:
        """What each call of ``pod`` does now, and behind it what its callee's calls do.

        A callee whose own dependency fails answers with that failure.
        """
        meta = pod["metadata"]
        key = f"{meta.get('namespace')}/{meta['name']}"
        if key not in self._calls:
            self._calls[key] = {}  # a cycle of calls ends here
            src = PodView.from_obj(pod)
            origin = str((pod.get("status") or {}).get("podIP") or "10.244.0.1")
            found = {}
            for host, port in _calls_of(pod):
                state, ip = outcome(self.view, src, host, port)
                callee = self._pod_of(host.split(".")[0], meta.get("namespace"))
                behind = tuple(self.calls(callee).values()) if callee is not None else ()
                found[host] = Call(host, port, state, ip, origin, behind)
            self._calls[key] = found
        return self._calls[key]

    def _pod_of(self, app: str, namespace: str | None) -> dict[str, Any] | None:
        return next((p for p in self.objects.get("Pod", [])
                     if p["metadata"].get("namespace") == namespace
                     and (p["metadata"].get("labels") or {}).get("app") == app), None)

    def reached(self, app: str, namespace: str) -> bool:
        """Whether requests arrive at ``app``: traffic flows to it from a client.

        Clients (services nobody calls: the load generator) are always active; a service
        is active when an active caller's call to it goes through, so a blocked frontend
        also silences everything behind it.
        """
        if self._reached is None:
            pods = [p for p in self.objects.get("Pod", [])
                    if p["metadata"].get("namespace") == namespace
                    and (p["metadata"].get("labels") or {}).get("app")]
            app_of = {id(p): p["metadata"]["labels"]["app"] for p in pods}
            called = {host.split(".")[0] for p in pods for host in self.calls(p)}
            active = {a for a in app_of.values() if a not in called}
            grew = True
            while grew:
                grew = False
                for pod in pods:
                    if app_of[id(pod)] not in active:
                        continue
                    for host, call in self.calls(pod).items():
                        name = host.split(".")[0]
                        if call.ok and name not in active:
                            active.add(name)
                            grew = True
            self._reached = {a: a in active for a in set(app_of.values()) | called}
        return self._reached.get(app, True)


class LogHistory:
    """The states the cluster went through, with the time each began.

    Args:
        objects: Reads every ``Pod``, ``Namespace``, ``NetworkPolicy`` and ``Service``.
        revision: The store's revision (a new state is recorded only when it moved).
    """

    def __init__(self, objects: Callable[[], Objects], revision: Callable[[], int]) -> None:
        self._objects = objects
        self._revision = revision
        self._states: list[tuple[float, int, _State]] = []
        self._lock = threading.Lock()

    def note(self, now: float) -> None:
        """Record the current state if it changed (the first one holds since the deploy)."""
        revision = self._revision()
        with self._lock:
            if self._states and self._states[-1][1] == revision:
                return
            start = now if self._states else float("-inf")
            self._states.append((start, revision, _State(self._objects())))

    def at(self, ts: float) -> _State | None:
        """The state in force at ``ts``."""
        with self._lock:
            found = None
            for start, _, state in self._states:
                if start > ts:
                    break
                found = state
            return found


def _stamp(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e9):09d}Z"


def _parse(ts: str) -> float:
    return float(calendar.timegm(time.strptime(ts[:19], "%Y-%m-%dT%H:%M:%S")))


def _coredns_lines(pod: dict[str, Any], state: _State, ts: float, rng: random.Random
                   ) -> list[tuple[float, str]]:
    """The queries one CoreDNS pod answers at ``ts``: from a pod whose egress lets them out."""
    server = PodView.from_obj(pod)
    engine = state.view.engine
    askers = [p for p in state.objects.get("Pod", []) if _calls_of(p)]
    if not askers:
        return []
    asker = rng.choice(askers)
    calls = _calls_of(asker)
    src = PodView.from_obj(asker)
    if not src.ips or not engine.allowed(src, server, 53, "UDP"):
        return []
    host, _ = rng.choice(calls)
    ns = asker["metadata"].get("namespace", "default")
    known = state.view.lookup(host, ns) is not None
    name = f"{host}.{ns}.svc.{CLUSTER_DOMAIN}." if "." not in host else host + "."
    client = f"{src.ips[0]}:{rng.randint(32768, 60999)}"
    lines = []
    for i, qtype in enumerate(("A", "AAAA")):
        size = len(name) + 22
        code = "NOERROR" if known else "NXDOMAIN"
        answer = (size + 16 if qtype == "A" else size + 91) if known else size + 91
        lines.append((ts + i * 1e-4, f'[INFO] {client} - {rng.randint(1, 65535)} "{qtype} IN '
                      f'{name} udp {size} false 512" {code} qr,aa,rd {answer} '
                      f"{rng.uniform(0.00005, 0.0004):.9f}s"))
    return lines


def _lines(pod: dict[str, Any], history: LogHistory | None, start: float, lo: float,
           hi: float) -> list[tuple[float, str]]:
    """Request lines of ``pod`` with times in ``(lo, hi]``."""
    meta = pod["metadata"]
    labels = meta.get("labels") or {}
    coredns = all(labels.get(k) == v for k, v in DNS_LABELS.items())
    app = labels.get("app")
    if not coredns and (app is None or meta.get("namespace") in _SYSTEM_NAMESPACES):
        return []
    period = _DNS_PERIOD_S if coredns else PERIOD_S.get(app or "", DEFAULT_PERIOD_S)
    ips = [p.get("ip") for p in (pod.get("status") or {}).get("podIPs") or []]
    pod_ip = ips[0] if ips else (pod.get("status") or {}).get("podIP", "10.244.0.1")
    out: list[tuple[float, str]] = []
    for slot in range(int(max(lo, start + 5) // period), int(hi // period) + 1):
        rng = random.Random(f"{meta['name']}/{slot}")
        ts = (slot + rng.random()) * period
        if not (lo < ts <= hi and ts >= start + 5):
            continue
        state = history.at(ts) if history is not None else None
        if coredns:
            if state is not None:
                out += _coredns_lines(pod, state, ts, rng)
            continue
        assert app is not None
        calls = state.calls(pod) if state is not None else {}
        if state is not None and not state.reached(app, meta.get("namespace", "default")):
            continue  # no caller gets through: no request arrives
        out += request_lines(app, meta["name"], pod_ip, ts, rng, calls)
    return sorted(out, key=lambda line: line[0])


def _startup(pod: dict[str, Any], start: float) -> list[tuple[float, str]]:
    labels = pod["metadata"].get("labels") or {}
    if all(labels.get(k) == v for k, v in DNS_LABELS.items()):
        return [(start + 0.4 + i * 0.01, text) for i, text in enumerate(_COREDNS_START)]
    component = (labels.get("component") or labels.get("k8s-app")
                 or labels.get("app.kubernetes.io/name") or labels.get("app") or "")
    system = system_lines(component, start)
    if system is not None:
        return system
    ports = [p["containerPort"] for c in pod["spec"]["containers"] for p in c.get("ports") or []]
    app = labels.get("app", pod["spec"]["containers"][0]["name"])
    return startup_lines(app, pod["metadata"]["name"], ports[0] if ports else None, start)


def _render(lines: list[tuple[float, str]], params: dict[str, str]) -> str:
    show_ts = params.get("timestamps") == "true"
    text = "".join(f"{_stamp(ts) + ' ' if show_ts else ''}{line}\n" for ts, line in lines)
    limit = params.get("limitBytes")
    return text[:int(limit)] if limit and limit.isdigit() else text


def _start_of(pod: dict[str, Any]) -> float:
    return _parse((pod.get("status") or {}).get("startTime")
                  or pod["metadata"]["creationTimestamp"])


def _check(pod: dict[str, Any], params: dict[str, str]) -> None:
    containers = [c["name"] for c in pod["spec"].get("containers") or []]
    name = params.get("container") or containers[0]
    if name not in containers:
        raise BadRequest(f"container {name} is not valid for pod {pod['metadata']['name']}")
    if params.get("previous") == "true":
        raise BadRequest(f'previous terminated container "{name}" in pod '
                         f'"{pod["metadata"]["name"]}" not found')


def container_log(pod: dict[str, Any], params: dict[str, str], now: float,
                  history: LogHistory | None = None) -> str:
    """The log of one container of ``pod`` up to ``now``.

    Args:
        pod: The pod.
        params: The query parameters kubectl sends: ``container``, ``tailLines``,
            ``timestamps``, ``sinceSeconds``, ``sinceTime``, ``limitBytes``, ``previous``.
        now: The current time (epoch seconds).
        history: The cluster's states (``None``: every call succeeds).

    Raises:
        BadRequest: Unknown container, or ``previous`` for a container that never restarted.
    """
    _check(pod, params)
    if history is not None:
        history.note(now)
    start = _start_of(pod)
    since = start
    if params.get("sinceSeconds"):
        since = now - float(params["sinceSeconds"])
    elif params.get("sinceTime"):
        since = _parse(params["sinceTime"])
    lines = _startup(pod, start) + _lines(pod, history, start, max(start, now - WINDOW_S), now)
    lines = [(ts, text) for ts, text in lines if ts >= since and ts <= now]
    tail = int(params.get("tailLines") or -1)
    if tail >= 0:
        lines = lines[len(lines) - tail:] if tail else []
    return _render(lines, params)


def follow_log(pod: dict[str, Any], params: dict[str, str], clock: Callable[[], float],
               stop: threading.Event, history: LogHistory | None = None) -> Iterator[str]:
    """``kubectl logs -f``: the log so far, then each new line as the container writes it.

    Ends when ``stop`` is set (the client's time limit ends it first).
    """
    last = clock()
    yield container_log(pod, params, last, history)
    start = _start_of(pod)
    while not stop.wait(1.0):
        now = clock()
        if history is not None:
            history.note(now)
        fresh = _lines(pod, history, start, last, now)
        last = now
        if fresh:
            yield _render(fresh, {**params, "limitBytes": ""})
