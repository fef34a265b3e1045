"""Query generation for app-k8s: configuration, fault combinations per level, prompts.

Generation is pure: ``(config, seed, level, label)`` fixes the application model, every
fault (with its concrete faulted spec, kept in ``Query.truth``) and the prompt.
"""

from __future__ import annotations

import random
from typing import Any, Literal

from pydantic import Field

from netarena.common.errors import EmulatorError
from netarena.common.reactive import RewardConfig
from netarena.k8s.faults import inject_fault, model_namespaces, model_pods
from netarena.k8s.manifests import render_policies
from netarena.k8s.model import AppModel, online_boutique, synthetic_app
from netarena.k8s.policy_matrix import compute_connectivity

__all__ = ["K8sConfig", "LABELS", "build_model", "generate_faults", "build_prompt"]

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

    backend: Literal["embedded"] = "embedded"
    """Where the application runs: ``embedded`` (API emulator + policy engine, no Docker).
    A real-cluster backend is designed in the README and not built yet."""
    num_services: int | None = Field(None, ge=3, le=200)
    """``None``: Online Boutique (12 services). A number: a synthetic service graph of that
    size, drawn from each query's seed."""
    namespace: str = Field("default", pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
    """Namespace the application runs in; every agent command is forced into it."""


def build_model(config: K8sConfig, seed: int) -> AppModel:
    """The application a query runs: Online Boutique, or a synthetic graph from ``seed``."""
    if config.num_services is None:
        return online_boutique(config.namespace)
    return synthetic_app(config.num_services, random.Random(f"k8s-graph/{seed}"), config.namespace)


def generate_faults(model: AppModel, label: str, rng: random.Random) -> list[dict[str, Any]]:
    """Inject the faults of ``label`` one after another, each verified to change the matrix.

    Raises:
        EmulatorError: The combination could not be made to break connectivity.
    """
    pods, nss = model_pods(model), model_namespaces(model)
    healthy = render_policies(model)
    for _ in range(20):
        faults: list[dict[str, Any]] = []
        policies = healthy
        for code in label.split("+"):
            fault = inject_fault(code, model, policies, rng)
            faults.append(fault)
            policies = [dict(p, spec=fault["spec"]) if p["metadata"]["name"] == fault["policy"]
                        else p for p in policies]
        if compute_connectivity(model, pods, nss, policies).mismatches:
            return faults
    raise EmulatorError(f"could not generate a {label} fault set that breaks connectivity")


_ANSWER = """\
Answer with exactly one kubectl command per turn, between triple backticks, for example:
```
kubectl get networkpolicy -o yaml
```
The namespace `{ns}` is set for you. Read: get, describe, explain, api-resources,
api-versions, version, cluster-info. Change: patch (`--type json|merge|strategic -p '...'`),
label, annotate, delete (NetworkPolicies only), and `kubectl apply -f -` with the
manifest in a ```yaml block of the same reply (NetworkPolicies only). Forbidden: changing
or deleting Deployments, Pods or Services, exec and other interactive verbs, other
namespaces, --all-namespaces on changes, kubeconfig/server/credential flags, reading files
or URLs, and shell syntax (pipes, ;, &&, $(...), redirection)."""

_FEWSHOT = """\
Example (a different fault):
Mismatch: frontend → adservice:9555 (Expected: True, Actual: False)
Turn 1:
```
kubectl get networkpolicy adservice -o yaml
```
(the output shows `port: 9556` in the ingress rule instead of the container port 9555)
Turn 2:
```
kubectl patch networkpolicy adservice --type json -p '[{"op": "replace", \
"path": "/spec/ingress/0/ports/0/port", "value": 9555}]'
```"""

_COT = ("Think step by step: for each mismatch decide which policy (the destination's "
        "ingress or the source's egress) is responsible, then write your reasoning before "
        "the command block.")


def build_prompt(model: AppModel, style: str) -> str:
    """The fixed part of every observation: role, task, intended connectivity, answer format.

    Args:
        model: The application (its intended connectivity is spelled out).
        style: ``zeroshot_base``, ``fewshot_base``, ``zeroshot_cot`` or ``fewshot_cot``.
    """
    title = "Online Boutique" if model.name == "online-boutique" else "a microservice"
    parts = [
        "You are a Kubernetes network operator troubleshooting NetworkPolicies.",
        f"The {title} application runs in namespace `{model.namespace}`: every service is a "
        "Deployment (pods labelled app=<service>) behind a ClusterIP Service. A default "
        "`deny-all` policy isolates every pod, and one policy per service allows its "
        "intended callers. Someone misconfigured the NetworkPolicies: some callers are "
        "blocked and/or some are let in that must not be.",
        "Intended connectivity (TCP; every pair not listed must be refused; egress of every "
        "service is unrestricted):\n" + model.describe(),
        "Task: fix the NetworkPolicies so the actual connectivity equals the intended one. "
        "Never modify or delete Deployments, Pods or Services. A probe report of the "
        "mismatches is shown every turn; the episode ends when no mismatch is left.",
        _ANSWER.format(ns=model.namespace),
    ]
    if style.startswith("fewshot"):
        parts.append(_FEWSHOT)
    if style.endswith("cot"):
        parts.append(_COT)
    return "\n\n".join(parts)
