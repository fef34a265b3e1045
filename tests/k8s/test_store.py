"""ObjectStore: API-server write semantics, deployments owning pods, patches, selectors."""

from __future__ import annotations

import ipaddress
import re
import threading
from typing import Any

import pytest

from netarena.common.core.errors import NetArenaError
from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.apiserver.kinds import AlreadyExists, BadRequest, Conflict, Invalid, NotFound

SAFE = "[bcdfghjklmnpqrstvwxz2456789]"
POD_NAME = re.compile(rf"^(?P<d>[a-z-]+)-(?P<h>{SAFE}{{10}})-{SAFE}{{5}}$")


def deployment(name: str, port: int = 8080, replicas: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "tier": "backend"}},
                "spec": {"containers": [{
                    "name": "server", "image": f"example/{name}:v1",
                    "ports": [{"containerPort": port, "name": "grpc"}],
                    "env": [{"name": "PORT", "value": str(port)}],
                }]},
            },
        },
    }


def service(name: str, port: int, target: int | str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
            "spec": {"selector": {"app": name},
                     "ports": [{"name": "grpc", "port": port, "targetPort": target}]}}


def policy(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name},
            "spec": {"podSelector": {"matchLabels": {"app": name}}, **spec}}


@pytest.fixture
def store() -> ObjectStore:
    s = ObjectStore(seed=7)
    s.create(deployment("cartservice", 7070, replicas=2))
    s.create(deployment("frontend", 8080))
    s.create(service("cartservice", 7070, "grpc"))
    s.create(policy("cartservice", ingress=[{
        "from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}],
        "ports": [{"port": 7070}],
    }]))
    return s


def test_deployment_creates_running_pods_with_template_labels(store: ObjectStore) -> None:
    pods = store.list("Pod", "default", "app=cartservice")
    assert len(pods) == 2
    hashes = set()
    for pod in pods:
        m = POD_NAME.match(pod["metadata"]["name"])
        assert m and m["d"] == "cartservice"
        hashes.add(m["h"])
        assert pod["metadata"]["labels"]["tier"] == "backend"
        assert pod["metadata"]["labels"]["pod-template-hash"] == m["h"]
        assert pod["spec"]["containers"][0]["image"] == "example/cartservice:v1"
        assert pod["status"]["phase"] == "Running"
        assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(
            "10.244.0.0/16")
        ready = {c["type"]: c["status"] for c in pod["status"]["conditions"]}
        assert ready["Ready"] == "True"
    assert len(hashes) == 1
    assert len({p["status"]["podIP"] for p in store.list("Pod")}) == 3


def test_names_and_ips_are_deterministic_per_seed(store: ObjectStore) -> None:
    def snapshot(s: ObjectStore) -> list[tuple[str, str]]:
        return [(p["metadata"]["name"], p["status"]["podIP"]) for p in s.list("Pod")]

    again = ObjectStore(seed=7)
    other = ObjectStore(seed=8)
    for s in (again, other):
        s.create(deployment("cartservice", 7070, replicas=2))
        s.create(deployment("frontend", 8080))
        s.create(service("cartservice", 7070, "grpc"))
    assert snapshot(again) == snapshot(store)
    assert snapshot(other) != snapshot(store)
    ip = store.get("Service", "default", "cartservice")["spec"]["clusterIP"]
    assert again.get("Service", "default", "cartservice")["spec"]["clusterIP"] == ip
    assert ipaddress.ip_address(ip) in ipaddress.ip_network("10.96.0.0/12")


def test_metadata_is_filled(store: ObjectStore) -> None:
    np = store.get("NetworkPolicy", "default", "cartservice")
    meta = np["metadata"]
    assert re.fullmatch(r"[0-9a-f-]{36}", meta["uid"])
    assert meta["generation"] == 1 and int(meta["resourceVersion"]) > 0
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", meta["creationTimestamp"])
    assert meta["namespace"] == "default"


def test_errors_are_netarena_errors(store: ObjectStore) -> None:
    with pytest.raises(NotFound, match='pods "nope" not found') as info:
        store.get("Pod", "default", "nope")
    assert isinstance(info.value, NetArenaError)
    with pytest.raises(AlreadyExists):
        store.create(policy("cartservice"))
    with pytest.raises(NotFound, match='namespaces "elsewhere" not found'):
        store.create({**policy("x"), "metadata": {"name": "x", "namespace": "elsewhere"}})
    with pytest.raises(NotFound):
        store.get("Secret", "default", "x")


