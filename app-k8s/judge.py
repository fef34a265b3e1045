"""The judge: does the cluster realise the intended traffic and keep what others own?

A state is judged on three things, all read from the live objects:

1. the service matrix (``policy_matrix``): every ordered pair of services, expected
   from the application's intent;
2. the detail probes (``detail``): Prometheus reaches each scraped metrics port while
   Grafana does not, and each service with an external dependency reaches an address in
   its range while an address outside it stays closed on that port and on another;
   outsiders (Prometheus, Grafana, an address on the internet) reach no service's own
   port (services open to any pod aside), so an opening that no service pair shows
   (``namespaceSelector`` on the monitoring namespace, ``ipBlock 0.0.0.0/0`` except the
   pod network) is still seen; and a new pod no service policy selects stays isolated both
   ways, as the default deny promises;
3. ownership: every label and annotation other teams put on a policy is still there.

A re-deployment from a connectivity spec loses 2 and 3; a troubleshooter who changes
only what the faults broke keeps them. Probes to external addresses are evaluated on
the source's egress alone (nothing outside the cluster has a policy).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netarena.k8s.model import ANYONE, AppModel
from netarena.k8s.policy import PodView, PolicyEngine
from netarena.k8s.policy_matrix import Connectivity, ProbeResult, compute_connectivity

__all__ = ["ClusterState", "judge", "StateCache", "ownership_problems", "workload_state"]

Obj = Mapping[str, Any]
_CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/",)
"""Annotations a cluster's controllers write on workloads (the rollout revision)."""


@dataclass(frozen=True)
class ClusterState:
    """One judged state: every probe, and the ownership metadata that went missing."""

    connectivity: Connectivity
    ownership: tuple[str, ...] = ()
    """One line per missing label or annotation (or missing policy)."""

    @property
    def mismatches(self) -> list[ProbeResult]:
        """Probes whose answer differs from the intended one."""
        return self.connectivity.mismatches

    @property
    def healthy(self) -> bool:
        """Every probe matches and nothing other teams own is missing."""
        return not self.mismatches and not self.ownership

    def report(self) -> str:
        """The probe report, then what other teams own that is missing."""
        text = self.connectivity.report()
        if self.ownership:
            text += "\nMissing metadata other teams own (restore it):\n" + "\n".join(
                self.ownership)
        return text


def _views(engine: PolicyEngine, namespace: str, labels: Mapping[str, str]) -> list[PodView]:
    return [v for v in engine.views if v.namespace == namespace
            and all(v.labels.get(k) == val for k, val in labels.items())]


def _all_allowed(engine: PolicyEngine, srcs: list[PodView], dsts: list[PodView],
                 port: int) -> bool:
    return bool(srcs and dsts) and all(engine.allowed(a, b, port, "TCP")
                                       for a in srcs for b in dsts)


def _detail_probes(model: AppModel, engine: PolicyEngine) -> list[ProbeResult]:
    detail = model.detail
    if detail is None:
        return []
    mon = detail.monitoring
    scraper = _views(engine, mon.namespace, mon.scraper_labels)
    other = _views(engine, mon.namespace, mon.other_labels)
    out = []
    for service, port in sorted(mon.metrics_ports.items()):
        dsts = _views(engine, model.namespace, {"app": service})
        for name, srcs, expected in (("prometheus", scraper, True), ("grafana", other, False)):
            out.append(ProbeResult(f"{mon.namespace}/{name}", service, port, expected,
                                   _all_allowed(engine, srcs, dsts, port)))
    for ext in detail.egress:
        srcs = _views(engine, model.namespace, {"app": ext.service})
        other_port = 80 if ext.port != 80 else 8080
        for ip, port, expected in ((ext.inside_ip, ext.port, True),
                                   (ext.outside_ip, ext.port, False),
                                   (detail.stranger_ip, other_port, False)):
            outside = PodView("", ip, {}, (ip,))
            actual = bool(srcs) and all(engine.egress_allowed(s, outside, port, "TCP")
                                        for s in srcs)
            out.append(ProbeResult(ext.service, ip, port, expected, actual))
    return out + _outsider_probes(model, engine) + _default_deny_probes(model, engine)


