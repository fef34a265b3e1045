"""The reference operator: troubleshoots from text and kubectl, changing only what is broken.

It reads only the observation: the runbook and platform notes of the prompt, the current
probe report (every probe that differs from the healthy cluster), and the output of its
own reads: ``kubectl get networkpolicy -o json`` and one ``kubectl get pods,namespaces``
listing. It never sees ``Query.truth``, so it also works as a remote purple agent that
receives nothing but text.

It does not rebuild policies from the runbook: policies carry rules, peers, named ports,
ranges and exceptions the runbook never shows. Instead ``repair.repairs`` asks the policy
engine which single edit of one rule entry explains reported probes without breaking any
other, applies it, and repeats; each edit becomes one JSON patch of the field it changed.
Metadata the report says is missing is merged back first. After each patch the planner
replays its own successful patches on the snapshot, so one snapshot serves the episode; a
patch that failed (a timeout under load may still have landed) sends it back to read the
policies, and it tries one patch twice at most.
When nothing it can plan remains, it says so (a reply with no command, which costs a turn).
"""

from __future__ import annotations

import copy
import json
import logging
import re
import shlex
from collections import Counter
from typing import Any

from netarena.common.core.agents import Observation
from netarena.common.core.errors import ConfigError
from netarena.k8s.detail import locked_to_callees
from netarena.k8s.model import AppModel, parse_intended
from netarena.k8s.policy_matrix import parse_report, parse_unintended
from netarena.k8s.repair import EDIT_KINDS, repairs
from netarena.k8s.repair_search import Call, lock_calls

__all__ = [
    "ReferenceK8sAgent",
    "Planner",
    "Intent",
    "plan_fixes",
    "SNAPSHOT_COMMAND",
    "PODS_COMMAND",
    "HISTORY_MARKER",
    "NOTHING_LEFT",
    "decode_pods",
    "decode_snapshot",
    "history",
    "patch_command",
]

log = logging.getLogger(__name__)

SNAPSHOT_COMMAND = ("kubectl get networkpolicy -o jsonpath='{range .items[*]}{.metadata.name}"
                    "{\"\\t\"}{.spec}{\"\\n\"}{end}'")
"""Every policy of the task's namespace: its name and its spec as JSON, one line each (the
whole objects of a large application would not fit the output limit)."""
PODS_COMMAND = ("kubectl get pods,namespaces -A -o jsonpath='{range .items[*]}{.kind}{\"\\t\"}"
                "{.metadata.namespace}{\"\\t\"}{.metadata.name}{\"\\t\"}{.metadata.labels}"
                "{\"\\t\"}{.status.podIP}{\"\\t\"}{.spec.containers[*].ports}{\"\\n\"}{end}'")
"""Every pod's and namespace's labels, pod IPs and container ports, one line each."""
HISTORY_MARKER = re.compile(r"^\[turn (\d+)\] \$ (.*)$", re.MULTILINE)
"""How the episode prints each previous command (shared format with ``episode``)."""
NOTHING_LEFT = ("Nothing left that I can repair: no single change to the policies explains "
                "what the probes still report.")
"""The reply (no command) once a fresh snapshot gives nothing to do; it costs a turn."""
_NAMESPACE = re.compile(r"runs in namespace `([a-z0-9-]+)`")
_MISSING = re.compile(r"^networkpolicy (\S+): (label|annotation) ([^=\s]+)=(.*) is missing$",
                      re.MULTILINE)
_REPORT = "## Current probe report"
_PATCH = re.compile(r"^kubectl patch networkpolicy (\S+) --type (json|merge) -p (.*)$")
Step = tuple[str, str | None]  # command, manifest for its stdin