def test_copies_in_and_out(store: ObjectStore) -> None:
    obj = policy("adservice")
    created = store.create(obj)
    obj["spec"]["podSelector"] = {"matchLabels": {"app": "mutated"}}
    created["spec"]["podSelector"]["matchLabels"]["app"] = "mutated"
    listed = store.list("NetworkPolicy")
    listed[0]["spec"].clear()
    again = store.get("NetworkPolicy", "default", "adservice")
    assert again["spec"]["podSelector"] == {"matchLabels": {"app": "adservice"}}
    assert store.list("NetworkPolicy")[0]["spec"]


def test_revision_moves_on_writes_only(store: ObjectStore) -> None:
    rev = store.revision
    store.list("Pod")
    store.get("Service", "default", "cartservice")
    assert store.revision == rev
    store.patch("NetworkPolicy", "default", "cartservice", {"metadata": {"labels": {"a": "b"}}})
    assert store.revision > rev
    rev = store.revision
    store.patch("NetworkPolicy", "default", "cartservice", {"metadata": {"labels": {"a": "b"}}})
    assert store.revision == rev, "a no-op patch is not a write"
    store.create(policy("x"), dry_run=True)
    assert store.revision == rev


def test_list_selectors_and_order(store: ObjectStore) -> None:
    names = [p["metadata"]["name"] for p in store.list("Pod")]
    assert names == sorted(names)
    assert len(store.list("Pod", label_selector="app in (frontend, cartservice)")) == 3
    assert len(store.list("Pod", label_selector="app notin (frontend),tier=backend")) == 2
    assert len(store.list("Pod", label_selector="app!=frontend")) == 2
    assert len(store.list("Pod", label_selector="!tier")) == 0
    assert len(store.list("Pod", label_selector="tier")) == 3
    one = names[0]
    assert [p["metadata"]["name"] for p in store.list(
        "Pod", field_selector=f"metadata.name={one}")] == [one]
    assert len(store.list("Pod", field_selector="status.phase!=Running")) == 0
    assert store.list("Pod", namespace="kube-system") == []
    with pytest.raises(BadRequest):
        store.list("Pod", label_selector="app in in (")


def test_namespaces_exist_and_carry_name_label(store: ObjectStore) -> None:
    names = [n["metadata"]["name"] for n in store.list("Namespace")]
    assert {"default", "kube-system"} <= set(names)
    ns = store.get("Namespace", None, "default")
    assert ns["metadata"]["labels"]["kubernetes.io/metadata.name"] == "default"
    assert "namespace" not in ns["metadata"]


def test_network_policy_defaulting(store: ObjectStore) -> None:
    np = store.get("NetworkPolicy", "default", "cartservice")
    assert np["spec"]["policyTypes"] == ["Ingress"]
    assert np["spec"]["ingress"][0]["ports"][0]["protocol"] == "TCP"
    both = store.create(policy("egress", egress=[{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]))
    assert both["spec"]["policyTypes"] == ["Ingress", "Egress"]
    explicit = store.create(policy("eg-only", policyTypes=["Egress"]))
    assert explicit["spec"]["policyTypes"] == ["Egress"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"ingress": [{"ports": [{"port": 80, "protocol": "ICMP"}]}]},
         "spec.ingress[0].ports[0].protocol"),
        ({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]},
         "spec.ingress[0].ports[0].endPort"),
        ({"ingress": [{"ports": [{"port": "http", "endPort": 80}]}]},
         "spec.ingress[0].ports[0].endPort"),
        ({"ingress": [{"ports": [{"port": 70000}]}]}, "spec.ingress[0].ports[0].port"),
        ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["11.0.0.0/16"]}}]}]},
         "spec.egress[0].to[0].ipBlock.except[0]"),
        ({"egress": [{"to": [{"ipBlock": {"cidr": "banana"}}]}]},
         "spec.egress[0].to[0].ipBlock.cidr"),
        ({"podSelector": {"matchExpressions": [{"key": "app", "operator": "Is"}]}},
         "spec.podSelector.matchExpressions[0].operator"),
        ({"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
         "spec.podSelector.matchExpressions[0].values"),
        ({"policyTypes": ["Sideways"]}, "spec.policyTypes[0]"),
    ],
)
def test_network_policy_validation(store: ObjectStore, spec: dict[str, Any], field: str) -> None:
    with pytest.raises(Invalid) as info:
        store.create(policy("bad", **spec))
    assert [c["field"] for c in info.value.details["causes"]] == [field]
    assert info.value.details["kind"] == "NetworkPolicy"
    with pytest.raises(NotFound):
        store.get("NetworkPolicy", "default", "bad")


