"""NetworkPolicy faults: five types, each with several methods chosen by the seed.

A fault rewrites the ``spec`` of one policy. Injection is pure (a ``random.Random`` and
the current policies in, a fault record out) and verified: a candidate that leaves the
connectivity matrix unchanged is discarded and another one is drawn.

| code | type | what it breaks |
|---|---|---|
| RI | remove_ingress | an allowed caller loses access (peer or rule removed, peer label typo) |
| AI | add_ingress | a caller that must stay out gets in (extra peer, rule, namespace, split peer) |
| CP | change_port | the allowed port is wrong |
| CPR | change_protocol | the allowed protocol is UDP/SCTP instead of TCP |
| AE | add_egress | a service's egress becomes restrictive (deny all, DNS only, one target) |
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Sequence
from typing import Any

from netarena.common.errors import EmulatorError
from netarena.k8s.detail import KUBE_DNS_LABELS
from netarena.k8s.judge import judge
from netarena.k8s.manifests import NS_NAME, canonical_policy
from netarena.k8s.model import ANYONE, AppModel

__all__ = ["FAULT_TYPES", "inject_fault", "apply_faults", "model_pods", "model_namespaces"]

FAULT_TYPES = {
    "RI": "remove_ingress",
    "AI": "add_ingress",
    "CP": "change_port",
    "CPR": "change_protocol",
    "AE": "add_egress",
}
"""Fault code → fault type."""

Policy = dict[str, Any]
Candidate = tuple[str, str, dict[str, Any]]  # (method, description, new spec)
_MAX_TRIES = 60


def _pod(name: str, namespace: str, labels: dict[str, str], ports: list[tuple[str, int, str]],
         index: int) -> Policy:
    return {
        "metadata": {"name": f"{name}-0", "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "server", "ports": [
            {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]}]},
        "status": {"podIP": f"10.244.{index // 250}.{index % 250 + 2}"},
    }


def model_pods(model: AppModel) -> list[Policy]:
    """One Pod object per workload, as the Deployments would create them.

    The application's services, the monitoring namespace's Prometheus and Grafana, and
    the cluster DNS: what the judge needs to verify injections without a store (IPs are
    placeholders outside every external range the detail draws).
    """
    metrics = model.detail.monitoring.metrics_ports if model.detail else {}
    pods = []
    for i, s in enumerate(model.services):
        ports = [(s.port_name, s.container_port, "TCP")] if s.container_port is not None else []
        if s.name in metrics:
            ports.append(("metrics", metrics[s.name], "TCP"))
        pods.append(_pod(s.name, model.namespace, {"app": s.name}, ports, i))
    base = len(pods)
    if model.detail is not None:
        mon = model.detail.monitoring
        pods.append(_pod("prometheus", mon.namespace, dict(mon.scraper_labels),
                         [("web", 9090, "TCP")], base))
        pods.append(_pod("grafana", mon.namespace, dict(mon.other_labels),
                         [("http", 3000, "TCP")], base + 1))
    pods.append(_pod("coredns", "kube-system", dict(KUBE_DNS_LABELS),
                     [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")], base + 2))
    return pods


def model_namespaces(model: AppModel) -> list[Policy]:
    """The application's namespace, the monitoring namespace and ``kube-system``."""
    names = [model.namespace, "kube-system"]
    if model.detail is not None:
        names.append(model.detail.monitoring.namespace)
    return [{"metadata": {"name": ns, "labels": {NS_NAME: ns}}} for ns in dict.fromkeys(names)]


def _peer(app: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"app": app}}}


def _remove_ingress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    rules = spec.get("ingress") or []
    if not rules:
        return None
    name = pol["metadata"]["name"]
    method = rng.choice(["drop_peer", "drop_rule", "relabel_peer"])
    peered = [r for r in rules if r.get("from")]
    if method != "drop_rule" and peered:
        rule = rng.choice(peered)
        idx = rng.randrange(len(rule["from"]))
        peer = rule["from"][idx]
        app = ((peer.get("podSelector") or {}).get("matchLabels") or {}).get("app")
        if method == "relabel_peer" and app:
            peer["podSelector"]["matchLabels"]["app"] = app + rng.choice(["-v2", "s", "-svc"])
            return method, f"{name}: peer app={app} relabelled", spec
        if len(rule["from"]) > 1:
            del rule["from"][idx]
            return "drop_peer", f"{name}: peer app={app} removed", spec
    spec["ingress"] = []
    return "drop_rule", f"{name}: all ingress rules removed", spec


