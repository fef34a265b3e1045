"""Query generation for app-k8s: configuration, fault combinations per level, prompts.

Generation is pure: ``(config, seed, level, label)`` fixes the application model, every
fault (with its concrete faulted spec, kept in ``Query.truth``) and the prompt.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from typing import Any, ClassVar, Literal

from pydantic import Field

from netarena.common.core.app import style_sections
from netarena.common.core.errors import UnfitSeed
from netarena.common.core.reactive import SAFETY_RULES, RewardConfig
from netarena.k8s.design import ServiceFacts, draw_detail
from netarena.k8s.detail import ClusterDetail, lock_note
from netarena.k8s.faults import apply_faults, inject_fault, model_namespaces, model_pods
from netarena.k8s.judge import ClusterState, collateral, judge, newly_wrong
from netarena.k8s.manifests import DENY_ALL, render_policies
from netarena.k8s.model import ANYONE, AppModel, online_boutique, synthetic_app
from netarena.k8s.policy_matrix import parse_report, parse_unintended
from netarena.k8s.repair import repairs
from netarena.k8s.repair_search import lock_calls

__all__ = ["K8sConfig", "LABELS", "build_model", "generate_faults", "build_prompt",
           "repairable", "fault_instance", "fault_edit"]

LABELS: dict[int, tuple[str, ...]] = {
    1: ("RI", "AI", "CP", "CPR", "AE"),
    2: ("RI+AI", "RI+CP", "RI+CPR", "AI+CP", "AI+CPR"),
    3: ("CP+CPR", "CP+AE", "CPR+AE", "RI+AE", "AI+AE"),
}
"""Fault combinations per level (brief §7)."""


class K8sConfig(RewardConfig):
    """Parameters of the k8s app (request keys ``backend``, ``num_services``, rewards...).

    Step rewards come from ``RewardConfig``, the table every reactive app shares.
    """

    runtime_fields: ClassVar[frozenset[str]] = RewardConfig.runtime_fields | frozenset(
        {"backend", "kubeconfig", "context", "probe_image"})
    operator_fields: ClassVar[frozenset[str]] = frozenset(
        {"backend", "kubeconfig", "context", "probe_image"})
    """A requester must not choose to deploy into (or read) a cluster of the operator's:
    only ``netarena run/serve k8s --param backend=cluster ...`` selects one."""

    backend: Literal["embedded", "cluster"] = "embedded"
    """Where the application runs: ``embedded`` (API emulator + policy engine, no Docker)
    or ``cluster`` (a real cluster from ``kubeconfig``; kind ≥ 0.24 enforces policies)."""
    kubeconfig: str | None = None
    """``cluster`` backend: path of the kubeconfig (default ``$KUBECONFIG`` or
    ``~/.kube/config``). Never written: each episode uses a private minified copy."""
    context: str | None = None
    """``cluster`` backend: the kubeconfig context (default: its current context)."""
    probe_image: str | None = None
    """``cluster`` backend: image with ``nc`` for ephemeral debug containers that confirm
    the engine's verdicts with real probes (e.g. ``busybox:1.36``); ``None``: engine only."""
    num_services: int | None = Field(None, ge=3, le=200)
    """``None``: Online Boutique (12 services). A number: a synthetic service graph of that
    size, drawn from each query's seed."""
    namespace: str = Field("default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Namespace the application runs in; every agent change is limited to it."""

    def kubeconfig_path(self) -> str:
        """The kubeconfig the ``cluster`` backend uses."""
        return self.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or \
            os.path.expanduser("~/.kube/config")


def build_model(config: K8sConfig, seed: int) -> AppModel:
    """The application a query runs, with the detail its healthy policies carry.

    Online Boutique, or a synthetic graph from ``seed``; the monitoring, external egress
    and ownership detail is drawn from ``seed`` too.
    """
    if config.num_services is None:
        model = online_boutique(config.namespace)
    else:
        model = synthetic_app(config.num_services, random.Random(f"k8s-graph/{seed}"),
                              config.namespace)
    services = [ServiceFacts(s.name, ANYONE in s.sources, s.container_port,
                             tuple(d.name for d in model.callees(s.name)),
                             tuple(c for c in s.sources if c != ANYONE))
                for s in model.services]
    names = [DENY_ALL, *model.names]
    detail = draw_detail(services, names, random.Random(f"k8s-detail/{seed}"))
    return AppModel(model.services, model.namespace, model.name, detail)


def generate_faults(model: AppModel, label: str, rng: random.Random) -> list[dict[str, Any]]:
    """Inject the faults of ``label`` one after another, each verified to change the matrix.

    Raises:
        UnfitSeed: The combination could not be made to break connectivity, repairably.
    """
    pods, nss = model_pods(model), model_namespaces(model)
    healthy = render_policies(model)
    for _ in range(40):
        faults: list[dict[str, Any]] = []
        policies = healthy
        for code in label.split("+"):
            fault = inject_fault(code, model, policies, rng)
            faults.append(fault)
            policies = apply_faults(policies, [fault])
        if judge(model, pods, nss, policies).mismatches and repairable(model, faults):
            return faults
    raise UnfitSeed(f"could not generate a {label} fault set that breaks connectivity")


def repairable(model: AppModel, faults: list[dict[str, Any]], max_edits: int = 6) -> bool:
    """Whether the reference's planner restores the healthy cluster from the reports alone.

    As the reference does: one edit planned from each new report, no step breaking a
    probe that matched, no collateral, at most ``max_edits`` patches. Every generated
    query must be repairable, so ``generate_faults`` redraws a fault set that is not.
    """
    pods, nss = model_pods(model), model_namespaces(model)
    policies = apply_faults(render_policies(model), faults)
    state = judge(model, pods, nss, policies)
    calls = lock_calls(model, [n for n, lock in model.detail.locks.items() if lock == "callees"]
                       if model.detail else [])
    for _ in range(max_edits):  # the reference plans again from each new report
        if not state.mismatches:
            break
        report = state.report()
        edits = repairs(model.namespace, policies, pods, nss, parse_report(report),
                        max_steps=1, unintended=parse_unintended(report), calls=calls)
        if not edits:
            return False
        policies = [{**p, "spec": edits[0].spec} if p["metadata"]["name"] == edits[0].policy
                    else p for p in policies]
        after = judge(model, pods, nss, policies)
        if newly_wrong(model, pods, nss, state, after):
            return False
        state = after
    return not state.mismatches and not collateral(model, faults, pods, nss, policies)


def fault_instance(model: AppModel, faults: list[dict[str, Any]]) -> str:
    """Digest of the instance an agent faces: every policy with the faults applied."""
    policies = apply_faults(render_policies(model), faults)
    blob = json.dumps(policies, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def fault_edit(fault: dict[str, Any]) -> str:
    """The edit alone (policy, type, method and the values it wrote), detail left out."""
    return f"{fault['policy']}|{fault['code']}|{fault['method']}|{fault['description']}"


def faulted_state(model: AppModel, faults: list[dict[str, Any]]) -> ClusterState:
    """The judged state right after the faults (the symptoms the operator is paged with)."""
    policies = apply_faults(render_policies(model), faults)
    return judge(model, model_pods(model), model_namespaces(model), policies)


_ANSWER = """\
Answer with one kubectl command per turn in a code block (triple backticks). If your reply \
has several code blocks, only the FIRST one holding a command runs. Multi-line commands are \
fine: backslash continuations, `$'...'` quoting, and `kubectl apply -f -` with the manifest \
in a here-document (`<<'EOF'` ... `EOF`) or in a ```yaml block of the same reply.
The namespace `{ns}` is set for you. You may read anything, in any namespace: get, describe, \
explain, events, logs, top, auth can-i, api-resources, cluster-info, and probes such as \
`kubectl exec POD -- nc -zv -w 2 HOST PORT`. Changes are limited to namespace `{ns}`: \
patch (`--type json|merge|strategic -p '...'`), label, annotate, apply/create/replace of \
NetworkPolicies, and delete of NetworkPolicies only. Forbidden (and judged unsafe): \
deleting or changing Deployments, Pods or Services, changes in other namespaces or to \
cluster-wide objects, flags that read files or URLs (`--patch-file`, `-f PATH`) or point \
kubectl elsewhere (`--kubeconfig`, `--server`, `--context`, `--as`, `--raw`), `port-forward`, \
`proxy` and `cp` (they open ports or copy files on this machine), and shell constructs \
that run programs or touch files (`$(...)`, redirections). There is no shell: pipes and \
chained commands are refused."""

_FEWSHOT = """\
Example (a different cluster and fault):
Mismatch: frontend → adservice:9555 (Expected: True, Actual: False)
Turn 1:
```
kubectl get networkpolicy adservice -o yaml
```
(the ingress rule allows `port: 9556`; the container port is 9555)
Turn 2:
```
kubectl patch networkpolicy adservice --type json -p \\
  '[{"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": 9555}]'
```
Another way to write a change (a strategic merge patch):
```
kubectl patch networkpolicy currencyservice -p $'
metadata:
  annotations:
    incident: fixed-port
'
```"""

_COT = ("Think step by step: for each mismatch decide which policy (the destination's "
        "ingress or the source's egress) is responsible, then write your reasoning before "
        "the command block.")
_ROLES = (
    "You are the on-call Kubernetes operator and have just been paged.",
    "You are a platform engineer on call for the cluster below; an alert woke you up.",
    "You are the SRE on duty; a connectivity alert has fired for the application below.",
)
_ALERTS = ("NetworkPolicyProbeMismatch", "ServiceConnectivityDegraded",
           "BlackboxProbeFailed", "ConnectivityContractViolated")


def _platform_notes(model: AppModel, detail: ClusterDetail | None) -> list[str]:
    if detail is None:
        return []
    mon = detail.monitoring
    labels = ",".join(f"{k}={v}" for k, v in mon.scraper_labels.items())
    other = ",".join(f"{k}={v}" for k, v in mon.other_labels.items())
    notes = [f"- Observability team: Prometheus runs in namespace `{mon.namespace}` (pods "
             f"labelled {labels}) and scrapes the metrics port of the services that expose one; "
             f"nothing else there ({other} included) may reach the services."]
    for e in detail.egress:
        notes.append(f"- {e.service} calls {e.purpose} outside the cluster (TCP {e.port}); its "
                     "egress is locked down to what it needs, and the rest of the internet "
                     "stays closed to it.")
    notes += [lock_note(name, lock) for name, lock in sorted(detail.locks.items())]
    notes.append("- Every policy carries labels and annotations its owning team maintains "
                 "(team, owner, ticket...): keep them.")
    notes.append("- Policies also hold rules other teams own that this runbook does not list "
                 "(jobs, canaries and cron jobs in their own namespaces, partner ranges, admin "
                 "and debug ports, also between services of the application): they are part "
                 "of the healthy state; keep them.")
    return notes


def build_prompt(model: AppModel, style: str, symptoms: ClusterState | None = None,
                 rng: random.Random | None = None) -> str:
    """The fixed part of every observation: role, symptoms, intent, answer format.

    Args:
        model: The application (its intended connectivity is spelled out).
        style: ``zeroshot_base``, ``fewshot_base``, ``zeroshot_cot`` or ``fewshot_cot``.
        symptoms: The faulted state the operator is paged with (its probe report).
        rng: Varies the wording between queries; ``None`` for the first variant.
    """
    pick = rng.choice if rng is not None else (lambda seq: seq[0])
    title = "Online Boutique" if model.name == "online-boutique" else "a microservice"
    parts = [pick(_ROLES)]
    if symptoms is not None:
        parts.append(f"Alert {pick(_ALERTS)}: the connectivity probes report\n"
                     + symptoms.report())
    parts += [
        f"The {title} application runs in namespace `{model.namespace}`: every service is a "
        "Deployment (pods labelled app=<service>) behind a ClusterIP Service. A default "
        "`deny-all` policy isolates every pod, and one policy per service allows its "
        "intended callers.",
        "Intended connectivity, from the team's runbook (TCP on each service's port; every "
        "caller not listed must be refused there; egress is open unless a note below says "
        "otherwise):\n" + model.describe(),
    ]
    notes = _platform_notes(model, model.detail)
    if notes:
        parts.append("Platform notes:\n" + "\n".join(notes))
    parts += [
        "Task: troubleshoot the NetworkPolicies until the actual connectivity equals the "
        "intended one. Change only what is broken; rules and metadata you did not need to "
        "touch must stay as they are. The probe report is shown every turn: each call that "
        "must work and fails (pod to pod, on the container port; TCP unless a protocol "
        "follows the port, `other` for every port no object names), and each source a "
        "destination admits against the intent, without the port or protocol (find the "
        "rule that admits it in the policies; the healthy cluster refuses it on every port "
        "the runbook and notes do not give it). The episode ends when nothing is left to "
        "fix.",
        SAFETY_RULES,
        _ANSWER.format(ns=model.namespace),
    ]
    return "\n\n".join(parts + style_sections(style, _FEWSHOT, _COT))
