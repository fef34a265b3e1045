"""What an agent can see of the NetworkPolicies, as audit objects (``netarena audit k8s``).

Every policy, rule, peer and port entry of the task's namespace becomes an ``AuditObject``
(a rule that allows everything, ``{}``, is the policy's ``open`` direction, not a rule object)
whose fields are what an operator reading ``kubectl get networkpolicy -o yaml`` (with the
pods, namespaces and workloads beside it) sees, abstracted so it generalises across
instances: label keys and the class of a value (carried by a workload of this
application, by another team's workload, by nothing), how many pods and namespaces a
selector picks now, whether some pod of the cluster declares a port, its distance from
the runbook's ports (the "±1 or ±10 from the runbook" tell), how often a value occurs
elsewhere in the cluster's policies, positions and counts. A port is not compared with the
ports its own target pods declare: that is a consistency check (policies allow ports
nothing listens on all the time, a quarter of this design's entries among them), not a
shape. ``Observed`` reads the same JSON an agent gets, so
the shape rung (``shape``) scores what it read with the very same fields.

``label_faults`` marks what the injection made or changed, by comparing each faulted
policy with its healthy twin: a rule with no identical healthy rule is changed (its peers
and entries that the healthy rule does not hold are the fault's), a policy whose spec
differs is faulted.
"""

from __future__ import annotations

import ipaddress
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from netarena.common.core.evidence import AuditObject, FieldValue
from netarena.k8s.detail import KUBE_DNS_LABELS
from netarena.k8s.judge import apply_faults
from netarena.k8s.manifests import render_all
from netarena.k8s.model import AppModel
from netarena.k8s.model_objects import model_namespaces, model_pods
from netarena.k8s.policy import PodView, policy_types, selector_matches

__all__ = ["Observed", "audit_view", "label_faults", "Located", "instance_objects",
           "workload_labels"]

Obj = Mapping[str, Any]
Located = tuple[str, str, str, int, int]
"""Where an object sits: ``(kind, policy, direction, rule index, entry index)`` (-1: n/a)."""


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _keys(selector: Obj | None) -> str:
    if selector is None:
        return "-"
    keys = set(selector.get("matchLabels") or {})
    keys |= {str(e.get("key")) for e in selector.get("matchExpressions") or []}
    return ",".join(sorted(keys)) or "{}"


def _delta(port: int, runbook: Sequence[int]) -> float | None:
    if not runbook:
        return None
    nearest = min(runbook, key=lambda p: (abs(p - port), p))
    d = port - nearest
    return math.copysign(math.log1p(abs(d)), d)


