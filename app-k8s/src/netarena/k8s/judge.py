"""The judge: is the cluster's reachability the healthy one's, and is what others own kept?

A state is judged on what the live objects do, never on what an agent said:

1. **exact reachability** (``reachability``): on every (source, destination, port,
   protocol) that any policy (healthy or live), Service or container port names, plus one
   port per protocol that nothing names, between the application's pods, the monitoring
   and other teams' pods, CoreDNS, a new pod no service policy selects, and addresses
   outside the cluster (an internet stranger, each external range's inside and outside
   address, every ipBlock's inside and except addresses), the live policies must answer
   exactly as the healthy ones (``manifests.render_policies``) do. An extra open port or
   protocol is a mismatch like a closed one;
2. **ownership**: every label and annotation other teams put on a policy is still there.

``collateral`` lists what an agent damaged outside the faults' footprint (rules, policies
and metadata the faults did not touch); the episode reports it in ``Score.collateral``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netarena.k8s.apiserver.kinds import clone
from netarena.k8s.bounded import BoundedCache
from netarena.k8s.manifests import canonical_policy, render_policies
from netarena.k8s.model import AppModel, per_model
from netarena.k8s.policy_matrix import Address, Connectivity, ProbeResult
from netarena.k8s.reachability import NEWCOMER, Universe, differences, reachable, universe

__all__ = ["ClusterState", "judge", "StateCache", "ownership_problems", "workload_state",
           "exact_mismatches", "probe_universe", "NEWCOMER", "collateral", "apply_faults",
           "newly_wrong"]

Obj = Mapping[str, Any]
_CONTROLLER_ANNOTATIONS = ("deployment.kubernetes.io/",)
"""Annotations a cluster's controllers write on workloads (the rollout revision)."""


@dataclass(frozen=True)
class ClusterState:
    """One judged state: every probe, and the ownership metadata that went missing."""

    connectivity: Connectivity
    ownership: tuple[str, ...] = ()
    """One line per missing label or annotation (or missing policy)."""
    policies: tuple[Any, ...] = ()
    """The policies judged (to judge two states over one universe, ``compare``)."""

    @property
    def mismatches(self) -> list[ProbeResult]:
        """Probes whose answer differs from the intended one."""
        return self.connectivity.mismatches

    @property
    def healthy(self) -> bool:
        """Every probe matches and nothing other teams own is missing."""
        return not self.mismatches and not self.ownership

    def report(self, address: Address | None = None) -> str:
        """The probe report, then what other teams own that is missing.

        ``address`` resolves where callers dial (``Connectivity.report``).
        """
        text = self.connectivity.report(address)
        if self.ownership:
            text += "\nMissing metadata other teams own (restore it):\n" + "\n".join(
                self.ownership)
        return text


def apply_faults(policies: Sequence[Obj], faults: Sequence[Mapping[str, Any]]) -> list[Any]:
    """Copies of ``policies`` with each fault's ``spec`` written over its policy."""
    out: list[dict[str, Any]] = [clone(dict(p)) for p in policies]
    by_name = {p["metadata"]["name"]: p for p in out}
    for fault in faults:
        by_name[fault["policy"]]["spec"] = canonical_policy(clone(fault["spec"]))
    return out


def probe_universe(model: AppModel, pods: Sequence[Obj],
                   policy_sets: Sequence[Sequence[Obj]]) -> Universe:
    """The probes a state is judged on (``reachability.universe`` for this application)."""
    detail = model.detail
    addresses: list[str] = []
    spaces: list[str] = []
    if detail is not None:
        addresses.append(detail.stranger_ip)
        for e in detail.egress:
            addresses += [e.inside_ip, e.outside_ip]
        spaces = [detail.monitoring.namespace, *detail.namespaces]
    ports = [s.port for s in model.servers if s.port is not None]
    return universe(model.namespace, pods, policy_sets, addresses, ports, spaces)


_EXPECTED: BoundedCache[Any, tuple[Any, dict[tuple[int, int], int]]] = BoundedCache(32)


@per_model(32)
def _healthy(model: AppModel) -> list[Any]:
    """The model's healthy policies, rendered once per model (read-only)."""
    return render_policies(model)


def exact_mismatches(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
                     policies: Sequence[Obj],
                     healthy: Sequence[Obj] | None = None,
                     also: Sequence[Sequence[Obj]] = ()) -> Connectivity:
    """Every probe of the universe whose answer differs from the healthy cluster's.

    Args:
        model: The application (its rendered policies are the healthy ones).
        pods: Pod objects.
        namespaces: Namespace objects.
        policies: The live NetworkPolicies.
        healthy: The healthy policies (default: ``render_policies(model)``).
        also: Further policy sets whose named ports and ranges join the universe (to
            compare two states probe for probe).

    Returns:
        A ``Connectivity`` holding only the differing probes, ``checked`` all of them.
    """
    found, size = _differing(model, pods, namespaces, policies, healthy, also)
    results = tuple(ProbeResult(src, dst, port, exp, not exp, proto)
                    for src, dst, port, proto, exp in found)
    return Connectivity(results, checked=size)


