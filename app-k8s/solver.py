"""The reference operator: troubleshoots from text, changing only what is broken.

It reads only the observation: the intended connectivity and platform notes of the
prompt, the current probe report, and the output of its own
``kubectl get networkpolicy -o json``. It never sees ``Query.truth``, so it also works as
a remote purple agent that receives nothing but text.

What it changes, and only for policies the report implicates:

* a destination's **ingress** (a mismatch names it): the main rule rebuilt from the
  runbook, the monitoring rule kept, or rebuilt on the port a Prometheus or Grafana
  mismatch names; rules admitting anyone else dropped;
* a source's **egress** when it is restricted or blocks an external address: its
  callees, DNS, the external ranges it still has, and each address the report says
  must be reachable;
* metadata the report says is missing; policies missing or extra (agent damage); the
  default deny, when a new pod is no longer isolated.

Order keeps every step safe: ingress first (it can only make a pair match), then
creations and metadata, then egress, then deletions of extra policies. Each turn the
plan is recomputed from the latest snapshot and the current report, and commands already
issued since that snapshot are skipped. When a fresh snapshot gives nothing to do, it
says so (a reply with no command, which costs the turn) rather than read the same
policies again.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import shlex
from typing import Any

from netarena.common.agents import Observation
from netarena.common.errors import ConfigError
from netarena.k8s.judge import NEWCOMER
from netarena.k8s.manifests import (
    DENY_ALL,
    NS_NAME,
    canonical_policy,
    in_cluster_egress,
    monitoring_rule,
    peer,
)
from netarena.k8s.model import ANYONE, AppModel, parse_intended

__all__ = [
    "ReferenceK8sAgent",
    "Planner",
    "Intent",
    "plan_fixes",
    "SNAPSHOT_COMMAND",
    "HISTORY_MARKER",
    "NOTHING_LEFT",
]

log = logging.getLogger(__name__)

SNAPSHOT_COMMAND = "kubectl get networkpolicy -o json"
"""The one diagnostic the solver needs."""
HISTORY_MARKER = re.compile(r"^\[turn (\d+)\] \$ (.*)$", re.MULTILINE)
"""How the episode prints each previous command (shared format with ``episode``)."""
NOTHING_LEFT = ("Nothing left that I can repair: the policies the report implicates already "
                "match the runbook.")
"""The reply (no command) once a fresh snapshot gives nothing to do; it costs a turn."""
_NAMESPACE = re.compile(r"runs in namespace `([a-z0-9-]+)`")
_MONITORING = re.compile(r"Prometheus runs in namespace `([a-z0-9-]+)` \(pods labelled "
                         r"([^)\s]+)\)")
_MISMATCH = re.compile(r"^(\S+) → (\S+):(\d+) \(Expected: (True|False), Actual: (?:True|False)\)$",
                       re.MULTILINE)
_MISSING = re.compile(r"^networkpolicy (\S+): (label|annotation) ([^=\s]+)=(.*) is missing$",
                      re.MULTILINE)
_REPORT = "## Current probe report"
_REWRITE = re.compile(
    r"^kubectl patch networkpolicy (\S+) --type json .*\"/spec/(ingress|egress)\"")
_MODEL_LINE = re.compile(r"^- [a-z0-9-]+: (?:no listening port|service port)", re.MULTILINE)
_PARTIAL_ABOVE = 20
"""Applications with more services than this are read policy by policy, not all at once."""

_DENY_ALL_SPEC = {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
Rule = dict[str, Any]
Mismatch = tuple[str, str, int, bool]  # source, destination, port, expected
Step = tuple[str, str | None]  # command, manifest for its stdin


def _norm(value: Any) -> Any:
    """Canonical form for comparison: defaults filled, empty lists and nulls dropped."""
    if isinstance(value, dict):
        out = {k: _norm(v) for k, v in value.items() if v not in (None, [])}
        if "port" in out or "endPort" in out or out.get("protocol"):
            out.setdefault("protocol", "TCP")
        return {k: v for k, v in out.items() if v not in (None, [])}
    if isinstance(value, list):
        return [_norm(v) for v in value]
    return value


class Intent:
    """What the text says: the model, the monitoring namespace, the current report.

    Args:
        text: The observation (the latest probe report is the one read).
    """

    def __init__(self, text: str) -> None:
        ns = _NAMESPACE.search(text)
        self.model: AppModel = parse_intended(text, ns.group(1) if ns else "default")
        mon = _MONITORING.search(text)
        self.mon_ns = mon.group(1) if mon else None
        key, _, value = (mon.group(2) if mon else "=").partition("=")
        self.scraper = {key: value} if mon else {}
        report = text[text.rfind(_REPORT):] if _REPORT in text else text
        report = report.split("## History", 1)[0]
        self.mismatches: list[Mismatch] = [(s, d, int(p), e == "True")
                                           for s, d, p, e in _MISMATCH.findall(report)]
        self.missing: dict[str, dict[str, dict[str, str]]] = {}
        for name, kind, key, value in _MISSING.findall(report):
            self.missing.setdefault(name, {}).setdefault(kind + "s", {})[key] = value

    def monitoring_rule(self, port: int) -> Rule:
        """The rule letting Prometheus (its namespace AND its pods) scrape ``port``."""
        return monitoring_rule(self.mon_ns or "", self.scraper, port)

    def is_monitoring(self, rule: Rule) -> bool:
        """A rule that names the monitoring namespace or Prometheus's pods."""
        for source in rule.get("from") or []:
            ns_labels = ((source.get("namespaceSelector") or {}).get("matchLabels") or {})
            pod_labels = ((source.get("podSelector") or {}).get("matchLabels") or {})
            if self.mon_ns and (ns_labels.get(NS_NAME) == self.mon_ns or (
                    self.scraper and pod_labels == self.scraper)):
                return True
        return False


