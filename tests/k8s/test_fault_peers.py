"""A fault's new peer is of the kind the design writes where it lands.

``design_like`` draws the peers a retarget or an added peer writes. A peer the design names
once is drawn afresh in its kind: an egress range is a provider's (as a service's external
egress names one), a selector of one of the application's services names another of them,
and only a peer of another team is drawn as another team's. Before, every peer named once
was drawn as another team's, so faulted egress selectors named workloads of other teams
(3.8% of faulted peers, none of the design's) and ``netarena audit k8s`` told them apart.
"""

from __future__ import annotations

import ipaddress
import json
import random

import pytest

from netarena.k8s.fault_spots import design_like, design_pools, fresh_peer
from netarena.k8s.generator import K8sConfig, build_model
from netarena.k8s.model import AppModel

MODELS = [build_model(K8sConfig(), seed) for seed in range(6)] + [
    build_model(K8sConfig(num_services=8), seed) for seed in range(6)]


def _service_label(model: AppModel, peer: dict) -> str | None:
    labels = (peer.get("podSelector") or {}).get("matchLabels") or {}
    if set(peer) == {"podSelector"} and set(labels) == {"app"} and labels["app"] in model.names:
        return str(labels["app"])
    return None


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.name}-{len(m.services)}")
def test_egress_peers_name_callees_dns_or_a_providers_range(model: AppModel) -> None:
    pools = design_pools(model)
    servers = {s.name for s in model.servers}
    rng = random.Random(0)
    for _ in range(300):
        peer = design_like(model, pools.peers["egress"], "egress", rng)
        if "ipBlock" in peer:
            net = ipaddress.ip_network(peer["ipBlock"]["cidr"])
            assert net.is_global and net.prefixlen >= 24, peer
        elif "namespaceSelector" not in peer:
            assert _service_label(model, peer) in servers, peer
        else:
            assert json.dumps(peer, sort_keys=True) in pools.counts, peer  # the DNS peer


@pytest.mark.parametrize("model", MODELS[:3], ids=lambda m: m.name)
def test_a_peer_named_once_is_drawn_afresh_in_its_kind(model: AppModel) -> None:
    pools = design_pools(model)
    rng = random.Random(1)
    for direction in ("ingress", "egress"):
        for template in pools.peers[direction]:
            if pools.counts[json.dumps(template, sort_keys=True)] > 1:
                continue
            peer = fresh_peer(model, template, direction, rng)
            assert set(peer) == set(template)
            own = _service_label(model, template)
            if own is not None:
                assert _service_label(model, peer) not in (None, own)
            elif "ipBlock" not in template:  # another team's: never the application's
                assert _service_label(model, peer) is None


def test_a_bare_design_copies_its_template() -> None:
    model = AppModel(MODELS[0].services, MODELS[0].namespace, MODELS[0].name)
    template = {"podSelector": {"matchLabels": {"app": "cartservice"}}}
    assert design_like(model, [template], "egress", random.Random(2)) == template
