"""The reference operator: restores every NetworkPolicy to the intended configuration.

It reads only the observation text: the intended connectivity in the prompt (from which
it renders the healthy policies with the app's own renderer, as an operator holding the
manifests would), the mismatch report, and the output of its own
``kubectl get networkpolicy -o json``. It never sees ``Query.truth``. It therefore also
works as a remote purple agent that receives nothing but text.

Safety: fixes go in two phases so the mismatch count never rises. First every
destination's ``ingress`` (an ingress fix can only make a pair match); then the rest of
each spec (egress, policyTypes, podSelector), once no ingress fault can make a pair that
egress newly lets out go wrong.
"""

from __future__ import annotations

import json
import logging
import re
import shlex
from typing import Any

from netarena.common.agents import Observation
from netarena.common.errors import ConfigError
from netarena.k8s.manifests import render_policies
from netarena.k8s.model import parse_intended

__all__ = ["ReferenceK8sAgent", "plan_fixes", "SNAPSHOT_COMMAND", "HISTORY_MARKER"]

log = logging.getLogger(__name__)

SNAPSHOT_COMMAND = "kubectl get networkpolicy -o json"
"""The one diagnostic the solver needs."""
HISTORY_MARKER = re.compile(r"^\[turn (\d+)\] \$ (.*)$", re.MULTILINE)
"""How the episode prints each previous command (shared format with ``episode``)."""
_NAMESPACE = re.compile(r"runs in namespace `([a-z0-9-]+)`")
_ALL_MATCH = re.compile(r"^All \d+ probes match", re.MULTILINE)
_MODEL_LINE = re.compile(r"^- [a-z0-9-]+: (?:no listening port|service port)", re.MULTILINE)


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


def _patch_cmd(name: str, ops: list[dict[str, Any]]) -> str:
    body = json.dumps(ops, separators=(",", ":"), sort_keys=True)
    return f"kubectl patch networkpolicy {name} --type json -p {shlex.quote(body)}"


def _ops(current: dict[str, Any], desired: dict[str, Any],
         keys: tuple[str, ...]) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    for key in keys:
        cur, want = _norm(current.get(key)), _norm(desired.get(key))
        if cur == want or (key == "podSelector" and not cur and not want):
            continue
        if desired.get(key) in (None, []):
            if key in current:
                ops.append({"op": "remove", "path": f"/spec/{key}"})
        else:
            ops.append({"op": "add", "path": f"/spec/{key}", "value": desired[key]})
    return ops


def plan_fixes(text_model: str, snapshot: dict[str, Any],
               only: set[str] | None = None) -> list[tuple[str, str | None]]:
    """Commands (with an optional stdin manifest) that restore the healthy policies.

    Args:
        text_model: Text holding the intended-connectivity section and the namespace.
        snapshot: A ``NetworkPolicyList`` as ``kubectl get networkpolicy -o json`` prints it.
        only: The snapshot holds just these policies (a partial ``get``): judge only them.

    Returns:
        ``(command, yaml_or_None)`` in safe order; empty when nothing differs.
    """
    ns_match = _NAMESPACE.search(text_model)
    model = parse_intended(text_model, ns_match.group(1) if ns_match else "default")
    desired = {p["metadata"]["name"]: p for p in render_policies(model)
               if only is None or p["metadata"]["name"] in only}
    current = {p["metadata"]["name"]: p for p in snapshot.get("items") or []}
    first: list[tuple[str, str | None]] = []
    second: list[tuple[str, str | None]] = []
    for name in sorted(set(current) - set(desired)):
        first.append((f"kubectl delete networkpolicy {name}", None))
    missing = [json.dumps(want) for name, want in desired.items() if name not in current]
    if missing:  # JSON is YAML; one multi-document apply re-creates them all
        first.append(("kubectl apply -f -", "\n---\n".join(missing)))
    for name, want in desired.items():
        if name not in current:
            continue
        cur_spec, want_spec = current[name].get("spec") or {}, want["spec"]
        ingress_ops = _ops(cur_spec, want_spec, ("ingress",))
        if ingress_ops:
            first.append((_patch_cmd(name, ingress_ops), None))
        rest = _ops(cur_spec, want_spec, ("podSelector", "policyTypes", "egress"))
        if rest:
            second.append((_patch_cmd(name, rest), None))
    return first + second


def _history(text: str) -> list[tuple[str, str]]:
    """(command, output) of every previous turn, in order."""
    marks = list(HISTORY_MARKER.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(2).strip(), text[m.end():end]))
    return out


def _decode_list(output: str) -> dict[str, Any] | None:
    start = output.find("{")
    if start < 0:
        return None
    try:
        obj, _ = json.JSONDecoder().raw_decode(output, start)
    except json.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) and "items" in obj else None


_MISMATCH = re.compile(r"^(\S+) → (\S+):\d+ \(Expected: (True|False), Actual: (?:True|False)\)$",
                       re.MULTILINE)
_PARTIAL_ABOVE = 20
"""Applications with more services than this are read policy by policy, not all at once."""


def _snapshot_command(text: str) -> str:
    """The full snapshot, or for large applications only the implicated policies.

    Those are the policies a mismatch implicates (the destination's, plus the source's when
    access is missing) and ``deny-all``.
    """
    if len(_MODEL_LINE.findall(text)) <= _PARTIAL_ABOVE:
        return SNAPSHOT_COMMAND
    names = {"deny-all"}
    for src, dst, expected in _MISMATCH.findall(text):
        names.add(dst)
        if expected == "True":
            names.add(src)
    return f"kubectl get networkpolicy {' '.join(sorted(names))} -o json"


def _requested(cmd: str) -> set[str] | None:
    """Policy names a snapshot command asked for (``None``: all of them)."""
    words = cmd.split()
    if words[:3] != ["kubectl", "get", "networkpolicy"] or words[-2:] != ["-o", "json"]:
        return set()
    names = words[3:-2]
    return set(names) if names else None


class ReferenceK8sAgent:
    """Snapshot the policies once, then patch each faulty one back, ingress first."""

    name = "k8s-reference"

    async def act(self, observation: Observation) -> str:
        """Next command, fenced (plus a ```yaml block when it re-creates a policy)."""
        return self.decide(observation.text)

    def decide(self, text: str) -> str:
        """The reply for ``text`` (pure: same text, same reply)."""
        if _ALL_MATCH.search(text):
            return f"```\n{SNAPSHOT_COMMAND}\n```"
        history = _history(text)
        snap_at, snapshot, only = -1, None, None
        for i, (cmd, output) in enumerate(history):
            names = _requested(cmd)
            if names != set() and (decoded := _decode_list(output)) is not None:
                snap_at, snapshot, only = i, decoded, names
        if snapshot is None:
            return f"```\n{_snapshot_command(text)}\n```"
        try:
            plan = plan_fixes(text, snapshot, only)
        except ConfigError:
            log.warning("no intended connectivity in the observation")
            return f"```\n{SNAPSHOT_COMMAND}\n```"
        issued = {cmd for cmd, _ in history[snap_at + 1:]}
        for cmd, manifest in plan:
            if cmd not in issued:
                reply = f"```\n{cmd}\n```"
                return reply + (f"\n```yaml\n{manifest}\n```" if manifest else "")
        return f"```\n{SNAPSHOT_COMMAND}\n```"