def _ingress(intent: Intent, name: str, current: list[Rule]) -> list[Rule]:
    spec = intent.model.service(name)
    rules: list[Rule] = []
    if ANYONE in spec.sources:
        return [{}]
    if spec.sources:
        rules.append({"from": [peer(s) for s in spec.sources],
                      "ports": [{"protocol": "TCP", "port": spec.container_port}]})
    ports = sorted({p for s, d, p, _ in intent.mismatches  # the monitoring namespace's probes
                    if d == name and "/" in s and p != spec.port})
    if ports and intent.mon_ns:
        rules += [intent.monitoring_rule(p) for p in ports]
    else:
        rules += [r for r in current if intent.is_monitoring(r)]
    return rules


def _egress(intent: Intent, name: str, current: list[Rule]) -> list[Rule]:
    model = intent.model
    rules: list[Rule] = in_cluster_egress(model, name)
    closed = [d for s, d, _, e in intent.mismatches if s == name and not e]
    for rule in current:
        blocks = [(p.get("ipBlock") or {}).get("cidr") for p in rule.get("to") or []]
        if blocks and all(blocks) and not any(_within(ip, b) for ip in closed for b in blocks):
            rules.append(rule)
    for src, dst, port, expected in intent.mismatches:
        if src == name and expected and dst not in model.names:
            rules.append({"to": [{"ipBlock": {"cidr": f"{dst}/32"}}],
                          "ports": [{"protocol": "TCP", "port": port}]})
    return rules