class Intent:
    """What the text says: the namespace, the current report, missing metadata.

    ``mismatches`` are the probes that must answer and do not; ``unintended`` the
    (source, destination) pairs that connect but must not (the report gives no port).

    Args:
        text: The observation (the latest probe report is the one read).
    """

    def __init__(self, text: str) -> None:
        ns = _NAMESPACE.search(text)
        self.namespace = ns.group(1) if ns else "default"
        report = text[text.rfind(_REPORT):] if _REPORT in text else text
        report = report.split("## History", 1)[0]
        self.mismatches = parse_report(report)
        self.unintended = parse_unintended(report)
        self.missing: dict[str, dict[str, dict[str, str]]] = {}
        for name, kind, key, value in _MISSING.findall(report):
            self.missing.setdefault(name, {}).setdefault(kind + "s", {})[key] = value
        self._text = text

    @property
    def model(self) -> AppModel:
        """The runbook's application (``ConfigError`` when the text has none)."""
        return parse_intended(self._text, self.namespace)

    @property
    def calls(self) -> frozenset[Call]:
        """The calls and DNS of the services the platform notes lock to their callees."""
        locked = locked_to_callees(self._text)
        return lock_calls(self.model, locked) if locked else frozenset()


def patch_command(name: str, ops: list[dict[str, Any]]) -> str:
    """``kubectl patch networkpolicy NAME --type json`` with ``ops``, shell-quoted."""
    body = json.dumps(ops, separators=(",", ":"), sort_keys=True)
    return f"kubectl patch networkpolicy {name} --type json -p {shlex.quote(body)}"


class Planner:
    """How the reference turns a snapshot into repairs.

    Args:
        kinds: The edits it may make (``repair.EDIT_KINDS``); a calibration baseline
            passes fewer.
        directions: The sides of a policy it may edit (``ingress``, ``egress``).
    """

    def __init__(self, kinds: frozenset[str] = frozenset(EDIT_KINDS),
                 directions: frozenset[str] = frozenset({"ingress", "egress"})) -> None:
        self.kinds = kinds
        self.directions = directions

    def plan(self, text: str, policies: list[dict[str, Any]], pods: list[dict[str, Any]],
             namespaces: list[dict[str, Any]]) -> list[Step]:
        """Commands that repair what the report shows, in a safe order.

        Args:
            text: The observation (runbook, platform notes, current probe report).
            policies: The task namespace's NetworkPolicies as they stand now.
            pods: Pod objects of every namespace.
            namespaces: Namespace objects.
        """
        intent = Intent(text)
        steps: list[Step] = []
        names = {p["metadata"]["name"] for p in policies}
        for name, meta in sorted(intent.missing.items()):
            if name in names:
                body = json.dumps({"metadata": meta}, sort_keys=True)
                steps.append((f"kubectl patch networkpolicy {name} --type merge -p "
                              f"{shlex.quote(body)}", None))
        by_name = {p["metadata"]["name"]: p for p in policies}
        for edit in repairs(intent.namespace, policies, pods, namespaces, intent.mismatches,
                            self.kinds, directions=self.directions,
                            unintended=intent.unintended, calls=intent.calls):
            old = by_name[edit.policy].get("spec") or {}
            ops = [{"op": "add", "path": f"/spec/{key}", "value": edit.spec[key]}
                   for key in ("policyTypes", "ingress", "egress")
                   if key in edit.spec and edit.spec[key] != old.get(key)]
            by_name[edit.policy] = {**by_name[edit.policy], "spec": edit.spec}
            if ops:
                steps.append((patch_command(edit.policy, ops), None))
        return steps


def plan_fixes(text: str, policies: list[dict[str, Any]], pods: list[dict[str, Any]],
               namespaces: list[dict[str, Any]]) -> list[Step]:
    """The reference's repairs (``Planner().plan``; see there for the arguments)."""
    return Planner().plan(text, policies, pods, namespaces)


def history(text: str) -> list[tuple[str, str]]:
    """(command, output) of every previous turn, in order."""
    marks = list(HISTORY_MARKER.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(2).strip(), text[m.end():end]))
    return out


_EXIT = re.compile(r"^\[exit (-?\d+)\]$", re.MULTILINE)
_TRIES = 2
"""How often the reference sends a patch that keeps failing before it gives up on it."""


def _succeeded(output: str) -> bool:
    """Whether a history turn's command exited 0 (the last turn runs on to the cue)."""
    m = _EXIT.search(output)
    return m is not None and m.group(1) == "0"


def decode_snapshot(output: str) -> dict[str, Any] | None:
    """``{"items": [...]}`` from ``SNAPSHOT_COMMAND``'s lines (None when unreadable)."""
    items = []
    for line in output.splitlines():
        name, tab, spec = line.partition("\t")
        if not tab:
            continue
        try:
            items.append({"metadata": {"name": name}, "spec": json.loads(spec)})
        except json.JSONDecodeError:
            return None
    return {"items": items} if items else None


