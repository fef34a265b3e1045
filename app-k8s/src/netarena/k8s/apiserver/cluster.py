"""The cluster around an application: nodes, kube-system, CoreDNS, and their ages.

``bootstrap`` fills a fresh ``ObjectStore`` with what a small kind cluster (the target
documented for users) holds weeks after ``kind create cluster``: a control-plane node and
workers with their pod CIDRs, the control plane's static pods, kube-proxy and kindnet on
every node, CoreDNS behind ``kube-dns`` (10.96.0.10), the local-path provisioner and its
StorageClass, the ``kubernetes`` Service, node leases, priority classes, the controllers'
service accounts and the configmaps kubeadm leaves. Everything is stamped with the
cluster's creation time, and the revision counter moves on as a cluster's would.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from netarena.k8s.apiserver.coredns import COREFILE, coredns_objects
from netarena.k8s.apiserver.names import rfc3339
from netarena.k8s.apiserver.profile import ClusterProfile
from netarena.k8s.apiserver.roles import cluster_roles

if TYPE_CHECKING:
    from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["bootstrap", "idle_revisions", "REVISIONS_PER_HOUR"]

K8S_VERSION = "v1.37.1"
REVISIONS_PER_HOUR = 1_450
"""etcd revisions a small idle cluster accumulates per hour (leases, status updates)."""
_CONTROLLERS = (
    "attachdetach-controller", "bootstrap-signer", "certificate-controller",
    "clusterrole-aggregation-controller", "cronjob-controller", "daemon-set-controller",
    "deployment-controller", "disruption-controller", "endpoint-controller",
    "endpointslice-controller", "endpointslicemirroring-controller",
    "ephemeral-volume-controller", "expand-controller", "generic-garbage-collector",
    "horizontal-pod-autoscaler", "job-controller", "legacy-service-account-token-cleaner",
    "namespace-controller", "node-controller", "persistent-volume-binder",
    "pod-garbage-collector", "pv-protection-controller", "pvc-protection-controller",
    "replicaset-controller", "replication-controller", "resourcequota-controller",
    "root-ca-cert-publisher", "service-account-controller", "service-controller",
    "statefulset-controller", "token-cleaner", "ttl-after-finished-controller",
    "ttl-controller", "validatingadmissionpolicy-status-controller")


def _meta(name: str, ns: str | None = None, labels: dict[str, str] | None = None,
          **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    if labels:
        meta["labels"] = labels
    meta.update(extra)
    return meta


def _node(profile: ClusterProfile, name: str, index: int) -> dict[str, Any]:
    control = index == 0
    labels = {"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64", "kubernetes.io/hostname": name,
              "kubernetes.io/os": "linux"}
    if control:
        labels["node-role.kubernetes.io/control-plane"] = ""
        labels["node.kubernetes.io/exclude-from-external-load-balancers"] = ""
    ip = f"172.18.0.{index + 2}"
    h = hashlib.sha256(f"{profile.name}/{name}".encode()).hexdigest()
    capacity = {"cpu": "8", "ephemeral-storage": "482797652Ki", "hugepages-1Gi": "0",
                "hugepages-2Mi": "0", "memory": "32587320Ki", "pods": "110"}
    spec: dict[str, Any] = {"podCIDR": f"10.244.{index}.0/24",
                            "podCIDRs": [f"10.244.{index}.0/24"],
                            "providerID": f"kind://docker/{profile.name}/{name}"}
    if control:
        spec["taints"] = [{"key": "node-role.kubernetes.io/control-plane",
                           "effect": "NoSchedule"}]
    created = rfc3339(profile.created_at + 20 + 15 * index)
    conditions = [
        {"type": t, "status": "False", "reason": f"KubeletHas{r}", "message": m,
         "lastHeartbeatTime": created, "lastTransitionTime": created}
        for t, r, m in (("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory "
                         "available"),
                        ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                        ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"))
    ] + [{"type": "Ready", "status": "True", "reason": "KubeletReady",
          "message": "kubelet is posting ready status", "lastHeartbeatTime": created,
          "lastTransitionTime": created}]
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": _meta(name, labels=labels, annotations={
            "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
            "node.alpha.kubernetes.io/ttl": "0",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true"}),
        "spec": spec,
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip},
                          {"type": "Hostname", "address": name}],
            "allocatable": capacity, "capacity": capacity, "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"architecture": "amd64", "bootID": _uuid(h[:32]),
                         "containerRuntimeVersion": "containerd://2.1.3",
                         "kernelVersion": profile.kernel, "kubeProxyVersion": "",
                         "kubeletVersion": K8S_VERSION, "machineID": h[32:64],
                         "operatingSystem": "linux",
                         "osImage": "Debian GNU/Linux 12 (bookworm)",
                         "systemUUID": _uuid(h[16:48])},
        },
    }


def _uuid(hex32: str) -> str:
    return f"{hex32[:8]}-{hex32[8:12]}-{hex32[12:16]}-{hex32[16:20]}-{hex32[20:32]}"


def _container(name: str, image: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": image, **extra}


def _static_pod(component: str, node: str, image: str, command: list[str],
                cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": _meta(f"{component}-{node}", "kube-system",
                          {"component": component, "tier": "control-plane"},
                          annotations={"kubernetes.io/config.source": "file"},
                          ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": node,
                                            "controller": True}]),
        "spec": {"nodeName": node, "hostNetwork": True, "priority": 2000001000,
                 "priorityClassName": "system-node-critical",
                 "containers": [_container(component, image, command=command,
                                           resources={"requests": {"cpu": cpu}})]},
    }


def _control_plane(profile: ClusterProfile) -> list[dict[str, Any]]:
    node, reg = profile.control_plane, "registry.k8s.io"
    return [
        _static_pod("etcd", node, f"{reg}/etcd:3.6.4-0",
                    ["etcd", "--advertise-client-urls=https://172.18.0.2:2379"], "100m"),
        _static_pod("kube-apiserver", node, f"{reg}/kube-apiserver:{K8S_VERSION}",
                    ["kube-apiserver", "--advertise-address=172.18.0.2",
                     "--authorization-mode=Node,RBAC"], "250m"),
        _static_pod("kube-controller-manager", node,
                    f"{reg}/kube-controller-manager:{K8S_VERSION}",
                    ["kube-controller-manager", "--allocate-node-cidrs=true",
                     "--cluster-cidr=10.244.0.0/16"], "200m"),
        _static_pod("kube-scheduler", node, f"{reg}/kube-scheduler:{K8S_VERSION}",
                    ["kube-scheduler", "--bind-address=127.0.0.1"], "100m"),
    ]


def _daemonset(name: str, labels: dict[str, str], container: dict[str, Any],
               account: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": _meta(name, "kube-system", dict(labels)),
        "spec": {"selector": {"matchLabels": dict(labels)},
                 "template": {"metadata": {"labels": dict(labels)}, "spec": {
                     "hostNetwork": True, "serviceAccountName": account,
                     "priorityClassName": "system-node-critical",
                     "tolerations": [{"operator": "Exists"}],
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "containers": [container]}}},
    }


def _config_maps(profile: ClusterProfile) -> list[dict[str, Any]]:
    def cm(name: str, ns: str, data: dict[str, str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta(name, ns),
                "data": data}

    kubeadm = (f"apiServer: {{}}\napiVersion: kubeadm.k8s.io/v1beta4\nclusterName: "
               f"{profile.name}\ncontrolPlaneEndpoint: {profile.control_plane}:6443\n"
               f"kind: ClusterConfiguration\nkubernetesVersion: {K8S_VERSION}\nnetworking:\n"
               "  dnsDomain: cluster.local\n  podSubnet: 10.244.0.0/16\n"
               "  serviceSubnet: 10.96.0.0/16\n")
    return [
        cm("coredns", "kube-system", {"Corefile": COREFILE}),
        cm("kubeadm-config", "kube-system", {"ClusterConfiguration": kubeadm}),
        cm("kube-proxy", "kube-system", {"config.conf": "apiVersion: kubeproxy.config.k8s.io/"
                                         "v1alpha1\nkind: KubeProxyConfiguration\nmode: "
                                         "iptables\nclusterCIDR: 10.244.0.0/16\n"}),
        cm("kubelet-config", "kube-system", {"kubelet": "apiVersion: kubelet.config.k8s.io/"
                                             "v1beta1\nkind: KubeletConfiguration\n"
                                             "clusterDNS:\n- 10.96.0.10\nclusterDomain: "
                                             "cluster.local\n"}),
        cm("local-path-config", "local-path-storage", {
            "config.json": '{"nodePathMap":[{"node":"DEFAULT_PATH_FOR_NON_LISTED_NODES",'
                           '"paths":["/var/local-path-provisioner"]}]}'}),
        cm("cluster-info", "kube-public", {"kubeconfig": "apiVersion: v1\nclusters:\n- "
                                           "cluster:\n    server: https://"
                                           f"{profile.control_plane}:6443\n  name: \"\"\n"}),
    ]


def _system_workloads() -> list[dict[str, Any]]:
    proxy = _container("kube-proxy", f"registry.k8s.io/kube-proxy:{K8S_VERSION}",
                       command=["/usr/local/bin/kube-proxy",
                                "--config=/var/lib/kube-proxy/config.conf",
                                "--hostname-override=$(NODE_NAME)"],
                       securityContext={"privileged": True})
    kindnet = _container("kindnet-cni", "docker.io/kindest/kindnetd:v20250512-df8de77b",
                         env=[{"name": "POD_SUBNET", "value": "10.244.0.0/16"}],
                         resources={"limits": {"cpu": "100m", "memory": "50Mi"},
                                    "requests": {"cpu": "100m", "memory": "50Mi"}},
                         securityContext={"capabilities": {"add": ["NET_RAW",
                                                                   "NET_ADMIN"]}})
    provisioner_labels = {"app": "local-path-provisioner"}
    provisioner = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": _meta("local-path-provisioner", "local-path-storage",
                          dict(provisioner_labels)),
        "spec": {"replicas": 1, "selector": {"matchLabels": dict(provisioner_labels)},
                 "template": {"metadata": {"labels": dict(provisioner_labels)}, "spec": {
                     "serviceAccountName": "local-path-provisioner-service-account",
                     "tolerations": [{"key": "node-role.kubernetes.io/control-plane",
                                      "operator": "Equal", "effect": "NoSchedule"}],
                     "nodeSelector": {"kubernetes.io/os": "linux"},
                     "containers": [_container(
                         "local-path-provisioner",
                         "docker.io/kindest/local-path-provisioner:v20250214-acbabc1a",
                         command=["local-path-provisioner", "--debug", "start",
                                  "--helper-image",
                                  "docker.io/kindest/local-path-helper:v20241212-8ac705d0",
                                  "--config", "/etc/config/config.json"])]}}},
    }
    return [_daemonset("kube-proxy", {"k8s-app": "kube-proxy"}, proxy, "kube-proxy"),
            _daemonset("kindnet", {"app": "kindnet", "k8s-app": "kindnet", "tier": "node"},
                       kindnet, "kindnet"),
            provisioner]


def _cluster_objects(profile: ClusterProfile) -> list[dict[str, Any]]:
    accounts = [("kube-system", n) for n in (*_CONTROLLERS, "coredns", "kube-proxy",
                                              "kindnet")]
    accounts.append(("local-path-storage", "local-path-provisioner-service-account"))
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": _meta("kubernetes", "default", {"component": "apiserver",
                                                     "provider": "kubernetes"}),
         "spec": {"clusterIP": "10.96.0.1", "ports": [
             {"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]}},
        *({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(n, ns)}
          for ns, n in accounts),
        *_config_maps(profile),
        {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
         "metadata": _meta("standard", annotations={
             "storageclass.kubernetes.io/is-default-class": "true"}),
         "provisioner": "rancher.io/local-path", "reclaimPolicy": "Delete",
         "volumeBindingMode": "WaitForFirstConsumer"},
        *({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
           "metadata": _meta(n), "value": v, "preemptionPolicy": "PreemptLowerPriority",
           "description": "Used for system critical pods that must run in the cluster, but "
                          "can be moved to another node if necessary."}
          for n, v in (("system-cluster-critical", 2000000000),
                       ("system-node-critical", 2000001000))),
        *cluster_roles(),
        *_control_plane(profile),
        *coredns_objects(),
        *_system_workloads(),
    ]


def bootstrap(store: ObjectStore, profile: ClusterProfile) -> None:
    """Fill ``store`` with the cluster described by ``profile`` (before any application).

    Args:
        store: A fresh store (it already holds the four default namespaces).
        profile: Name, size and age of the cluster.
    """
    nodes = [profile.control_plane, *profile.worker_names]
    with store.at(profile.created_at, manager="kubeadm"):
        _join(store, profile, 0, nodes[0])
        store.create({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": "local-path-storage"}})
        node_uid = store.get("Node", None, nodes[0])["metadata"]["uid"]
        for obj in _cluster_objects(profile):
            for ref in obj["metadata"].get("ownerReferences") or []:
                ref["uid"] = node_uid
            store.create(obj)
    for i, name in enumerate(nodes[1:], start=1):  # workers join once the control plane is up
        with store.at(profile.created_at + 40 + 5 * i, manager="kubelet"):
            _join(store, profile, i, name)
    store.advance_revision(idle_revisions(profile.deployed_at - profile.created_at))


def idle_revisions(seconds: float) -> int:
    """The revisions an idle cluster's etcd moves on by in ``seconds``."""
    return int(max(0.0, seconds) / 3_600 * REVISIONS_PER_HOUR)

def _join(store: ObjectStore, profile: ClusterProfile, index: int, name: str) -> None:
    store.create(_node(profile, name, index))
    store.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                  "metadata": _meta(name, "kube-node-lease"),
                  "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}})