def test_json_patch(store: ObjectStore) -> None:
    out = store.patch("NetworkPolicy", "default", "cartservice", [
        {"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": 7071},
        {"op": "add", "path": "/spec/ingress/-", "value": {"from": [{"podSelector": {}}]}},
        {"op": "copy", "from": "/spec/podSelector", "path": "/spec/ingress/1/from/0/podSelector"},
        {"op": "add", "path": "/metadata/labels", "value": {"a~b/c": "x"}},
        {"op": "move", "from": "/metadata/labels/a~0b~1c", "path": "/metadata/labels/k"},
        {"op": "test", "path": "/spec/ingress/0/ports/0/port", "value": 7071},
    ], "json")
    assert out["spec"]["ingress"][0]["ports"][0]["port"] == 7071
    assert out["spec"]["ingress"][1]["from"][0]["podSelector"] == {
        "matchLabels": {"app": "cartservice"}}
    assert out["metadata"]["labels"] == {"k": "x"}
    assert out["metadata"]["generation"] == 2
    with pytest.raises(Invalid):
        store.patch("NetworkPolicy", "default", "cartservice",
                    [{"op": "test", "path": "/spec/ingress/0/ports/0/port", "value": 1}], "json")
    with pytest.raises(Invalid):
        store.patch("NetworkPolicy", "default", "cartservice",
                    [{"op": "remove", "path": "/spec/egress/3"}], "json")
    with pytest.raises(BadRequest):
        store.patch("NetworkPolicy", "default", "cartservice", {"op": "add"}, "json")
    with pytest.raises(BadRequest):
        store.patch("NetworkPolicy", "default", "cartservice", [{"op": "frob", "path": "/a"}],
                    "json")
    assert store.get("NetworkPolicy", "default", "cartservice")["spec"]["ingress"][0][
        "ports"][0]["port"] == 7071


def test_merge_patch_deletes_with_null_and_replaces_lists(store: ObjectStore) -> None:
    out = store.patch("NetworkPolicy", "default", "cartservice",
                      {"spec": {"ingress": [{}], "podSelector": {"matchLabels": None}}}, "merge")
    assert out["spec"]["ingress"] == [{}]
    assert out["spec"]["podSelector"] == {}


