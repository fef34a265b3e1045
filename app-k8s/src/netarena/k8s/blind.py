"""Blind strategies: agents that patch from the probe report and the runbook, reading nothing.

They are the calibration floor for "no free guesses": what an agent scores with fault-family
knowledge alone. None reads a policy; each turn it re-reads the current report from the
observation and sends its next patch, until it has nothing left to send.

* ``runbook-rerender``: for every destination the report names, replace rule 0 of its
  ingress with the runbook's rule; for every source that lost a connection, open its
  egress (``[{}]``) as the runbook says egress is unless a note restricts it.
* ``add-only``: for every connection the report says must work, append an ingress rule on
  the destination and an egress rule on the source allowing exactly it; it never removes.
* ``test-guarded``: for every source a destination admits against the intent, JSON
  patches that ``test`` a guessed position (rule 0–2, peer 0–3) for the source's label
  and remove that peer; for every port that must answer, patches that ``test`` a guessed
  port entry for that port and set its protocol back to TCP; then the ``add-only`` rules.
  A failed ``test`` changes nothing but costs its turn (and counts as a blind write). The
  report gives no port for what must be refused, so a changed port's value cannot be
  tested for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netarena.common.core.agents import Observation
from netarena.common.core.errors import ConfigError
from netarena.k8s.manifests import NS_NAME, render_policies
from netarena.k8s.solver import HISTORY_MARKER, NOTHING_LEFT, Intent, patch_command

__all__ = ["BlindK8sAgent", "BLIND_STRATEGIES"]

Op = dict[str, Any]
_RULES, _PEERS = 3, 4


def _peer(endpoint: str, namespace: str) -> dict[str, Any] | None:
    if endpoint[:1].isdigit():
        return {"ipBlock": {"cidr": f"{endpoint}/32"}}
    ns, _, app = endpoint.rpartition("/")
    pod = {"podSelector": {"matchLabels": {"app": app}}}
    if not ns or ns == namespace:
        return pod
    key = "app.kubernetes.io/name" if app in ("prometheus", "grafana") else "app"
    return {"namespaceSelector": {"matchLabels": {NS_NAME: ns}},
            "podSelector": {"matchLabels": {key: app}}}


def _entry(port: int, proto: str) -> dict[str, Any]:
    return {"protocol": proto} if port == 0 else {"protocol": proto, "port": port}


def _services(intent: Intent) -> set[str]:
    try:
        return set(intent.model.names)
    except ConfigError:
        return set()


def _add_only(intent: Intent) -> list[str]:
    out = []
    names = _services(intent)
    for src, dst, port, proto, expected in intent.mismatches:
        if not expected:
            continue
        if dst in names and (peer := _peer(src, intent.namespace)) is not None:
            out.append(patch_command(dst, [{"op": "add", "path": "/spec/ingress/-",
                                     "value": {"from": [peer], "ports": [_entry(port, proto)]}}]))
        if src in names and (peer := _peer(dst, intent.namespace)) is not None:
            out.append(patch_command(src, [{"op": "add", "path": "/spec/egress/-",
                                     "value": {"to": [peer], "ports": [_entry(port, proto)]}}]))
    return out


def _rerender(intent: Intent) -> list[str]:
    try:
        runbook = {p["metadata"]["name"]: p for p in render_policies(intent.model)}
    except ConfigError:
        return []
    out = []
    implicated = {m[1] for m in intent.mismatches} | {dst for _, dst in intent.unintended}
    for dst in sorted(implicated & set(runbook)):
        rules = runbook[dst]["spec"].get("ingress") or []
        if rules:
            out.append(patch_command(dst, [{"op": "replace", "path": "/spec/ingress/0",
                                     "value": rules[0]}]))
    for src in sorted({m[0] for m in intent.mismatches if m[4] and m[0] in runbook}):
        out.append(patch_command(src, [{"op": "add", "path": "/spec/egress", "value": [{}]}]))
    return out


def _guarded(intent: Intent) -> list[str]:
    out = []
    names = _services(intent)
    for src, dst in sorted(intent.unintended):
        if dst not in names:
            continue
        app = src.rpartition("/")[2]
        for i in range(_RULES):
            for j in range(_PEERS):
                base = f"/spec/ingress/{i}/from/{j}"
                out.append(patch_command(dst, [
                    {"op": "test", "path": f"{base}/podSelector/matchLabels/app", "value": app},
                    {"op": "remove", "path": base}]))
    for dst, port in sorted({(m[1], m[2]) for m in intent.mismatches
                             if m[4] and m[3] == "TCP" and m[1] in names}):
        for i in range(_RULES):
            for j in range(_PEERS):
                base = f"/spec/ingress/{i}/ports/{j}"
                out.append(patch_command(dst, [
                    {"op": "test", "path": f"{base}/port", "value": port},
                    {"op": "replace", "path": f"{base}/protocol", "value": "TCP"}]))
    return out + _add_only(intent)


BLIND_STRATEGIES: dict[str, Callable[[Intent], list[str]]] = {
    "runbook-rerender": _rerender,
    "add-only": _add_only,
    "test-guarded": _guarded,
}
"""Strategy name → the patches it would send for the current report, in order."""


class BlindK8sAgent:
    """Sends a strategy's next patch each turn, never reading the cluster.

    Args:
        name: The agent's name in results.
        strategy: A ``BLIND_STRATEGIES`` entry.
    """

    def __init__(self, name: str, strategy: Callable[[Intent], list[str]]) -> None:
        self.name = name
        self.strategy = strategy

    async def act(self, observation: Observation) -> str:
        """The next patch not sent yet, or "nothing left" (no command)."""
        return self.decide(observation.text)

    def decide(self, text: str) -> str:
        """The reply for ``text`` (pure)."""
        sent = {m.group(2).strip() for m in HISTORY_MARKER.finditer(text)}
        for cmd in self.strategy(Intent(text)):
            if cmd not in sent:
                return f"```\n{cmd}\n```"
        return NOTHING_LEFT