@dataclass
class Observed:
    """The cluster as an agent reads it: policies, pods, namespaces, workload templates.

    Args:
        namespace: The task's namespace (its policies are the audited ones).
        policies: NetworkPolicy objects (any namespace; others are ignored).
        pods: Pod objects of every namespace.
        namespaces: Namespace objects.
        workloads: ``(namespace, template labels)`` of every workload (Deployments,
            CronJobs), running or not.
        runbook_ports: The container ports the runbook names.
        services: Service names of the application (a label value naming one is of class
            ``service``).
    """

    namespace: str
    policies: Sequence[Obj]
    pods: Sequence[Obj]
    namespaces: Sequence[Obj]
    workloads: Sequence[tuple[str, Mapping[str, str]]] = ()
    runbook_ports: Sequence[int] = ()
    services: Sequence[str] = ()
    _views: list[PodView] = field(default_factory=list, init=False)
    _ns_labels: dict[str, dict[str, str]] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._views = [PodView.from_obj(p) for p in self.pods]
        self._ns_labels = {str((n.get("metadata") or {}).get("name")):
                           dict((n.get("metadata") or {}).get("labels") or {})
                           for n in self.namespaces}
        self.own = [p for p in self.policies
                    if ((p.get("metadata") or {}).get("namespace") or self.namespace)
                    == self.namespace]
        self._peer_counts = Counter(_key(peer) for pol in self.own
                                    for _, _, _, peer in _peers(pol))
        self._port_counts = Counter(_port_key(e) for pol in self.own
                                    for _, _, _, e in _entries(pol))  # the number, any protocol
        self._declared = {port for v in self._views for _, port, _ in v.ports}

    # ------------------------------------------------------------ selection
    def _spaces(self, peer: Obj) -> list[str]:
        sel = peer.get("namespaceSelector")
        if sel is None:
            return [self.namespace]
        return [ns for ns, labels in self._ns_labels.items() if selector_matches(sel, labels)]

    def _pods(self, peer: Obj) -> list[PodView]:
        spaces = set(self._spaces(peer))
        sel = peer.get("podSelector")
        return [v for v in self._views if v.namespace in spaces
                and selector_matches(sel, v.labels)]

    def _workloads(self, peer: Obj) -> int:
        spaces = set(self._spaces(peer))
        sel = peer.get("podSelector")
        return sum(1 for ns, labels in self.workloads if ns in spaces
                   and selector_matches(sel, labels))

    def _targets(self, pol: Obj) -> list[PodView]:
        sel = (pol.get("spec") or {}).get("podSelector")
        return [v for v in self._views if v.namespace == self.namespace
                and selector_matches(sel, v.labels)]

    def _value_class(self, peer: Obj) -> str:
        labels = ((peer.get("podSelector") or {}).get("matchLabels") or {})
        values = set(labels.values())
        if values & set(self.services):
            return "service"
        carried = {v for _, lab in self.workloads for v in lab.values()}
        carried |= {v for view in self._views for v in view.labels.values()}
        if values and values <= carried:
            return "workload"
        return "none" if values else "-"

    # -------------------------------------------------------------- objects
    def objects(self) -> list[tuple[Located, AuditObject]]:
        """Every audited object with where it sits (``fault`` False: no truth here)."""
        out: list[tuple[Located, AuditObject]] = []
        for pol in self.own:
            name = str((pol.get("metadata") or {}).get("name"))
            out.append((("policy", name, "", -1, -1), self._policy(pol)))
            for direction in ("ingress", "egress"):
                rules = (pol.get("spec") or {}).get(direction) or []
                for i, rule in enumerate(rules):
                    if rule:  # an empty rule is the policy's ``open`` direction
                        out.append((("rule", name, direction, i, -1),
                                    self._rule(pol, direction, i, rule, len(rules))))
            for direction, i, j, peer in _peers(pol):
                out.append((("peer", name, direction, i, j),
                            self._peer(pol, direction, i, j, peer)))
            for direction, i, j, entry in _entries(pol):
                out.append((("port", name, direction, i, j),
                            self._port(pol, direction, i, j, entry)))
        return out

    def _policy(self, pol: Obj) -> AuditObject:
        spec = pol.get("spec") or {}
        sel = spec.get("podSelector") or {}
        targets = self._targets(pol)
        fields: dict[str, FieldValue] = {
            "selects": "all" if not sel else ("some" if targets else "none"),
            "pods": len(targets),
            "types": ",".join(sorted(policy_types(pol))),
            "labels": len((pol.get("metadata") or {}).get("labels") or {}),
            "annotations": len((pol.get("metadata") or {}).get("annotations") or {}),
        }
        for direction in ("ingress", "egress"):
            rules = spec.get(direction)
            fields[f"{direction}_rules"] = len(rules or [])
            fields[direction] = ("absent" if direction.capitalize() not in policy_types(pol)
                                 else "none" if not rules else
                                 "open" if any(r == {} for r in rules) else "restricted")
        fields["peers"] = sum(1 for _ in _peers(pol))
        fields["ports"] = sum(1 for _ in _entries(pol))
        return AuditObject(kind="policy", fields=fields, fault=False)

    def _rule(self, pol: Obj, direction: str, i: int, rule: Obj, count: int) -> AuditObject:
        side = "from" if direction == "ingress" else "to"
        peers = rule.get(side) or []
        entries = rule.get("ports") or []
        return AuditObject(kind="rule", fault=False, fields={
            "direction": direction, "position": i, "rules": count,
            "last": i == count - 1, "peers": len(peers), "ports": len(entries),
            "forms": ",".join(sorted({_form(p) for p in peers})) or "any",
            "protocols": ",".join(sorted({str(e.get("protocol") or "TCP")
                                          for e in entries})) or "any",
            "selected_pods": sum(len(self._pods(p)) for p in peers if "ipBlock" not in p),
        })

    def _peer(self, pol: Obj, direction: str, i: int, j: int, peer: Obj) -> AuditObject:
        side = "from" if direction == "ingress" else "to"
        rule = ((pol.get("spec") or {}).get(direction) or [])[i]
        fields: dict[str, FieldValue] = {
            "direction": direction, "form": _form(peer), "position": j,
            "peers_in_rule": len(rule.get(side) or []), "rule_position": i,
            "elsewhere": self._peer_counts[_key(peer)] - 1,
            "rule_ports": len(rule.get("ports") or []),
        }
        block = peer.get("ipBlock")
        if isinstance(block, Mapping):
            try:
                net = ipaddress.ip_network(str(block.get("cidr")), strict=False)
                fields["prefix"] = net.prefixlen
                fields["address"] = "private" if net.is_private else "public"
            except ValueError:
                fields["address"] = "invalid"
            fields["excepts"] = len(block.get("except") or [])
            return AuditObject(kind="peer", fields=fields, fault=False)
        pods = self._pods(peer)
        fields.update({
            "pod_keys": _keys(peer.get("podSelector")),
            "ns_keys": _keys(peer.get("namespaceSelector")),
            "pods": len(pods),
            "namespaces": len(self._spaces(peer)),
            "workloads": self._workloads(peer),
            "same_namespace": any(v.namespace == self.namespace for v in pods),
            "value": self._value_class(peer),
        })
        return AuditObject(kind="peer", fields=fields, fault=False)

    def _port(self, pol: Obj, direction: str, i: int, j: int, entry: Obj) -> AuditObject:
        side = "from" if direction == "ingress" else "to"
        rule = ((pol.get("spec") or {}).get(direction) or [])[i]
        port = entry.get("port")
        number = port if isinstance(port, int) else None
        end = entry.get("endPort")
        proto = str(entry.get("protocol") or "TCP")
        return AuditObject(kind="port", fault=False, fields={
            "direction": direction, "protocol": proto, "port": number,
            "named": isinstance(port, str), "all_ports": port is None,
            "range": (int(end) - number) if isinstance(end, int) and number is not None
            else None,
            "declared_anywhere": number in self._declared if number is not None else None,
            "runbook": number in self.runbook_ports if number is not None else None,
            "runbook_delta": _delta(number, self.runbook_ports) if number is not None
            else None,
            "well_known": number is not None and number < 1024,
            "elsewhere": self._port_counts[_port_key(entry)] - 1,
            "position": j, "entries_in_rule": len(rule.get("ports") or []),
            "rule_position": i, "rule_peers": len(rule.get(side) or []),
        })


