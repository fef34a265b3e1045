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
import json
import random
import string
from collections.abc import Callable, Sequence
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.k8s.detail import KUBE_DNS_LABELS
from netarena.k8s.judge import apply_faults, judge
from netarena.k8s.manifests import NS_NAME
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
        for k, w in enumerate(model.detail.workloads):
            pods.append(_pod(w.labels["app"], w.namespace, dict(w.labels), [], base + 3 + k))
    pods.append(_pod("coredns", "kube-system", dict(KUBE_DNS_LABELS),
                     [("dns", 53, "UDP"), ("dns-tcp", 53, "TCP")], base + 2))
    return pods


def model_namespaces(model: AppModel) -> list[Policy]:
    """The application's namespace, the monitoring namespace and ``kube-system``."""
    names = [model.namespace, "kube-system"]
    if model.detail is not None:
        names += [model.detail.monitoring.namespace, *model.detail.namespaces]
    return [{"metadata": {"name": ns, "labels": {NS_NAME: ns}}} for ns in dict.fromkeys(names)]


def _peer(app: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"app": app}}}


def _token(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _rules(spec: dict[str, Any], direction: str = "ingress") -> list[dict[str, Any]]:
    return [r for r in spec.get(direction) or [] if r]


def _entries(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for r in rules for p in r.get("ports") or []]


def _remove_ingress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    rules = _rules(spec)
    if not rules:
        return None
    name = pol["metadata"]["name"]
    rule = rng.choice(rules)
    peers = rule.get("from") or []
    method = rng.choice(["drop_peer", "drop_rule", "relabel_peer", "drop_port"])
    at = rules.index(rule)
    if method == "drop_port" and len(rule.get("ports") or []) > 1:
        k = rng.randrange(len(rule["ports"]))
        entry = rule["ports"].pop(k)
        return method, f"{name}: ingress rule {at} port entry {k} ({entry.get('port')}) removed", \
            spec
    labelled = [p for p in peers if any((p.get(k) or {}).get("matchLabels")
                                        for k in ("podSelector", "namespaceSelector"))]
    if method == "relabel_peer" and labelled:
        peer = rng.choice(labelled)
        sel = rng.choice([k for k in ("podSelector", "namespaceSelector")
                          if (peer.get(k) or {}).get("matchLabels")])
        labels = peer[sel]["matchLabels"]
        key = rng.choice(sorted(labels))
        old = labels[key]
        labels[key] = rng.choice([f"{old}-{_token(rng, 3)}", f"{old[:-1]}{_token(rng, 1)}",
                                  _token(rng, rng.randint(4, 9))])
        return method, f"{name}: peer {key}={old} relabelled to {labels[key]}", spec
    if method in ("drop_peer", "relabel_peer") and len(peers) > 1:
        k = rng.randrange(len(peers))
        peer = peers.pop(k)
        return "drop_peer", f"{name}: ingress rule {at} peer {k} {json.dumps(peer)} removed", spec
    spec["ingress"] = [r for r in spec.get("ingress") or [] if r is not rule]
    return "drop_rule", f"{name}: ingress rule {at} {json.dumps(rule)} removed", spec


def _intruder(model: AppModel, name: str, rng: random.Random) -> dict[str, Any] | None:
    """A peer for something that must not reach ``name``.

    A service, another team's pod, or a range on the internet.
    """
    options: list[dict[str, Any]] = [_peer(s) for s in model.names
                                     if s != name and not model.expected(s, name)]
    detail = model.detail
    if detail is not None:
        mon = detail.monitoring
        options.append({"namespaceSelector": {"matchLabels": {NS_NAME: mon.namespace}},
                        "podSelector": {"matchLabels": dict(mon.other_labels)}})
        for w in detail.workloads:
            options.append({"namespaceSelector": {"matchLabels": {NS_NAME: w.namespace}},
                            "podSelector": {"matchLabels": dict(w.labels)}})
        options.append({"ipBlock": {"cidr": f"{detail.stranger_ip}/{rng.randint(16, 30)}"}})
    return rng.choice(options) if options else None


def _add_ingress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    name = pol["metadata"]["name"]
    if name not in model.names or model.service(name).port is None:
        return None
    svc = model.service(name)
    if ANYONE in svc.sources:
        return None
    spec = copy.deepcopy(pol["spec"])
    rules = spec.setdefault("ingress", [])
    peered = [r for r in rules if r.get("from")]
    split = [(r, k) for r in peered for k, p in enumerate(r["from"])
             if {"podSelector", "namespaceSelector"} <= set(p)]
    method = rng.choice(["add_peer", "add_rule", "namespace_peer", "split_peer", "drop_except"])
    if method == "split_peer" and split:
        rule, k = rng.choice(split)
        peer = rule["from"][k]
        rule["from"][k:k + 1] = [{"namespaceSelector": peer["namespaceSelector"]},
                                 {"podSelector": peer["podSelector"]}]
        return method, f"{name}: a namespace AND pod peer split into namespace OR pods", spec
    blocks = [p["ipBlock"] for r in peered for p in r["from"]
              if isinstance(p.get("ipBlock"), dict) and p["ipBlock"].get("except")]
    if method == "drop_except" and blocks:
        block = rng.choice(blocks)
        del block["except"]
        return method, f"{name}: the except of ipBlock {block['cidr']} removed", spec
    intruder = _intruder(model, name, rng)
    if intruder is None:
        return None
    if method in ("add_peer", "split_peer", "drop_except") and peered:
        rule = rng.choice(peered)
        rule["from"].insert(rng.randint(0, len(rule["from"])), intruder)
        return "add_peer", f"{name}: peer {json.dumps(intruder)} added", spec
    if method == "namespace_peer" and peered:
        rule = rng.choice(peered)
        space = rng.choice([model.namespace, *(model.detail.namespaces if model.detail else ())])
        rule["from"].insert(rng.randint(0, len(rule["from"])),
                            {"namespaceSelector": {"matchLabels": {NS_NAME: space}}})
        return method, f"{name}: every pod of namespace {space} allowed", spec
    port = rng.choice([svc.container_port, rng.randrange(1024, 65536)])
    rules.insert(rng.randint(0, len(rules)),
                 {"from": [intruder], "ports": [{"port": port, "protocol": "TCP"}]})
    return "add_rule", f"{name}: rule allowing {json.dumps(intruder)} on {port} added", spec


def _change_port(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    direction = rng.choice(["ingress", "ingress", "egress"])
    entries = [p for p in _entries(_rules(spec, direction)) if p.get("port") is not None]
    if not entries:
        return None
    entry = rng.choice(entries)
    old = entry["port"]
    if "endPort" in entry and rng.random() < 0.5:
        entry["endPort"] = int(entry["port"]) + rng.randrange(0, 3)
        return "narrow_range", (f"{pol['metadata']['name']}: {_where(spec, direction, entry)} "
                                f"port range of {old} narrowed to {entry['endPort']}"), spec
    new = old
    while new == old:
        new = rng.choice([rng.randrange(1024, 65536), (int(old) if isinstance(old, int)
                                                       else 8080) + rng.choice([1, -1, 10])])
    entry["port"] = new
    entry.pop("endPort", None)
    where = _where(spec, direction, entry)
    return "other_port", f"{pol['metadata']['name']}: {where} port {old} changed to {new}", spec


def _where(spec: dict[str, Any], direction: str, entry: dict[str, Any]) -> str:
    """``ingress rule 2 entry 1``: where ``entry`` sits in ``spec``."""
    for i, rule in enumerate(spec.get(direction) or []):
        for k, other in enumerate(rule.get("ports") or []):
            if other is entry:
                return f"{direction} rule {i} entry {k}"
    return direction


def _change_protocol(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    spec = copy.deepcopy(pol["spec"])
    direction = rng.choice(["ingress", "ingress", "egress"])
    entries = [p for p in _entries(_rules(spec, direction)) if (p.get("protocol") or "TCP")
               == "TCP"]
    if not entries:
        return None
    entry = rng.choice(entries)
    new = rng.choice(["UDP", "UDP", "SCTP"])
    entry["protocol"] = new
    where = _where(spec, direction, entry)
    return "to_" + new.lower(), (f"{pol['metadata']['name']}: {where} port {entry.get('port')} "
                                 f"protocol TCP changed to {new}"), spec


def _add_egress(model: AppModel, pol: Policy, rng: random.Random) -> Candidate | None:
    name = pol["metadata"]["name"]
    if name not in model.names:
        return None
    spec = copy.deepcopy(pol["spec"])
    rules = spec.get("egress") or []
    if rules and rules != [{}]:
        rule = rng.choice(rules)
        peers = rule.get("to") or []
        at = rules.index(rule)
        if len(peers) > 1 and rng.random() < 0.5:
            k = rng.randrange(len(peers))
            peer = peers.pop(k)
            return "drop_egress_peer", f"{name}: egress rule {at} peer {k} {json.dumps(peer)} " \
                "removed", spec
        spec["egress"] = [r for r in rules if r is not rule]
        return "drop_egress_rule", f"{name}: egress rule {at} {json.dumps(rule)} removed", spec
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
