"""An exact Kubernetes NetworkPolicy evaluator over plain API dicts.

It answers one question: may pod A open a connection to pod B on port P/protocol? It
follows the ``networking.k8s.io/v1`` semantics (and the upstream conformance cases):

* ``policyTypes`` defaults to ``Ingress``, plus ``Egress`` when ``spec.egress`` is non-empty.
* A pod is isolated for a direction only when some policy of its namespace selects it
  for that direction; an isolated pod accepts only what the union of those policies'
  rules allows. Traffic needs the source's egress *and* the destination's ingress.
* Empty ``podSelector`` selects every pod of the policy's namespace; a peer with only
  ``podSelector`` means pods of the policy's namespace; ``namespaceSelector`` alone means
  every pod of the matching namespaces; both in one peer means their intersection (AND),
  while separate peers are alternatives (OR). ``ipBlock`` (with ``except``) matches pod IPs.
* Rule ``ports``: protocol defaults to TCP; a missing port means every port; ``endPort``
  makes a range; a named port resolves against the *destination* pod's container ports.
* A rule without ``from``/``to`` matches every peer; without ``ports`` every port.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PodView", "PolicyEngine", "selector_matches", "policy_types", "NS_NAME_LABEL"]

log = logging.getLogger(__name__)

NS_NAME_LABEL = "kubernetes.io/metadata.name"
"""Label Kubernetes puts on every namespace (so selectors can name a namespace)."""

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class PodView:
    """The parts of a Pod that NetworkPolicy looks at.

    An endpoint outside the cluster is a view with an empty ``namespace``: only ``ipBlock``
    peers match it.
    """

    namespace: str
    name: str
    labels: Mapping[str, str]
    ips: tuple[str, ...]
    ports: tuple[tuple[str, int, str], ...] = ()
    """Container ports as (name, containerPort, protocol); unnamed ports have name ``""``."""

    @classmethod
    def from_obj(cls, pod: Obj, default_namespace: str = "default") -> PodView:
        """Read a Pod object: ``metadata``, ``spec.containers[].ports``, ``status.podIP(s)``."""
        meta = pod.get("metadata") or {}
        status = pod.get("status") or {}
        ips = [p.get("ip") for p in status.get("podIPs") or [] if p.get("ip")]
        if not ips and status.get("podIP"):
            ips = [status["podIP"]]
        ports = []
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                ports.append((p.get("name") or "", int(p["containerPort"]),
                              p.get("protocol") or "TCP"))
        return cls(meta.get("namespace") or default_namespace, meta.get("name", ""),
                   dict(meta.get("labels") or {}), tuple(ips), tuple(ports))

    @property
    def key(self) -> tuple[str, str]:
        """``(namespace, name)``."""
        return (self.namespace, self.name)


def selector_matches(selector: Obj | None, labels: Mapping[str, str]) -> bool:
    """Evaluate a LabelSelector: all ``matchLabels`` and all ``matchExpressions`` must hold.

    An empty selector matches everything; ``None`` is treated as empty. An unknown operator
    matches nothing (the API server would have rejected it).
    """
    if not selector:
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In":
            ok = present and labels[key] in values
        elif op == "NotIn":
            ok = not present or labels[key] not in values
        elif op == "Exists":
            ok = present
        elif op == "DoesNotExist":
            ok = not present
        else:
            log.debug("unknown selector operator %r", op)
            ok = False
        if not ok:
            return False
    return True


def policy_types(policy: Obj) -> frozenset[str]:
    """The directions a policy affects, with the API server's defaulting applied."""
    spec = policy.get("spec") or {}
    types = spec.get("policyTypes")
    if types:
        return frozenset(types)
    return frozenset({"Ingress", "Egress"} if spec.get("egress") else {"Ingress"})


def _ip_in_block(ips: Iterable[str], block: Obj) -> bool:
    try:
        net = ipaddress.ip_network(block.get("cidr", ""), strict=False)
        excepts = [ipaddress.ip_network(e, strict=False) for e in block.get("except") or []]
    except ValueError:
        return False
    for raw in ips:
        try:
            ip = ipaddress.ip_address(raw)
        except ValueError:
            continue
        if ip in net and not any(ip in e for e in excepts):
            return True
    return False


def _as_port(value: Any) -> int | str | None:
    if value is None or isinstance(value, int):
        return value
    text = str(value)
    return int(text) if text.isdigit() else text