def _differing(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
               policies: Sequence[Obj], healthy: Sequence[Obj] | None = None,
               also: Sequence[Sequence[Obj]] = ()
               ) -> tuple[list[tuple[str, str, int, str, bool]], int]:
    """``exact_mismatches`` as ``reachability.differences`` tuples, and the universe's size.

    ``collateral`` compares a state with each rule left out: building every probe's result
    each time was a fifth of a k8s episode's CPU.
    """
    want = list(healthy) if healthy is not None else _healthy(model)
    uni = probe_universe(model, pods, [want, policies, *also])
    cache = uni.cache
    key = ("healthy", id(want), id(cache), json.dumps([n.get("metadata", {}).get("labels")
                                                       for n in namespaces], sort_keys=True))
    hit = _EXPECTED.get(key) if healthy is None else None
    if hit is not None and hit[0] is cache:
        expected = hit[1]
    else:
        expected = reachable(uni, namespaces, want)
        if healthy is None:
            _EXPECTED.put(key, (cache, expected))
    actual = reachable(uni, namespaces, policies)
    return differences(uni, expected, actual), uni.size


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
    """Judge one state from API objects (pods and policies of every namespace).

    Exact: the live policies' reachability is compared with the healthy ones' on every
    probe of ``probe_universe``; only the probes that differ are kept.
    """
    return ClusterState(exact_mismatches(model, pods, namespaces, policies),
                        ownership_problems(model, policies), tuple(policies))


def newly_wrong(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
                before: ClusterState, after: ClusterState) -> list[ProbeResult]:
    """Probes that differ from the healthy cluster after a step and did not before.

    Both states are judged over one universe (every port either names), so a probe that
    only one state's policies name is compared, not mistaken for new.
    """
    if before.policies == after.policies:
        return []
    both = [list(before.policies), list(after.policies)]
    seen = set(_differing(model, pods, namespaces, both[0], also=both[1:])[0])
    now = _differing(model, pods, namespaces, both[1], also=both[:1])[0]
    return [ProbeResult(src, dst, port, exp, not exp, proto)
            for src, dst, port, proto, exp in now if (src, dst, port, proto, exp) not in seen]


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


def _norm(value: Any) -> Any:
    """Canonical form for comparison: defaults filled, empty lists and nulls dropped."""
    if isinstance(value, dict):
        out = {k: _norm(v) for k, v in value.items() if v not in (None, [], {})}
        if "port" in out or "endPort" in out:
            out.setdefault("protocol", "TCP")
        return out
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


def _key(value: Any) -> str:
    return json.dumps(_norm(value), sort_keys=True)


def _by_name(policies: Sequence[Obj], namespace: str) -> dict[str, Obj]:
    return {(p.get("metadata") or {}).get("name", ""): p for p in policies
            if ((p.get("metadata") or {}).get("namespace") or namespace) == namespace}


def collateral(model: AppModel, faults: Sequence[Mapping[str, Any]], pods: Sequence[Obj],
               namespaces: Sequence[Obj], policies: Sequence[Obj]) -> list[str]:
    """Damage outside the faults' footprint, one line per object or rule entry.

    The footprint is what the faults changed: per policy and direction, the healthy rules
    the faulted spec no longer holds and the rules it added (and the spec fields it
    rewrote). Outside it, every healthy rule must still be there as it was (lost or
    changed otherwise), no policy may be deleted, metadata other teams own must stay, and
    a rule or policy the healthy cluster does not have, added where no fault was, is
    collateral when removing it changes reachability.
    """
    healthy = render_policies(model)
    faulted = _by_name(apply_faults(healthy, list(faults)), model.namespace)
    live = _by_name(policies, model.namespace)
    out = list(ownership_problems(model, policies))
    added: list[tuple[str, str, int]] = []
    for name, pol in _by_name(healthy, model.namespace).items():
        now = live.get(name)
        if now is None:
            out.append(f"networkpolicy {name}: deleted")
            continue
        spec, fspec, lspec = pol.get("spec") or {}, faulted[name].get("spec") or {}, \
            now.get("spec") or {}
        for field in ("podSelector", "policyTypes"):
            if _key(spec.get(field)) == _key(fspec.get(field)) != _key(lspec.get(field)):
                out.append(f"networkpolicy {name}: spec.{field} changed")
        for direction in ("ingress", "egress"):
            want = Counter(_key(r) for r in spec.get(direction) or [])
            had = Counter(_key(r) for r in fspec.get(direction) or [])
            rules = lspec.get(direction) or []
            have = Counter(_key(r) for r in rules)
            untouched = want - (want - had)
            for rule in sorted((untouched - have).elements()):
                out.append(f"networkpolicy {name}: {direction} rule {rule} lost or changed")
            if want == had:
                extra = have - want
                added += [(name, direction, i) for i, r in enumerate(rules)
                          if extra[_key(r)] > 0]
    baseline = _differing(model, pods, namespaces, policies)[0]
    for name, direction, i in added:
        trimmed = clone(live[name])
        del trimmed["spec"][direction][i]
        others = [trimmed if p is live[name] else p for p in policies]
        if _differing(model, pods, namespaces, others)[0] != baseline:
            out.append(f"networkpolicy {name}: {direction} rule "
                       f"{_key(live[name]['spec'][direction][i])} added")
    for name, pol in sorted(live.items()):
        if name not in faulted:
            others = [p for p in policies if p is not pol]
            if _differing(model, pods, namespaces, others)[0] != baseline:
                out.append(f"networkpolicy {name}: added")
    return out