def _form(peer: Obj) -> str:
    if "ipBlock" in peer:
        return "ipblock"
    ns, pod = "namespaceSelector" in peer, "podSelector" in peer
    return "ns+pod" if ns and pod else "ns" if ns else "pod" if pod else "empty"


def _port_key(entry: Obj) -> str:
    return f"{entry.get('port')}-{entry.get('endPort')}"


def _peers(pol: Obj) -> list[tuple[str, int, int, Obj]]:
    spec = pol.get("spec") or {}
    return [(d, i, j, peer) for d, side in (("ingress", "from"), ("egress", "to"))
            for i, rule in enumerate(spec.get(d) or [])
            for j, peer in enumerate(rule.get(side) or [])]


def _entries(pol: Obj) -> list[tuple[str, int, int, Obj]]:
    spec = pol.get("spec") or {}
    return [(d, i, j, e) for d in ("ingress", "egress")
            for i, rule in enumerate(spec.get(d) or [])
            for j, e in enumerate(rule.get("ports") or [])]


def _match_rules(healthy: list[Obj], faulted: list[Obj]) -> dict[int, int | None]:
    """Faulted rule index → the healthy rule it is (identical) or came from (most alike)."""
    free = list(range(len(healthy)))
    out: dict[int, int | None] = {}
    for i, rule in enumerate(faulted):
        same = next((h for h in free if _key(healthy[h]) == _key(rule)), None)
        if same is not None:
            out[i] = same
            free.remove(same)
    for i, rule in enumerate(faulted):
        if i in out:
            continue
        parts = Counter(_parts(rule))
        best = max(free, key=lambda h: (_overlap(healthy[h], parts), -abs(h - i)), default=None)
        if best is not None and _overlap(healthy[best], parts):
            out[i] = best
            free.remove(best)
        else:
            out[i] = None
    return out