def _within(ip: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(ip) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


def _patch(name: str, ops: list[dict[str, Any]]) -> str:
    body = json.dumps(ops, separators=(",", ":"), sort_keys=True)
    return f"kubectl patch networkpolicy {name} --type json -p {shlex.quote(body)}"


def _egress_suspects(intent: Intent, current: dict[str, Any]) -> set[str]:
    """Sources whose egress may be to blame: restricted egress, or an external address."""
    model = intent.model
    out = set()
    for src, dst, _, expected in intent.mismatches:
        if src not in model.names or src not in current:
            continue
        egress = (current[src].get("spec") or {}).get("egress")
        if _is_address(dst) or (expected and dst in model.names and _norm(egress) != [{}]):
            out.add(src)
    return out


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


class Planner:
    """How the reference turns a snapshot into repairs.

    The reference uses it as is; a calibration baseline overrides the step it gets wrong
    (``netarena.k8s.baselines``): what a destination's ingress should be, what a source's
    egress should be, or the whole plan.
    """

    def ingress(self, intent: Intent, name: str, current: list[Rule]) -> list[Rule]:
        """The ingress rules destination ``name`` should have (``current``: what it has)."""
        return _ingress(intent, name, current)

    def egress(self, intent: Intent, name: str, current: list[Rule]) -> list[Rule]:
        """The egress rules source ``name`` should have (``current``: what it has)."""
        return _egress(intent, name, current)

    def plan(self, text: str, snapshot: dict[str, Any], only: set[str] | None = None,
             done: frozenset[tuple[str, str]] = frozenset()) -> list[Step]:
        """Commands (with an optional stdin manifest) that repair what the report implicates.

        Args:
            text: The observation: runbook, platform notes and the current probe report.
            snapshot: A ``NetworkPolicyList`` as ``kubectl get networkpolicy -o json``
                prints it.
            only: The snapshot holds just these policies (a partial ``get``): judge only them.
            done: ``(policy, "ingress"|"egress")`` already rewritten since the snapshot (the
                snapshot is stale there, so they are left alone).

        Returns:
            ``(command, yaml_or_None)`` in safe order; empty when nothing is implicated.
        """
        intent = Intent(text)
        model = intent.model
        wanted = {DENY_ALL, *model.names}
        if only is not None:
            wanted &= only
        current = {p["metadata"]["name"]: p for p in snapshot.get("items") or []}
        first: list[Step] = []
        middle: list[Step] = []
        late: list[Step] = []
        last: list[Step] = []
        for name in sorted(set(current) - wanted if only is None else ()):
            last.append((f"kubectl delete networkpolicy {name}", None))
        dests = {d for _, d, _, _ in intent.mismatches if d in model.names}
        newcomer = any(NEWCOMER in (s, d) for s, d, _, _ in intent.mismatches)
        for name in sorted(wanted):
            pol = current.get(name)
            if pol is None:
                middle.append(("kubectl apply -f -", json.dumps(_recreate(intent, name))))
                continue
            spec = pol.get("spec") or {}
            if name == DENY_ALL and newcomer and _norm(spec) != _norm(_DENY_ALL_SPEC):
                late.append((_patch(name, [{"op": "replace", "path": "/spec",
                                            "value": _DENY_ALL_SPEC}]), None))
            if name in dests and model.service(name).port is not None and (
                    name, "ingress") not in done:
                first += _rewrite(name, "ingress", spec,
                                  self.ingress(intent, name, spec.get("ingress") or []))
            if name in intent.missing:
                body = json.dumps({"metadata": intent.missing[name]}, sort_keys=True)
                middle.append((f"kubectl patch networkpolicy {name} --type merge -p "
                               f"{shlex.quote(body)}", None))
            if name in _egress_suspects(intent, current) and (name, "egress") not in done:
                late += _rewrite(name, "egress", spec,
                                 self.egress(intent, name, spec.get("egress") or []))
        return first + middle + late + last


def _rewrite(name: str, field: str, spec: dict[str, Any],
             want: list[Rule]) -> list[Step]:
    """The patch setting ``spec.<field>`` to ``want``; none when it already is."""
    if _norm(want) == _norm(spec.get(field)):
        return []
    return [(_patch(name, [{"op": "add", "path": f"/spec/{field}",
                            "value": canonical_policy(want)}]), None)]


def plan_fixes(text: str, snapshot: dict[str, Any], only: set[str] | None = None,
               done: frozenset[tuple[str, str]] = frozenset()) -> list[Step]:
    """The reference's repairs (``Planner().plan``; see there for the arguments)."""
    return Planner().plan(text, snapshot, only, done)


def _recreate(intent: Intent, name: str) -> dict[str, Any]:
    model = intent.model
    spec: dict[str, Any]
    if name == DENY_ALL:
        spec = dict(_DENY_ALL_SPEC)
    else:
        svc = model.service(name)
        spec = {"podSelector": {"matchLabels": {"app": name}},
                "policyTypes": ["Egress"] if svc.port is None else ["Ingress", "Egress"],
                "egress": _egress(intent, name, [])}
        if svc.port is not None:
            spec["ingress"] = _ingress(intent, name, [])
    meta: dict[str, Any] = {"name": name, "namespace": model.namespace,
                            **intent.missing.get(name, {})}
    return canonical_policy({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                             "metadata": meta, "spec": spec})


def _history(text: str) -> list[tuple[str, str]]:
    """(command, output) of every previous turn, in order."""
    marks = list(HISTORY_MARKER.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(2).strip(), text[m.end():end]))
    return out