@dataclass
class PolicyEngine:
    """Answers reachability questions for a fixed set of pods, namespaces and policies.

    Build one per state (the matrix cache rebuilds it when the store's revision moves).

    Args:
        pods: Pod API objects.
        namespaces: Namespace API objects (a namespace without one still has its name label).
        policies: NetworkPolicy API objects (``metadata.namespace`` defaults to ``default``).
    """

    pods: Sequence[Obj]
    namespaces: Sequence[Obj] = field(default_factory=list)
    policies: Sequence[Obj] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.views = [PodView.from_obj(p) for p in self.pods]
        self._by_key = {v.key: v for v in self.views}
        self._ns_labels: dict[str, dict[str, str]] = {}
        for ns in self.namespaces:
            meta = ns.get("metadata") or {}
            name = meta.get("name", "")
            self._ns_labels[name] = {**(meta.get("labels") or {}), NS_NAME_LABEL: name}
        self._selected: dict[tuple[tuple[str, str], str], list[Obj]] = {}

    def pod(self, namespace: str, name: str) -> PodView:
        """The view of one pod (``KeyError`` when unknown)."""
        return self._by_key[(namespace, name)]

    def namespace_labels(self, namespace: str) -> dict[str, str]:
        """Labels of ``namespace``, always including its ``kubernetes.io/metadata.name``."""
        return self._ns_labels.get(namespace, {NS_NAME_LABEL: namespace})

    def selecting(self, pod: PodView, direction: str) -> list[Obj]:
        """Policies that select ``pod`` for ``direction`` (``Ingress`` or ``Egress``)."""
        key = (pod.key, direction)
        if key not in self._selected:
            self._selected[key] = [
                p for p in self.policies
                if ((p.get("metadata") or {}).get("namespace") or "default") == pod.namespace
                and direction in policy_types(p)
                and selector_matches((p.get("spec") or {}).get("podSelector"), pod.labels)
            ]
        return self._selected[key]

    def allowed(self, src: PodView, dst: PodView, port: int, protocol: str = "TCP") -> bool:
        """Whether ``src`` may connect to ``dst`` on ``port``/``protocol`` (both ends agree)."""
        return self.egress_allowed(src, dst, port, protocol) and self.ingress_allowed(
            src, dst, port, protocol
        )

    def ingress_allowed(self, src: PodView, dst: PodView, port: int, protocol: str = "TCP") -> bool:
        """Whether ``dst``'s ingress side admits the connection."""
        policies = self.selecting(dst, "Ingress")
        if not policies:
            return True
        return any(
            self._rule_matches(rule, "from", _ns_of(p), src, dst, port, protocol)
            for p in policies
            for rule in (p.get("spec") or {}).get("ingress") or []
        )

    def egress_allowed(self, src: PodView, dst: PodView, port: int, protocol: str = "TCP") -> bool:
        """Whether ``src``'s egress side lets the connection out."""
        policies = self.selecting(src, "Egress")
        if not policies:
            return True
        return any(
            self._rule_matches(rule, "to", _ns_of(p), dst, dst, port, protocol)
            for p in policies
            for rule in (p.get("spec") or {}).get("egress") or []
        )

    def _rule_matches(self, rule: Obj, peers_key: str, policy_ns: str, peer: PodView,
                      dst: PodView, port: int, protocol: str) -> bool:
        peers = rule.get(peers_key) or []
        if peers and not any(self._peer_matches(p, policy_ns, peer) for p in peers):
            return False
        ports = rule.get("ports") or []
        return not ports or any(_port_matches(p, dst, port, protocol) for p in ports)

    def _peer_matches(self, peer: Obj, policy_ns: str, pod: PodView) -> bool:
        if "ipBlock" in peer and peer["ipBlock"] is not None:
            return _ip_in_block(pod.ips, peer["ipBlock"])
        if not pod.namespace:
            return False  # an endpoint outside the cluster: only an ipBlock can match it
        pod_sel, ns_sel = peer.get("podSelector"), peer.get("namespaceSelector")
        if pod_sel is None and ns_sel is None:
            return False
        if ns_sel is None:
            if pod.namespace != policy_ns:
                return False
        elif not selector_matches(ns_sel, self.namespace_labels(pod.namespace)):
            return False
        return pod_sel is None or selector_matches(pod_sel, pod.labels)


def _ns_of(policy: Obj) -> str:
    """Namespace of a policy object (``default`` when unset)."""
    return (policy.get("metadata") or {}).get("namespace") or "default"


def _port_matches(entry: Obj, dst: PodView, port: int, protocol: str) -> bool:
    if (entry.get("protocol") or "TCP") != protocol:
        return False
    want = _as_port(entry.get("port"))
    if want is None:
        return True
    if isinstance(want, int):
        end = entry.get("endPort")
        return want == port if end is None else want <= port <= int(end)
    if entry.get("endPort") is not None:
        return False  # endPort needs a numeric port; the API server rejects the combination
    return any(name == want and cport == port and proto == protocol
               for name, cport, proto in dst.ports)