def _parts(rule: Obj) -> list[str]:
    return [_key(x) for side in ("from", "to", "ports") for x in rule.get(side) or []]


def _overlap(rule: Obj, parts: Counter[str]) -> int:
    """How many peer and port entries ``rule`` shares with ``parts``."""
    return sum((Counter(_parts(rule)) & parts).values())


def label_faults(located: Sequence[tuple[Located, AuditObject]],
                 healthy: Sequence[Obj], faulted: Sequence[Obj]) -> list[AuditObject]:
    """The objects with ``fault`` set from the truth (healthy versus faulted policies)."""
    before = {str(p["metadata"]["name"]): p.get("spec") or {} for p in healthy}
    after = {str(p["metadata"]["name"]): p.get("spec") or {} for p in faulted}
    changed_policies = {n for n, spec in after.items() if _key(before.get(n)) != _key(spec)}
    marks: set[Located] = set()
    for name in changed_policies:
        old, new = before.get(name) or {}, after[name]
        for direction, side in (("ingress", "from"), ("egress", "to")):
            h_rules, f_rules = old.get(direction) or [], new.get(direction) or []
            for i, h in _match_rules(h_rules, f_rules).items():
                rule = f_rules[i]
                if h is not None and _key(h_rules[h]) == _key(rule):
                    continue
                marks.add(("rule", name, direction, i, -1))
                base = h_rules[h] if h is not None else {}
                for part, kind in ((side, "peer"), ("ports", "port")):
                    left = Counter(_key(x) for x in base.get(part) or [])
                    for j, x in enumerate(rule.get(part) or []):
                        if left[_key(x)] > 0:
                            left[_key(x)] -= 1
                        else:
                            marks.add((kind, name, direction, i, j))
    return [obj.model_copy(update={"fault": where in marks or (
        where[0] == "policy" and where[1] in changed_policies)}) for where, obj in located]


def audit_view(observed: Observed, healthy: Sequence[Obj] | None = None) -> list[AuditObject]:
    """The audited objects of ``observed``; labelled when the healthy policies are given."""
    located = observed.objects()
    if healthy is None:
        return [obj for _, obj in located]
    return label_faults(located, healthy, observed.own)


def workload_labels(objects: Sequence[Obj]) -> list[tuple[str, Mapping[str, str]]]:
    """``(namespace, pod template labels)`` of every Deployment and CronJob in ``objects``."""
    out: list[tuple[str, Mapping[str, str]]] = []
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj.get("kind") == "CronJob":
            spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
        elif obj.get("kind") != "Deployment":
            continue
        labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        out.append((str((obj.get("metadata") or {}).get("namespace") or "default"), labels))
    return out


def instance_objects(model: AppModel, faults: Sequence[Mapping[str, Any]]) -> list[AuditObject]:
    """The labelled audit objects of one generated instance (no cluster needed)."""
    objects = render_all(model)
    healthy = [o for o in objects if o["kind"] == "NetworkPolicy"]
    system = [("kube-system", dict(KUBE_DNS_LABELS))]  # CoreDNS's Deployment
    observed = Observed(model.namespace, apply_faults(healthy, faults), model_pods(model),
                        model_namespaces(model), [*workload_labels(objects), *system],
                        [s.container_port for s in model.servers if s.container_port],
                        model.names)
    return audit_view(observed, healthy)