def test_strategic_patch_merges_containers_and_ports(store: ObjectStore) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{
        "name": "server",
        "ports": [{"containerPort": 9090, "name": "metrics"}],
        "env": [{"name": "PORT", "$patch": "delete"}],
    }, {"name": "sidecar", "image": "example/proxy:v1"}]}}}}
    out = store.patch("Deployment", "default", "frontend", patch, "strategic")
    containers = out["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["server", "sidecar"]
    assert [p["containerPort"] for p in containers[0]["ports"]] == [8080, 9090]
    assert containers[0]["env"] == []
    assert containers[0]["image"] == "example/frontend:v1"


def test_strategic_patch_replaces_policy_rules(store: ObjectStore) -> None:
    out = store.patch("NetworkPolicy", "default", "cartservice", {"spec": {"ingress": [
        {"from": [{"podSelector": {"matchLabels": {"app": "checkoutservice"}}}]}]}}, "strategic")
    assert out["spec"]["ingress"] == [
        {"from": [{"podSelector": {"matchLabels": {"app": "checkoutservice"}}}]}]


def test_strategic_directives(store: ObjectStore) -> None:
    store.patch("Deployment", "default", "frontend", {"spec": {"template": {"spec": {
        "containers": [{"name": "b", "image": "b"}, {"name": "a", "image": "a"}]}}}},
        "strategic")
    out = store.patch("Deployment", "default", "frontend", {"spec": {"template": {"spec": {
        "$setElementOrder/containers": [{"name": "a"}, {"name": "server"}, {"name": "b"}]}}}},
        "strategic")
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == [
        "a", "server", "b"]
    out = store.patch("Service", "default", "cartservice",
                      {"spec": {"ports": [{"port": 7070, "$patch": "delete"},
                                          {"port": 80, "name": "http", "targetPort": 8080}]}},
                      "strategic")
    assert [p["port"] for p in out["spec"]["ports"]] == [80]
    out = store.patch("NetworkPolicy", "default", "cartservice",
                      {"spec": {"$patch": "replace", "podSelector": {}}}, "strategic")
    assert out["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}


def test_replace_keeps_identity_and_checks_versions(store: ObjectStore) -> None:
    old = store.get("NetworkPolicy", "default", "cartservice")
    new = policy("cartservice", ingress=[])
    new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
    out = store.replace(new)
    assert out["metadata"]["uid"] == old["metadata"]["uid"]
    assert out["metadata"]["creationTimestamp"] == old["metadata"]["creationTimestamp"]
    assert out["metadata"]["generation"] == 2
    with pytest.raises(Conflict):
        store.replace(new)
    with pytest.raises(NotFound):
        store.replace(policy("ghost"))


def test_service_cluster_ip_is_immutable(store: ObjectStore) -> None:
    svc = store.get("Service", "default", "cartservice")
    ip = svc["spec"]["clusterIP"]
    svc["metadata"].pop("resourceVersion")
    svc["spec"].pop("clusterIP")
    assert store.replace(svc)["spec"]["clusterIP"] == ip
    with pytest.raises(Invalid):
        store.patch("Service", "default", "cartservice", {"spec": {"clusterIP": "10.96.0.99"}},
                    "merge")
    with pytest.raises(Invalid):
        store.create({**service("dup", 80, 80), "spec": {
            **service("dup", 80, 80)["spec"], "clusterIP": ip}})


def test_status_is_not_writable_through_the_object(store: ObjectStore) -> None:
    pod = store.list("Pod", label_selector="app=frontend")[0]
    name = pod["metadata"]["name"]
    out = store.patch("Pod", "default", name, {"status": {"phase": "Failed"},
                                               "metadata": {"labels": {"x": "y"}}}, "merge")
    assert out["status"]["phase"] == "Running"
    assert out["metadata"]["labels"]["x"] == "y"


def test_deployment_scaling_and_template_changes(store: ObjectStore) -> None:
    before = {p["metadata"]["name"] for p in store.list("Pod", label_selector="app=cartservice")}
    store.patch("Deployment", "default", "cartservice", {"spec": {"replicas": 3}}, "merge")
    after = {p["metadata"]["name"] for p in store.list("Pod", label_selector="app=cartservice")}
    assert len(after) == 3 and before < after
    status = store.get("Deployment", "default", "cartservice")["status"]
    assert status["readyReplicas"] == 3 and status["replicas"] == 3
    store.patch("Deployment", "default", "cartservice", {"spec": {"template": {"metadata": {
        "labels": {"version": "v2"}}}}}, "strategic")
    pods = store.list("Pod", label_selector="app=cartservice")
    assert len(pods) == 3 and not {p["metadata"]["name"] for p in pods} & after
    assert all(p["metadata"]["labels"]["version"] == "v2" for p in pods)
    with pytest.raises(Invalid):
        store.patch("Deployment", "default", "cartservice",
                    {"spec": {"selector": {"matchLabels": {"app": "other"}}}}, "merge")


def test_deleted_pods_are_replaced_and_deployments_take_their_pods(store: ObjectStore) -> None:
    pod = store.list("Pod", label_selector="app=frontend")[0]["metadata"]["name"]
    store.delete("Pod", "default", pod)
    pods = store.list("Pod", label_selector="app=frontend")
    assert len(pods) == 1 and pods[0]["metadata"]["name"] != pod
    store.delete("Deployment", "default", "frontend")
    assert store.list("Pod", label_selector="app=frontend") == []
    with pytest.raises(NotFound):
        store.delete("Deployment", "default", "frontend")


def test_derived_kinds(store: ObjectStore) -> None:
    ep = store.get("Endpoints", "default", "cartservice")
    ips = sorted(a["ip"] for a in ep["subsets"][0]["addresses"])
    assert ips == sorted(p["status"]["podIP"] for p in
                         store.list("Pod", label_selector="app=cartservice"))
    assert ep["subsets"][0]["ports"] == [{"port": 7070, "protocol": "TCP", "name": "grpc"}]
    (es,) = store.list("EndpointSlice", "default",
                       label_selector="kubernetes.io/service-name=cartservice")
    assert len(es["endpoints"]) == 2
    rs = {r["metadata"]["name"] for r in store.list("ReplicaSet")}
    assert len(rs) == 2 and all(POD_NAME.match(f"{n}-bbbbb") for n in rs)
    assert store.list("Event") == []
    # Their controllers own derived objects: writes are answered, and undone at once.
    store.create({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "x"}})
    store.delete("Endpoints", "default", "cartservice")
    assert {e["metadata"]["name"] for e in store.list("Endpoints")} == {"cartservice"}


def test_concurrent_writers(store: ObjectStore) -> None:
    start = store.revision
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(5):
                store.create(deployment(f"w{i}x{j}", 80))
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    pods = store.list("Pod")
    assert len(pods) == 3 + 30
    assert len({p["status"]["podIP"] for p in pods}) == len(pods)
    assert store.revision == start + 60


def test_unknown_fields_are_dropped_reported_or_rejected(store: ObjectStore) -> None:
    typo = policy("typo", ingres=[{}])
    with pytest.raises(BadRequest, match='strict decoding error: unknown field "spec.ingres"'):
        store.create(typo, field_validation="Strict")
    warnings: list[str] = []
    created = store.create(typo, field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "spec.ingres"']
    assert "ingres" not in created["spec"]
    warnings.clear()
    out = store.patch("NetworkPolicy", "default", "cartservice",
                      [{"op": "add", "path": "/spec/ingress/0/ports/0/prot", "value": "UDP"}],
                      "json", field_validation="Warn", warnings=warnings)
    assert warnings == ['unknown field "spec.ingress[0].ports[0].prot"']
    assert out["spec"]["ingress"][0]["ports"] == [{"port": 7070, "protocol": "TCP"}]
    svc = store.create({**service("x", 80, 80), "extra": 1})
    assert "extra" not in svc
    pod = store.list("Pod")[0]["metadata"]["name"]
    with pytest.raises(BadRequest, match='unknown field "spec.anything"'):
        store.patch("Pod", "default", pod, {"spec": {"anything": {"goes": 1}}}, "merge",
                    field_validation="Strict")
    cm = store.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                       "data": {"k": "v"}, "dta": {}}, field_validation="Warn",
                      warnings=warnings)
    assert cm["data"] == {"k": "v"} and warnings[-1] == 'unknown field "dta"', \
        "every kind is checked field by field (from the client's models)"


