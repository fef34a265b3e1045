"""The cluster's DNS: CoreDNS in ``kube-system`` behind the ``kube-dns`` Service.

As kubeadm (and so kind) sets it up: two CoreDNS replicas labelled ``k8s-app=kube-dns``,
the Service at ``10.96.0.10`` that every pod's ``resolv.conf`` names, and the Corefile. The
constants are what pods, probes and NetworkPolicy checks need to know about it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CLUSTER_DOMAIN", "COREFILE", "DNS_LABELS", "DNS_NAMESPACE", "DNS_PORT",
           "DNS_SERVICE", "DNS_SERVICE_IP", "coredns_objects"]

DNS_NAMESPACE = "kube-system"
"""Namespace CoreDNS runs in."""
DNS_SERVICE = "kube-dns"
"""Name of the DNS Service (and the ``k8s-app`` label of CoreDNS pods)."""
DNS_LABELS = {"k8s-app": "kube-dns"}
"""Labels of the CoreDNS pods."""
DNS_SERVICE_IP = "10.96.0.10"
"""ClusterIP of ``kube-dns`` (the nameserver in every pod's ``resolv.conf``)."""
DNS_PORT = 53
"""Port of the DNS server, UDP (queries) and TCP (large answers)."""
CLUSTER_DOMAIN = "cluster.local"
"""The cluster's DNS domain."""


def coredns_objects() -> list[dict[str, Any]]:
    """CoreDNS's Deployment and the ``kube-dns`` Service in front of it."""
    labels = dict(DNS_LABELS)
    ports = [{"name": "dns", "containerPort": DNS_PORT, "protocol": "UDP"},
             {"name": "dns-tcp", "containerPort": DNS_PORT, "protocol": "TCP"},
             {"name": "metrics", "containerPort": 9153, "protocol": "TCP"}]
    container = {
        "name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.1",
        "args": ["-conf", "/etc/coredns/Corefile"],
        "ports": ports,
        "resources": {"limits": {"memory": "170Mi"}, "requests": {"cpu": "100m",
                                                                  "memory": "70Mi"}},
        "livenessProbe": {"httpGet": {"path": "/health", "port": 8080, "scheme": "HTTP"},
                          "initialDelaySeconds": 60, "timeoutSeconds": 5,
                          "failureThreshold": 5},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8181, "scheme": "HTTP"}},
        "volumeMounts": [{"name": "config-volume", "mountPath": "/etc/coredns",
                          "readOnly": True}]}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "coredns", "namespace": DNS_NAMESPACE, "labels": dict(labels)},
        "spec": {"replicas": 2, "selector": {"matchLabels": dict(labels)},
                 "template": {"metadata": {"labels": dict(labels)}, "spec": {
                     "serviceAccountName": "coredns", "priorityClassName":
                     "system-cluster-critical", "dnsPolicy": "Default",
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "tolerations": [{"key": "CriticalAddonsOnly", "operator": "Exists"},
                                     {"key": "node-role.kubernetes.io/control-plane",
                                      "effect": "NoSchedule"}],
                     "containers": [container],
                     "volumes": [{"name": "config-volume", "configMap": {
                         "name": "coredns", "items": [{"key": "Corefile",
                                                       "path": "Corefile"}]}}]}}},
    }
    service = {
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": DNS_SERVICE, "namespace": DNS_NAMESPACE,
                     "labels": {**labels, "kubernetes.io/cluster-service": "true",
                                "kubernetes.io/name": "CoreDNS"},
                     "annotations": {"prometheus.io/port": "9153",
                                     "prometheus.io/scrape": "true"}},
        "spec": {"clusterIP": DNS_SERVICE_IP, "selector": dict(labels), "ports": [
            {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
            {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
            {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]},
    }
    return [deployment, service]


COREFILE = """.:53 {
    log
    errors
    health {
       lameduck 5s
    }
    ready
    kubernetes cluster.local in-addr.arpa ip6.arpa {
       pods insecure
       fallthrough in-addr.arpa ip6.arpa
       ttl 30
    }
    prometheus :9153
    forward . /etc/resolv.conf {
       max_concurrent 1000
    }
    cache 30 {
       disable success cluster.local
       disable denial cluster.local
    }
    loop
    reload
    loadbalance
}
"""
"""The Corefile kubeadm writes into the ``coredns`` ConfigMap."""
