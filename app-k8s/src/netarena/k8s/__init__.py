"""app-k8s: Kubernetes NetworkPolicy troubleshooting on Online Boutique.

The agent fixes injected NetworkPolicy faults one kubectl command per turn. The default
backend needs no Docker and no cluster: an in-memory object store served as a Kubernetes
API on loopback, driven by the real ``kubectl``, and an exact NetworkPolicy engine that
computes the connectivity matrix.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from netarena.common.core.agents import Baseline
from netarena.common.core.app import App
from netarena.common.core.evidence import AuditObject
from netarena.common.core.types import Query
from netarena.k8s.actions import ForbiddenCommand, KubectlCommand
from netarena.k8s.baselines import BASELINES
from netarena.k8s.faults import FAULT_TYPES, apply_faults, inject_fault
from netarena.k8s.generator import (
    LABELS,
    K8sConfig,
    build_model,
    build_prompt,
    fault_instance,
    faulted_state,
    generate_faults,
)
from netarena.k8s.manifests import render_all, render_policies
from netarena.k8s.model import ANYONE, AppModel, ServiceSpec, online_boutique, synthetic_app
from netarena.k8s.policy import PodView, PolicyEngine, policy_types, selector_matches
from netarena.k8s.policy_matrix import (
    Connectivity,
    ConnectivityCache,
    ProbeResult,
    compute_connectivity,
)
from netarena.k8s.reply_commands import parse_kubectl
from netarena.k8s.solver import ReferenceK8sAgent

if TYPE_CHECKING:
    from netarena.k8s.episode import K8sEpisode

__all__ = [
    "K8sApp",
    "K8sConfig",
    "K8sEpisode",
    "ReferenceK8sAgent",
    "AppModel",
    "ServiceSpec",
    "ANYONE",
    "online_boutique",
    "synthetic_app",
    "render_all",
    "render_policies",
    "PolicyEngine",
    "PodView",
    "policy_types",
    "selector_matches",
    "Connectivity",
    "ConnectivityCache",
    "ProbeResult",
    "compute_connectivity",
    "FAULT_TYPES",
    "inject_fault",
    "apply_faults",
    "KubectlCommand",
    "ForbiddenCommand",
    "parse_kubectl",
]


class K8sApp(App):
    """Reactive app: diagnose and fix NetworkPolicy faults with kubectl."""

    name = "k8s"
    kind = "reactive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = LABELS
    config_model = K8sConfig
    default_max_turns = 10
    config: K8sConfig

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        """One query: the model from ``seed`` and config, and the faults of ``label``."""
        rng = random.Random(seed)
        label = self.pick_label(rng, level, label)
        model = build_model(self.config, seed)
        faults = generate_faults(model, label, rng)
        prompt = build_prompt(model, self.config.prompt_style, faulted_state(model, faults),
                              random.Random(f"k8s-words/{seed}"))
        truth = {"faults": faults, "application": model.name,
                 "instance": fault_instance(model, faults)}
        return self.make_query(seed, level, label, prompt, truth)

    def instance_key(self, query: Query) -> str:
        """The fault instance: every policy as the faults leave it.

        The faulted spec and the seeded detail around it, not the prompt's wording.
        """
        return str(query.truth.get("instance")) if query.truth.get("instance") else \
            super().instance_key(query)

    def open(self, query: Query) -> K8sEpisode:
        """Start the embedded cluster for ``query`` (faults applied, API served)."""
        from netarena.k8s.episode import K8sEpisode

        config = K8sConfig(**query.params) if query.params else self.config
        return K8sEpisode(query, build_model(config, query.seed), config)

    def reference_agent(self) -> ReferenceK8sAgent:
        """The text-only reference operator."""
        return ReferenceK8sAgent()

    def audit_objects(self, query: Query) -> Sequence[AuditObject]:
        """Every policy, rule, peer and port entry of the faulted instance, labelled.

        Read from the deployed objects as an agent's ``get -o json`` shows them
        (``netarena.k8s.audit``).
        """
        from netarena.k8s.audit import instance_objects

        config = K8sConfig(**query.params) if query.params else self.config
        return instance_objects(build_model(config, query.seed), query.truth.get("faults") or [])

    def baselines(self) -> tuple[Baseline, ...]:
        """k8s's calibration ladder (``netarena.k8s.baselines``)."""
        return BASELINES


def __getattr__(name: str) -> object:
    if name == "K8sEpisode":  # lazy: the episode pulls in the API server
        from netarena.k8s.episode import K8sEpisode

        return K8sEpisode
    raise AttributeError(name)