def test_json_patch_copies_cannot_grow_without_bound(store: ObjectStore) -> None:
    """Each copy doubled the object: 40 of them would have taken the evaluator's memory.
    The API server caps what copies may add (``JSONPatchMaxCopyBytes``, 3 MiB)."""
    store.patch("NetworkPolicy", "default", "cartservice",
                {"metadata": {"annotations": {"note": "x" * 1000}}}, "merge")
    ops = [{"op": "copy", "from": "/metadata/annotations", "path": f"/metadata/annotations/a{i}"}
           for i in range(40)]
    with pytest.raises(Invalid, match="accumulated size increase of copy"):
        store.patch("NetworkPolicy", "default", "cartservice", ops, "json")
    assert set(store.get("NetworkPolicy", "default", "cartservice")["metadata"][
        "annotations"]) == {"note"}


def test_objects_larger_than_etcd_takes_are_refused(store: ObjectStore) -> None:
    for i in range(3):
        store.patch("NetworkPolicy", "default", "cartservice",
                    {"metadata": {"annotations": {f"n{i}": "x" * 500_000}}}, "merge")
    with pytest.raises(NetArenaError, match="request is too large"):
        store.patch("NetworkPolicy", "default", "cartservice",
                    {"metadata": {"annotations": {"n3": "x" * 500_000}}}, "merge")


def test_empty_lists_and_maps_are_omitted_as_the_api_server_does(store: ObjectStore) -> None:
    """Go's ``omitempty``: ``ingress: []`` reads back as no ``ingress``, and an edit that
    changes nothing else leaves ``generation`` alone."""
    before = store.get("NetworkPolicy", "default", "cartservice")
    out = store.patch("NetworkPolicy", "default", "cartservice", {"spec": {
        "egress": [], "ingress": [{"from": [{"podSelector": {"matchLabels": {
            "app": "frontend"}, "matchExpressions": []}}], "ports": [{"port": 7070}]}],
        "podSelector": {"matchLabels": {"app": "cartservice"}}}, "metadata": {"labels": {}}},
        "merge")
    assert out["spec"] == before["spec"] and "labels" not in out["metadata"]
    assert out["metadata"]["generation"] == before["metadata"]["generation"]
    out = store.patch("NetworkPolicy", "default", "cartservice",
                      {"spec": {"ingress": [{"from": [], "ports": []}]}}, "merge")
    assert out["spec"]["ingress"] == [{}]
    out = store.patch("NetworkPolicy", "default", "cartservice", {"spec": {"ingress": []}},
                      "merge")
    assert "ingress" not in out["spec"] and out["spec"]["podSelector"] == {
        "matchLabels": {"app": "cartservice"}}