def _outsider_probes(model: AppModel, engine: PolicyEngine) -> list[ProbeResult]:
    """Prometheus, Grafana and an internet address kept off every service's own port."""
    assert model.detail is not None
    mon, ip = model.detail.monitoring, model.detail.stranger_ip
    outsiders = [(f"{mon.namespace}/prometheus", _views(engine, mon.namespace,
                                                        mon.scraper_labels)),
                 (f"{mon.namespace}/grafana", _views(engine, mon.namespace, mon.other_labels)),
                 (ip, [PodView("", ip, {}, (ip,))])]
    out = []
    for svc in model.servers:
        if ANYONE in svc.sources:
            continue  # "any pod": whether the internet counts is the runbook's to say
        assert svc.port is not None and svc.container_port is not None
        dsts = _views(engine, model.namespace, {"app": svc.name})
        for name, srcs in outsiders:
            out.append(ProbeResult(name, svc.name, svc.port, False,
                                   _all_allowed(engine, srcs, dsts, svc.container_port)))
    return out


NEWCOMER = "debug-pod"
"""A pod no service policy selects (``kubectl run debug``): the default deny isolates it."""
_NEWCOMER_PORT = 8080


def _default_deny_probes(model: AppModel, engine: PolicyEngine) -> list[ProbeResult]:
    """A new pod of the namespace is isolated both ways: nothing in, nothing out.

    Only ``deny-all`` covers it, so gutting the platform team's default deny (its Egress
    dropped, its pod selector narrowed) shows here although every service pair still holds.
    """
    assert model.detail is not None
    newcomer = PodView(model.namespace, NEWCOMER, {"run": NEWCOMER}, ("10.244.255.250",),
                       (("", _NEWCOMER_PORT, "TCP"),))
    ip = model.detail.stranger_ip
    probes = [ProbeResult(NEWCOMER, ip, 443, False, engine.egress_allowed(
        newcomer, PodView("", ip, {}, (ip,)), 443, "TCP"))]
    caller = next((v for s in model.servers for v in _views(engine, model.namespace,
                                                            {"app": s.name})), None)
    if caller is not None:
        probes.append(ProbeResult(caller.labels["app"], NEWCOMER, _NEWCOMER_PORT, False,
                                  engine.ingress_allowed(caller, newcomer, _NEWCOMER_PORT,
                                                         "TCP")))
    return probes


def ownership_problems(model: AppModel, policies: Sequence[Obj]) -> tuple[str, ...]:
    """Labels and annotations of the healthy policies that the live ones lack."""
    if model.detail is None:
        return ()
    live = {(p.get("metadata") or {}).get("name"): p.get("metadata") or {} for p in policies
            if (p.get("metadata") or {}).get("namespace", model.namespace) == model.namespace}
    lines = []
    for name in sorted(model.detail.labels):
        meta = live.get(name)
        for field, wanted in (("label", model.detail.labels.get(name) or {}),
                              ("annotation", model.detail.annotations.get(name) or {})):
            have = (meta or {}).get(field + "s") or {}
            lines += [f"networkpolicy {name}: {field} {key}={value} is missing"
                      for key, value in sorted(wanted.items()) if have.get(key) != value]
    return tuple(lines)


def workload_state(obj: Obj, ignored_labels: tuple[str, ...] = ()) -> tuple[Any, ...]:
    """What an agent must leave alone on a Deployment, Pod or Service.

    Labels, annotations (a Service's may configure its load balancer), finalizers, owners
    and the spec.
    """
    meta = obj.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in ignored_labels}
    notes = {k: v for k, v in (meta.get("annotations") or {}).items()
             if not k.startswith(_CONTROLLER_ANNOTATIONS)}
    return (labels or None, notes or None, meta.get("finalizers") or None,
            meta.get("ownerReferences") or None, obj.get("spec"))


def judge(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
          policies: Sequence[Obj]) -> ClusterState:
    """Judge one state from API objects (pods and policies of every namespace)."""
    service_matrix = compute_connectivity(model, pods, namespaces, policies)
    engine = PolicyEngine(list(pods), list(namespaces), list(policies))
    results = service_matrix.results + tuple(_detail_probes(model, engine))
    return ClusterState(Connectivity(results), ownership_problems(model, policies))


class StateCache:
    """Judges again only when the store's revision moved.

    Args:
        model: The application (intent, detail).
        revision: Returns the store's write counter.
        snapshot: Returns ``(pods, namespaces, policies)`` as API objects.
    """

    def __init__(self, model: AppModel, revision: Callable[[], int],
                 snapshot: Callable[[], tuple[Sequence[Obj], Sequence[Obj], Sequence[Obj]]]
                 ) -> None:
        self.model = model
        self._revision = revision
        self._snapshot = snapshot
        self._cached: tuple[int, ClusterState] | None = None
        self.recomputations = 0
        """How many times the state was actually judged (for tests and benchmarks)."""

    def get(self) -> ClusterState:
        """The judged state now."""
        rev = self._revision()
        if self._cached is None or self._cached[0] != rev:
            self._cached = (rev, judge(self.model, *self._snapshot()))
            self.recomputations += 1
        return self._cached[1]
