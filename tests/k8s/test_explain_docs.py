"""``kubectl explain`` describes every field an operator reaches (issue 19, item 5)."""

from __future__ import annotations

import pytest

from netarena.k8s.episode import K8sEpisode

pytestmark = pytest.mark.slow

PATHS = ["networkpolicy", "networkpolicy.spec", "networkpolicy.spec.ingress",
         "networkpolicy.spec.ingress.from", "networkpolicy.spec.ingress.ports",
         "networkpolicy.spec.egress.to", "networkpolicy.metadata", "pod", "pod.spec.containers",
         "service", "service.spec", "deployment", "deployment.spec", "deployment.spec.template",
         "namespace", "node", "event", "configmap", "endpoints", "serviceaccount"]


def test_explain_has_a_description_for_every_field(episode: K8sEpisode) -> None:
    """Before: 49 ``<no description>`` over these paths (every object-typed field)."""
    assert episode.kubectl is not None
    for path in PATHS:
        result = episode.kubectl.run(["explain", path])
        assert result.ok, (path, result.stderr)
        assert "<no description>" not in result.stdout, (path, result.stdout)


def test_object_fields_carry_upstreams_words(episode: K8sEpisode) -> None:
    assert episode.kubectl is not None
    spec = episode.kubectl.run(["explain", "networkpolicy.spec.podSelector"]).stdout
    assert "selects the pods to which this NetworkPolicy object applies" in spec
    peer = episode.kubectl.run(["explain", "networkpolicy.spec.ingress.from"]).stdout
    assert "namespaceSelector selects namespaces using cluster-scoped labels" in peer
    meta = episode.kubectl.run(["explain", "pod.metadata"]).stdout
    assert "Standard object's metadata" in meta
