"""The cluster around the application: nodes, kube-system, ages, identity, probes, logs."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from netarena.k8s.apiserver import ObjectStore, bootstrap, cluster_profile
from netarena.k8s.apiserver.coredns import DNS_SERVICE_IP
from netarena.k8s.apiserver.kinds import Forbidden
from netarena.k8s.apiserver.protobuf import decode_review
from netarena.k8s.apiserver.rbac import UserInfo, authorize
from netarena.k8s.dns import coredns_pods
from netarena.k8s.install import OPERATOR_ACCOUNT, deploy
from netarena.k8s.manifests import render_all
from netarena.k8s.model import online_boutique
from netarena.k8s.pods import Kubelet
from netarena.k8s.pods.logs import container_log
from netarena.k8s.pods.shell import run_in_pod

NOW = 1_800_000_000.0


def _cluster() -> ObjectStore:
    profile = cluster_profile(7, NOW)
    s = ObjectStore(seed=7, created_at=profile.created_at, clock=lambda: NOW)
    bootstrap(s, profile)
    model = online_boutique()
    deploy(s, profile, [o for o in render_all(model) if o["kind"] != "Namespace"])
    return s


@pytest.fixture(scope="module")
def store() -> ObjectStore:
    return _cluster()


def _objects(store: ObjectStore) -> dict[str, list[dict[str, Any]]]:
    return {k: store.list(k) for k in ("Pod", "Namespace", "NetworkPolicy", "Service")}


def test_profile_is_seeded_and_ordered() -> None:
    a, b = cluster_profile(7, NOW), cluster_profile(7, NOW)
    assert a == b and a.created_at < a.deployed_at < a.now == NOW
    assert {cluster_profile(s, NOW).name for s in range(40)} > {a.name}


def test_nodes_system_pods_and_dns(store: ObjectStore) -> None:
    nodes = [n["metadata"]["name"] for n in store.list("Node")]
    assert nodes[0].endswith("-control-plane") and len(nodes) >= 3
    system = store.list("Pod", "kube-system")
    dns = [p for p in system if p["metadata"]["labels"].get("k8s-app") == "kube-dns"]
    expected = sorted(p["status"]["podIP"] for p in coredns_pods())
    assert sorted(p["status"]["podIP"] for p in dns) == expected, "dns.py matches the cluster"
    assert store.get("Service", "kube-system", "kube-dns")["spec"]["clusterIP"] == \
        DNS_SERVICE_IP
    per_node = {n: sum(1 for p in system if p["spec"]["nodeName"] == n
                       and p["metadata"]["name"].startswith("kube-proxy-")) for n in nodes}
    assert set(per_node.values()) == {1}, "a kube-proxy pod on every node"
    app_nodes = {p["spec"]["nodeName"] for p in store.list("Pod", "default")}
    assert app_nodes and not any(n.endswith("control-plane") for n in app_nodes), "tainted"


def test_ages_and_revisions_look_lived_in(store: ObjectStore) -> None:
    ns = store.get("Namespace", None, "kube-system")["metadata"]["creationTimestamp"]
    app = store.get("Deployment", "default", "frontend")["metadata"]["creationTimestamp"]
    assert ns < app
    assert store.revision > 1_000, "a cluster's etcd revision grows with its age"
    lease = store.get("Lease", "kube-node-lease", store.list("Node")[0]["metadata"]["name"])
    renewed = time.mktime(time.strptime(lease["spec"]["renewTime"][:19],
                                        "%Y-%m-%dT%H:%M:%S")) - time.timezone
    assert NOW - 11 < renewed <= NOW


def test_operator_rbac(store: ObjectStore) -> None:
    me = UserInfo.service_account("default", OPERATOR_ACCOUNT)

    def can(verb: str, resource: str, group: str = "", ns: str = "default") -> bool:
        return authorize(store, me, {"verb": verb, "resource": resource, "group": group,
                                     "namespace": ns})[0]

    assert can("patch", "networkpolicies", "networking.k8s.io")
    assert can("list", "pods", ns="kube-system") and can("list", "nodes", ns="")
    assert not can("patch", "networkpolicies", "networking.k8s.io", ns="kube-system")
    assert not can("list", "secrets", ns="kube-system")
    assert Forbidden.code == 403


def test_default_roles_are_upstreams_rule_by_rule(store: ObjectStore) -> None:
    """One API group per rule (``auth can-i --list`` showed ``configmaps.apps``), and the
    on-call account may not relabel its own Namespace (``edit`` only reads it)."""
    me = UserInfo.service_account("default", OPERATOR_ACCOUNT)
    edit = store.get("ClusterRole", None, "edit")
    assert all(len(rule["apiGroups"]) == 1 for rule in edit["rules"])
    assert {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "networkpolicies"],
            "verbs": ["create", "delete", "deletecollection", "patch", "update"]} in edit["rules"]

    def can(verb: str, resource: str, group: str = "", ns: str = "default") -> bool:
        return authorize(store, me, {"verb": verb, "resource": resource, "group": group,
                                     "namespace": ns, "name": ns})[0]

    assert not can("patch", "networkpolicies", "apps")
    assert not can("patch", "namespaces") and can("get", "namespaces")
    assert can("create", "pods") and not can("create", "nodes", ns="")


@pytest.mark.serial
def test_probes_follow_policy_and_dns(store: ObjectStore) -> None:
    """From pods whose image has BusyBox (the Go services' distroless images have no nc)."""
    frontend = store.list("Pod", "default", "app=frontend")[0]
    ads = store.list("Pod", "default", "app=adservice")[0]
    recs = store.list("Pod", "default", "app=recommendationservice")[0]
    ok = run_in_pod(_objects(store), recs, ["nc", "-zv", "-w", "2", "productcatalogservice",
                                            "3550"])
    assert ok.exit_code == 0 and "open" in ok.stderr
    blocked = run_in_pod(_objects(store), ads, ["nc", "-zv", "-w", "2", "cartservice", "7070"])
    assert blocked.exit_code == 1 and "timed out" in blocked.stderr and blocked.wait_s == 2
    refused = run_in_pod(_objects(store), ads,  # the frontend admits any port: RST
                         ["nc", "-zv", "-w", "2", frontend["status"]["podIP"], "9999"])
    assert refused.exit_code == 1 and "refused" in refused.stderr
    dropped = run_in_pod(_objects(store), recs,  # adservice admits only 9555: dropped
                         ["nc", "-zv", "-w", "2", ads["status"]["podIP"], "9999"])
    assert "timed out" in dropped.stderr
    missing = run_in_pod(_objects(store), recs, ["wget", "-T", "2", "-qO-", "http://nope:80"])
    assert missing.exit_code == 1 and "bad address 'nope:80'" in missing.stderr
    stop = threading.Event()
    stop.set()
    start = time.monotonic()
    run_in_pod(_objects(store), ads, ["nc", "-zv", "-w", "30", "cartservice", "7070"], stop)
    assert time.monotonic() - start < 5, "a stopping server cuts a timeout short"


def test_exec_reads_the_state_of_the_last_write() -> None:
    """The kubelet reads the store's shared copies, made once per change of a kind (an exec
    read a fresh copy of every object before, 90% of its time); a write must still show at
    once."""
    store = _cluster()
    kubelet = Kubelet(store)
    recs = store.list("Pod", "default", "app=recommendationservice")[0]
    probe = ["nc", "-zv", "-w", "1", "productcatalogservice", "3550"]
    stop = threading.Event()
    assert kubelet.run_exec(recs, probe, stop).exit_code == 0
    seen = kubelet._objects()
    assert all(kubelet._objects()[kind] is seen[kind] for kind in seen)  # no write: no copy
    store.patch("NetworkPolicy", "default", "productcatalogservice",
                [{"op": "replace", "path": "/spec/ingress", "value": []}], "json")
    closed = kubelet.run_exec(recs, probe, stop)
    assert closed.exit_code == 1 and "timed out" in closed.stderr
    now = kubelet._objects()
    assert now["NetworkPolicy"] is not seen["NetworkPolicy"] and now["Pod"] is seen["Pod"]


@pytest.mark.parametrize(("app", "tool"), [("frontend", "sh"), ("cartservice", "sh"),
                                           ("checkoutservice", "nc"), ("adservice", "curl")])
def test_exec_into_an_image_without_the_tool_fails_as_containerd_reports(
        store: ObjectStore, app: str, tool: str) -> None:
    """Distroless and chiseled images have no shell; Alpine's BusyBox has no curl."""
    pod = store.list("Pod", "default", f"app={app}")[0]
    result = run_in_pod(_objects(store), pod, [tool, "-c", "true"])
    assert result.exit_code != 0 and not result.stdout
    assert "OCI runtime exec failed: exec failed: unable to start container process: " \
        f'exec: "{tool}": executable file not found in $PATH: unknown' in result.stderr


@pytest.mark.parametrize("script", ["nc 'adservice 9555", 'wget -qO- "http://frontend'])
def test_an_unterminated_quote_is_the_shells_error(store: ObjectStore, script: str) -> None:
    """It raised in the API server and closed kubectl's exec stream abnormally."""
    loadgen = store.list("Pod", "default", "app=loadgenerator")[0]
    result = run_in_pod(_objects(store), loadgen, ["sh", "-c", script])
    assert result.exit_code == 2 and "unterminated quoted string" in result.stderr


def test_logs(store: ObjectStore) -> None:
    pod = store.list("Pod", "default", "app=redis-cart")[0]
    text = container_log(pod, {"tailLines": "3", "timestamps": "true"}, NOW)
    assert len(text.splitlines()) == 3 and text.split()[0].endswith("Z")


def test_protobuf_access_review_decodes() -> None:
    # k8s envelope: Unknown{raw: SelfSubjectAccessReview{spec{resourceAttributes{...}}}}
    attrs = b"\n\x07default\x12\x05patch\x1a\x11networking.k8s.io*\x0fnetworkpolicies"
    spec = b"\n" + bytes([len(attrs)]) + attrs
    obj = b"\x12" + bytes([len(spec)]) + spec
    body = b"k8s\x00" + b"\x12" + bytes([len(obj)]) + obj
    review = decode_review(body, "SelfSubjectAccessReview")
    assert review == {"spec": {"resourceAttributes": {
        "namespace": "default", "verb": "patch", "group": "networking.k8s.io",
        "resource": "networkpolicies"}}}


def test_faulted_policies_carry_no_write_history() -> None:
    """Faulted policies were deployed as they are: same generation, owners and times."""
    from netarena.k8s import K8sApp

    app = K8sApp()
    for seed in range(12):
        episode = app.open(app.generate(seed, 1 + seed % 3))
        try:
            policies = episode.store.list("NetworkPolicy", "default")
            shapes = {(p["metadata"]["generation"], p["metadata"]["creationTimestamp"],
                       tuple((e["manager"], e["operation"], e["time"])
                             for e in p["metadata"]["managedFields"])) for p in policies}
            assert len(shapes) == 1, shapes
        finally:
            episode.close()