def _add_ingress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    name = pol["metadata"]["name"]
    if name not in model.names or model.service(name).port is None:
        return None
    svc = model.service(name)
    if ANYONE in svc.sources:
        return None
    intruders = [s for s in model.names if s != name and not model.expected(s, name)]
    if not intruders:
        return None
    src = rng.choice(intruders)
    spec = copy.deepcopy(pol["spec"])
    rules = spec.setdefault("ingress", [])
    split = [r for r in rules if len(r.get("from") or []) == 1
             and {"podSelector", "namespaceSelector"} <= set(r["from"][0])]
    method = rng.choice(["add_peer", "add_rule", "namespace_peer"] + ["split_peer"] * bool(split))
    if method == "split_peer":
        peer = split[0]["from"][0]
        split[0]["from"] = [{"namespaceSelector": peer["namespaceSelector"]},
                            {"podSelector": peer["podSelector"]}]
        return method, f"{name}: monitoring peer split into namespace OR pods", spec
    if method == "add_peer" and rules and rules[0].get("from"):
        rules[0]["from"].append(_peer(src))
        return method, f"{name}: peer app={src} added", spec
    if method == "namespace_peer":
        ns_sel = {"matchLabels": {NS_NAME: model.namespace}}
        rules.append({"from": [{"namespaceSelector": ns_sel}]})
        return method, f"{name}: every pod of namespace {model.namespace} allowed", spec
    rules.append({"from": [_peer(src)], "ports": [{"port": svc.container_port, "protocol": "TCP"}]})
    return "add_rule", f"{name}: rule allowing app={src} added", spec


def _port_entries(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for r in spec.get("ingress") or [] for p in r.get("ports") or []]


def _change_port(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    entries = [p for p in _port_entries(spec) if isinstance(p.get("port"), int)]
    if not entries:
        return None
    entry = rng.choice(entries)
    old = entry["port"]
    known = {s.container_port for s in model.servers} | {s.port for s in model.servers}
    others = sorted(p for p in known if p is not None and p != old)
    method = rng.choice(["off_by", "other_port"])
    if method == "other_port" and others:
        new = rng.choice(others)
    else:
        new = old + rng.choice([1, -1, 10, 100])
    entry["port"] = new
    return method, f"{pol['metadata']['name']}: port {old} changed to {new}", spec


def _change_protocol(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    entries = [p for p in _port_entries(spec) if (p.get("protocol") or "TCP") == "TCP"]
    if not entries:
        return None
    entry = rng.choice(entries)
    new = rng.choice(["UDP", "UDP", "SCTP"])
    entry["protocol"] = new
    return "to_" + new.lower(), f"{pol['metadata']['name']}: protocol TCP changed to {new}", spec


def _add_egress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    name = pol["metadata"]["name"]
    if name not in model.names:
        return None
    spec = copy.deepcopy(pol["spec"])
    targets = [d.name for d in model.servers if d.name != name and model.expected(name, d.name)]
    methods = ["deny_egress", "dns_only"] + (["one_target"] if len(targets) > 1 else [])
    method = rng.choice(methods)
    if "Egress" not in spec.setdefault("policyTypes", ["Ingress"]):
        spec["policyTypes"].append("Egress")
    if method == "deny_egress":
        spec["egress"] = []
        return method, f"{name}: all egress denied", spec
    if method == "dns_only":
        dns = [{"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"}]
        spec["egress"] = [{"ports": dns}]
        return method, f"{name}: egress limited to DNS", spec
    keep = rng.choice(targets)
    spec["egress"] = [{"to": [_peer(keep)]}]
    return method, f"{name}: egress limited to app={keep}", spec


_SAMPLERS: dict[str, Callable[[AppModel, Policy, random.Random], Candidate | None]] = {
    "RI": _remove_ingress,
    "AI": _add_ingress,
    "CP": _change_port,
    "CPR": _change_protocol,
    "AE": _add_egress,
}


def apply_faults(policies: Sequence[Policy], faults: Sequence[dict[str, Any]]) -> list[Policy]:
    """Return copies of ``policies`` with each fault's ``spec`` written over its policy."""
    out = copy.deepcopy(list(policies))
    by_name = {p["metadata"]["name"]: p for p in out}
    for fault in faults:
        by_name[fault["policy"]]["spec"] = canonical_policy(copy.deepcopy(fault["spec"]))
    return out


def inject_fault(code: str, model: AppModel, policies: Sequence[Policy],
                 rng: random.Random) -> dict[str, Any]:
    """Draw one fault of type ``code`` that changes the connectivity matrix.

    Args:
        code: ``RI``, ``AI``, ``CP``, ``CPR`` or ``AE``.
        model: The application (intended connectivity).
        policies: The current (possibly already faulted) policies.
        rng: Source of every choice.

    Returns:
        ``{"code", "type", "policy", "method", "description", "spec"}``; ``spec`` is the
        policy's whole faulted spec.

    Raises:
        EmulatorError: No candidate changed the matrix (should not happen on valid models).
    """
    pods, nss = model_pods(model), model_namespaces(model)
    before = set(judge(model, pods, nss, policies).mismatches)
    names = sorted(p["metadata"]["name"] for p in policies)
    by_name = {p["metadata"]["name"]: p for p in policies}
    for _ in range(_MAX_TRIES):
        target = by_name[rng.choice(names)]
        cand = _SAMPLERS[code](model, target, rng)
        if cand is None:
            continue
        method, description, spec = cand
        fault = {"code": code, "type": FAULT_TYPES[code], "policy": target["metadata"]["name"],
                 "method": method, "description": description, "spec": spec}
        after = set(judge(model, pods, nss, apply_faults(policies, [fault])).mismatches)
        if after != before:
            return fault
    raise EmulatorError(f"no {code} fault changed the connectivity matrix")
