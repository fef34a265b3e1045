"""The ``shape`` rung: an agent that reverts fault-looking policy entries, never a symptom.

It reads what any agent could (the reference's policy snapshot, every pod and namespace, the
workloads' template labels), scores each rule, peer and port entry with the audit's shape
model (``netarena.common.audit.shape_model``, trained on other instances' truth and cached
per build) through the very fields ``audit.Observed`` gives the audit, and undoes what the
model flags at its 1%-false-positive cut: a flagged port near a runbook port goes back to
that port, any other flagged port, peer or rule is removed. It never reads the probe report,
the logs or a probe's answer. On a sound benchmark it solves almost nothing safely.
"""

from __future__ import annotations

import copy
import json
import shlex
from functools import cache
from typing import Any

from netarena.common.core.agents import Observation
from netarena.common.core.errors import ConfigError
from netarena.k8s.audit import Located, Observed
from netarena.k8s.solver import (
    NOTHING_LEFT,
    PODS_COMMAND,
    SNAPSHOT_COMMAND,
    Intent,
    decode_pods,
    decode_snapshot,
    history,
    patch_command,
)

__all__ = ["ShapeK8sAgent", "WORKLOADS_COMMAND"]

WORKLOADS_COMMAND = ("kubectl get deployments,cronjobs -A -o jsonpath='{range .items[*]}"
                     "{.metadata.namespace}{\"\\t\"}{.spec.template.metadata.labels}"
                     "{.spec.jobTemplate.spec.template.metadata.labels}{\"\\n\"}{end}'")
"""Every Deployment's and CronJob's namespace and pod-template labels, one line each."""
_READS = (SNAPSHOT_COMMAND, PODS_COMMAND, WORKLOADS_COMMAND)


@cache
def _model() -> Any:
    from netarena.common.audit import shape_model
    from netarena.common.core.app import load_app

    return shape_model(load_app("k8s"))


def _words(command: str) -> tuple[str, ...]:
    """A command as the shell splits it (the history shows it re-quoted)."""
    try:
        return tuple(shlex.split(command))
    except ValueError:
        return (command,)


def _workloads(output: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for line in output.splitlines():
        namespace, tab, labels = line.partition("\t")
        try:
            out.append((namespace, json.loads(labels))) if tab and labels else None
        except json.JSONDecodeError:
            continue
    return out


def _undo(spec: dict[str, Any], where: Located, runbook: list[int]) -> None:
    """Revert one flagged object of ``spec`` in place (removals marked ``None``)."""
    kind, _, direction, i, j = where
    rules = spec.get(direction) or []
    if kind == "rule":
        rules[i] = None
    elif kind == "peer" and rules[i] is not None:
        side = "from" if direction == "ingress" else "to"
        rules[i][side][j] = None
    elif kind == "port" and rules[i] is not None:
        entry = rules[i]["ports"][j]
        port = entry.get("port")
        near = [p for p in runbook if isinstance(port, int) and 0 < abs(p - port) <= 10]
        rules[i]["ports"][j] = {**entry, "port": near[0]} if near else None


def _compact(spec: dict[str, Any]) -> dict[str, Any]:
    out = dict(spec)
    for direction, side in (("ingress", "from"), ("egress", "to")):
        if direction not in spec:
            continue
        rules = []
        for rule in spec[direction]:
            if rule is None:
                continue
            kept = {k: [x for x in v if x is not None] if k in (side, "ports") else v
                    for k, v in rule.items()}
            if all(kept.get(k) != [] for k in (side, "ports") if k in rule):
                rules.append(kept)  # a peer or port list emptied would open the rule
        out[direction] = rules
    return out


class ShapeK8sAgent:
    """Read the policies, pods and workloads, then patch each flagged policy once."""

    name = "baseline:shape"

    async def act(self, observation: Observation) -> str:
        """Next command, fenced (or the reference's "nothing left" reply)."""
        return self.decide(observation.text)

    def decide(self, text: str) -> str:
        """The reply for ``text`` (pure: same text, same reply)."""
        outputs = {_words(cmd): out for cmd, out in history(text)}
        for read in _READS:
            if _words(read) not in outputs:
                return f"```\n{read}\n```"
        snapshot = decode_snapshot(outputs[_words(SNAPSHOT_COMMAND)])
        world = decode_pods(outputs[_words(PODS_COMMAND)])
        if snapshot is None or world is None:
            return NOTHING_LEFT
        intent = Intent(text)
        try:
            model = intent.model
        except ConfigError:
            return NOTHING_LEFT
        runbook = [s.container_port for s in model.servers if s.container_port]
        policies = snapshot["items"]
        observed = Observed(intent.namespace, policies, *world,
                            _workloads(outputs[_words(WORKLOADS_COMMAND)]), runbook, model.names)
        located = observed.objects()
        flags = _model().flags([obj for _, obj in located])
        specs = {p["metadata"]["name"]: copy.deepcopy(p.get("spec") or {}) for p in policies}
        touched: list[str] = []
        for (where, _), flag in zip(located, flags, strict=True):
            if flag and where[0] != "policy":
                _undo(specs[where[1]], where, runbook)
                touched += [] if where[1] in touched else [where[1]]
        for name in touched:
            old, new = next(p.get("spec") or {} for p in policies
                            if p["metadata"]["name"] == name), _compact(specs[name])
            ops = [{"op": "add", "path": f"/spec/{d}", "value": new[d]}
                   for d in ("ingress", "egress") if d in new and new[d] != old.get(d)]
            cmd = patch_command(name, ops)
            if ops and _words(cmd) not in outputs:
                return f"```\n{cmd}\n```"
        return NOTHING_LEFT