def _refused(output: str) -> bool:
    """A history turn the episode refused (it changed nothing)."""
    return output.lstrip().startswith("[rejected:")


def _decode_list(output: str) -> dict[str, Any] | None:
    start = output.find("{")
    if start < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(output, start)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and "items" in obj else None


def _snapshot_command(text: str) -> str:
    """The full snapshot, or for large applications only the implicated policies."""
    if len(_MODEL_LINE.findall(text)) <= _PARTIAL_ABOVE:
        return SNAPSHOT_COMMAND
    intent = Intent(text)
    names = {DENY_ALL, *intent.missing}
    for src, dst, _, expected in intent.mismatches:
        external = dst not in intent.model.names and src in intent.model.names
        names |= {n for n in (dst, src if expected or external else dst)
                  if n in intent.model.names}
    return f"kubectl get networkpolicy {' '.join(sorted(names))} -o json"


def _requested(cmd: str) -> set[str] | None:
    """Policy names a snapshot command asked for (``None``: all; empty: not a snapshot)."""
    words = cmd.split()
    if words[:3] != ["kubectl", "get", "networkpolicy"] or words[-2:] != ["-o", "json"]:
        return set()
    names = words[3:-2]
    return set(names) if names else None


class ReferenceK8sAgent:
    """Snapshot the policies, then repair what the report implicates, ingress first.

    Args:
        planner: What to repair given a snapshot (the reference's by default; a
            calibration baseline passes one with a deliberate mistake).
        name: The agent's name in results.
    """

    def __init__(self, planner: Planner | None = None, name: str = "k8s-reference") -> None:
        self.planner = planner or Planner()
        self.name = name

    async def act(self, observation: Observation) -> str:
        """Next command, fenced (plus a ```yaml block when it re-creates a policy)."""
        return self.decide(observation.text)

    def decide(self, text: str) -> str:
        """The reply for ``text`` (pure: same text, same reply)."""
        history = _history(text)
        snap_at, snapshot, only = -1, None, None
        for i, (cmd, output) in enumerate(history):
            names = _requested(cmd)
            if names != set() and (decoded := _decode_list(output)) is not None:
                snap_at, snapshot, only = i, decoded, names
        if snapshot is None:
            return f"```\n{_snapshot_command(text)}\n```"
        issued = {cmd for cmd, _ in history[snap_at + 1:]}
        done = frozenset((m.group(1), m.group(2)) for cmd in issued
                         for m in _REWRITE.finditer(cmd))
        try:
            plan = self.planner.plan(text, snapshot, only, done)
        except ConfigError:
            log.warning("no intended connectivity in the observation")
            return f"```\n{SNAPSHOT_COMMAND}\n```"
        for cmd, manifest in plan:
            if cmd not in issued:
                reply = f"```\n{cmd}\n```"
                return reply + (f"\n```yaml\n{manifest}\n```" if manifest else "")
        again = _snapshot_command(text)
        ran = [cmd for cmd, output in history[snap_at + 1:] if not _refused(output)]
        if not ran and _requested(again) == only:
            return NOTHING_LEFT  # the same snapshot again would plan nothing again
        return f"```\n{again}\n```"