def decode_pods(output: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
    """Pods and namespaces from ``PODS_COMMAND``'s lines."""
    pods, namespaces = [], []
    for line in output.splitlines():
        cols = line.split("\t")
        if len(cols) != 6 or cols[0] not in ("Pod", "Namespace"):
            continue
        kind, ns, name, labels, ip, ports = cols
        try:
            meta = {"name": name, "labels": json.loads(labels) if labels else {}}
            entries = [p for chunk in ports.split("] [") if chunk.strip()
                       for p in json.loads("[" + chunk.strip().strip("[]") + "]")]
        except json.JSONDecodeError:
            return None
        if kind == "Namespace":
            namespaces.append({"metadata": meta})
            continue
        pods.append({"metadata": {**meta, "namespace": ns}, "status": {"podIP": ip},
                     "spec": {"containers": [{"name": "c", "ports": entries}]}})
    return (pods, namespaces) if pods else None


def _replay(policies: list[dict[str, Any]], cmd: str) -> bool:
    """Apply one of the planner's own successful patches locally; False if unreadable."""
    m = _PATCH.match(cmd)
    if m is None:
        return False
    name, kind = m.group(1), m.group(2)
    try:
        body = json.loads(shlex.split(m.group(3))[0])
    except (ValueError, IndexError):
        return False
    pol = next((p for p in policies if p["metadata"]["name"] == name), None)
    if pol is None:
        return False
    if kind == "merge":
        for field, values in (body.get("metadata") or {}).items():
            pol["metadata"].setdefault(field, {}).update(values)
        return True
    for op in body:
        path = op.get("path", "").split("/")
        if op.get("op") not in ("add", "replace") or path[:2] != ["", "spec"] or len(path) != 3:
            return False
        pol.setdefault("spec", {})[path[2]] = op["value"]
    return True


class ReferenceK8sAgent:
    """Read the policies and pods, then repair what the report shows, one patch a turn.

    Args:
        planner: What to repair given a snapshot (the reference's by default; a
            calibration baseline passes one that may make fewer kinds of edit).
        name: The agent's name in results.
    """

    def __init__(self, planner: Planner | None = None, name: str = "k8s-reference") -> None:
        self.planner = planner or Planner()
        self.name = name

    async def act(self, observation: Observation) -> str:
        """Next command, fenced."""
        return self.decide(observation.text)

    def decide(self, text: str) -> str:
        """The reply for ``text`` (pure: same text, same reply)."""
        turns = history(text)
        snap_at, snapshot = -1, None
        world = None
        for i, (cmd, output) in enumerate(turns):
            if cmd.startswith(SNAPSHOT_COMMAND[:29]) and (
                    decoded := decode_snapshot(output)) is not None:
                snap_at, snapshot = i, decoded
            if cmd.startswith(PODS_COMMAND[:32]) and (pods := decode_pods(output)) is not None:
                world = pods
        if snapshot is None:
            return f"```\n{SNAPSHOT_COMMAND}\n```"
        if world is None:
            return f"```\n{PODS_COMMAND}\n```"
        policies = copy.deepcopy(snapshot.get("items") or [])
        failed = Counter(cmd for cmd, output in turns
                         if cmd.startswith("kubectl patch") and not _succeeded(output))
        issued = [cmd for cmd, n in failed.items() if n >= _TRIES]
        for cmd, output in turns[snap_at + 1:]:
            if cmd.startswith("kubectl patch"):
                # A failed write (a timeout under load) may or may not have landed: read
                # the policies again and plan from what they hold.
                if not _succeeded(output) or not _replay(policies, cmd):
                    return f"```\n{SNAPSHOT_COMMAND}\n```"
            issued.append(cmd)
        try:
            plan = self.planner.plan(text, policies, *world)
        except ConfigError:
            log.warning("no intended connectivity in the observation")
            return f"```\n{SNAPSHOT_COMMAND}\n```"
        for cmd, _ in plan:
            if cmd not in issued:
                return f"```\n{cmd}\n```"
        return NOTHING_LEFT
