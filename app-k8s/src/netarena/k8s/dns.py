"""Cluster DNS as NetworkPolicy sees it: where CoreDNS runs and what a lookup needs.

A pod resolves a Service name by sending a UDP query to the ``kube-dns`` Service, which
kube-proxy forwards to a CoreDNS pod in ``kube-system``. NetworkPolicy applies to that
flow like to any other: an egress policy that does not allow UDP 53 to the CoreDNS pods
makes every name-based connection fail before it starts, while connections to an IP still
work. The embedded cluster runs CoreDNS with exactly these labels and ports
(``apiserver.coredns``).
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.apiserver.coredns import DNS_LABELS, DNS_NAMESPACE, DNS_PORT

__all__ = ["coredns_pods"]

_COREDNS_IPS = ("10.244.0.2", "10.244.0.3")
"""Where CoreDNS lands on a fresh cluster: the first pod IPs of the control-plane node."""


def coredns_pods() -> list[dict[str, Any]]:
    """The two CoreDNS pods of a fresh cluster, as the policy engine reads them.

    For callers without a live cluster (fault verification); a running cluster's own
    CoreDNS pods are read from its store instead.
    """
    ports = [{"name": "dns", "containerPort": DNS_PORT, "protocol": "UDP"},
             {"name": "dns-tcp", "containerPort": DNS_PORT, "protocol": "TCP"},
             {"name": "metrics", "containerPort": 9153, "protocol": "TCP"}]
    return [
        {"metadata": {"name": f"coredns-{i}", "namespace": DNS_NAMESPACE,
                      "labels": dict(DNS_LABELS)},
         "spec": {"containers": [{"name": "coredns", "ports": ports}]},
         "status": {"podIP": ip}}
        for i, ip in enumerate(_COREDNS_IPS)
    ]
