"""The public surface of netarena.k8s is pinned, and the app is registered as ``k8s``."""

from __future__ import annotations

import netarena.k8s as k8s
from netarena.common.core.app import load_app


def test_k8s_exports() -> None:
    assert sorted(k8s.__all__) == [
        "ANYONE",
        "AppModel",
        "Connectivity",
        "ConnectivityCache",
        "FAULT_TYPES",
        "ForbiddenCommand",
        "K8sApp",
        "K8sConfig",
        "K8sEpisode",
        "KubectlCommand",
        "PodView",
        "PolicyEngine",
        "ProbeResult",
        "ReferenceK8sAgent",
        "ServiceSpec",
        "apply_faults",
        "compute_connectivity",
        "inject_fault",
        "online_boutique",
        "parse_kubectl",
        "policy_types",
        "render_all",
        "render_policies",
        "selector_matches",
        "synthetic_app",
    ]
    assert len(set(k8s.__all__)) == len(k8s.__all__)


def test_every_export_resolves() -> None:
    """Each name is importable, including the lazily loaded ``K8sEpisode``."""
    for name in k8s.__all__:
        assert getattr(k8s, name) is not None, name
    from netarena.k8s.episode import K8sEpisode

    assert k8s.K8sEpisode is K8sEpisode


def test_registered_as_the_k8s_app() -> None:
    app = load_app("k8s", {"prompt_style": "zeroshot_cot"})
    assert isinstance(app, k8s.K8sApp) and app.name == "k8s" and app.kind == "reactive"
    assert isinstance(app.config, k8s.K8sConfig) and app.config.prompt_style == "zeroshot_cot"
    assert set(app.labels) == {1, 2, 3}
    assert isinstance(app.reference_agent(), k8s.ReferenceK8sAgent)
