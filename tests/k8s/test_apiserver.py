"""ApiServer over real HTTP on loopback: discovery, OpenAPI, tables, verbs, Status errors."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from netarena.k8s.apiserver import ApiServer, ObjectStore
from netarena.k8s.apiserver.discovery import AGGREGATED_CONTENT_TYPE
from netarena.k8s.apiserver.tables import human_duration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = f"{AGGREGATED_CONTENT_TYPE},application/json"


def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {
                         "containers": [{"name": "server", "image": f"example/{name}",
                                         "ports": [{"containerPort": 9555}]}]}}}}


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    store = ObjectStore(seed=3)
    store.create(_deployment("adservice"))
    store.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "adservice"},
                  "spec": {"selector": {"app": "adservice"},
                           "ports": [{"port": 9555, "name": "grpc"}]}})
    with ApiServer(store) as api:
        assert api.url is not None and api.url.startswith("http://127.0.0.1:")
        with httpx.Client(base_url=api.url, timeout=5) as c:
            yield c


def test_version_and_legacy_discovery(client: httpx.Client) -> None:
    assert client.get("/version").json()["gitVersion"].startswith("v1.")
    assert client.get("/api").json()["versions"] == ["v1"]
    groups = {g["name"] for g in client.get("/apis").json()["groups"]}
    assert {"apps", "networking.k8s.io", "discovery.k8s.io", "rbac.authorization.k8s.io",
            "batch", "events.k8s.io", "storage.k8s.io"} <= groups
    core = client.get("/api/v1").json()
    pods = next(r for r in core["resources"] if r["name"] == "pods")
    assert pods["namespaced"] and pods["kind"] == "Pod" and "po" in pods["shortNames"]
    netpol = next(r for r in client.get("/apis/networking.k8s.io/v1").json()["resources"]
                  if r["name"] == "networkpolicies")
    assert netpol["name"] == "networkpolicies" and "patch" in netpol["verbs"]
    assert client.get("/apis/apps").json()["preferredVersion"]["version"] == "v1"
    assert client.get("/apis/example.com/v1").status_code == 404


def test_aggregated_discovery(client: httpx.Client) -> None:
    r = client.get("/apis", headers={"Accept": AGGREGATED})
    assert r.headers["content-type"] == AGGREGATED_CONTENT_TYPE
    doc = r.json()
    assert doc["kind"] == "APIGroupDiscoveryList"
    resources = {res["resource"]: res for item in doc["items"]
                 for v in item["versions"] for res in v["resources"]}
    assert resources["deployments"]["responseKind"] == {
        "group": "apps", "version": "v1", "kind": "Deployment"}
    assert resources["networkpolicies"]["scope"] == "Namespaced"
    core = client.get("/api", headers={"Accept": AGGREGATED}).json()
    assert core["items"][0]["metadata"]["name"] == ""
    names = {res["resource"] for res in core["items"][0]["versions"][0]["resources"]}
    assert {"pods", "services", "namespaces", "endpoints", "events"} <= names


def test_openapi_v3_tags_patch_operations(client: httpx.Client) -> None:
    root = client.get("/openapi/v3").json()["paths"]
    url = root["apis/networking.k8s.io/v1"]["serverRelativeURL"]
    assert "?hash=" in url
    doc = client.get(url).json()
    item = doc["paths"]["/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies/{name}"]
    patch = item["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "networking.k8s.io", "version": "v1", "kind": "NetworkPolicy"}
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]
    core = client.get(root["api/v1"]["serverRelativeURL"]).json()
    assert "/api/v1/namespaces/{namespace}/pods/{name}" in core["paths"]
    assert client.get("/openapi/v3/apis/example.com/v1").status_code == 404


def test_lists_and_tables(client: httpx.Client) -> None:
    pods = client.get("/api/v1/namespaces/default/pods").json()
    assert pods["kind"] == "PodList" and len(pods["items"]) == 2
    table = client.get("/api/v1/namespaces/default/pods", headers={"Accept": TABLE}).json()
    assert table["kind"] == "Table"
    cols = [(c["name"], c["priority"]) for c in table["columnDefinitions"]]
    assert cols[:5] == [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0)]
    assert ("IP", 1) in cols and ("Node", 1) in cols
    row = table["rows"][0]
    assert row["cells"][1:4] == ["1/1", "Running", "0"]
    assert row["object"]["kind"] == "PartialObjectMetadata"
    full = client.get("/api/v1/namespaces/default/pods?includeObject=Object",
                      headers={"Accept": TABLE}).json()
    assert full["rows"][0]["object"]["kind"] == "Pod"
    svc = client.get("/api/v1/namespaces/default/services/adservice",
                     headers={"Accept": TABLE}).json()
    assert [c["name"] for c in svc["columnDefinitions"]][:6] == [
        "Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age"]
    assert svc["rows"][0]["cells"][4] == "9555/TCP"
    all_ns = client.get("/api/v1/pods").json()
    assert len(all_ns["items"]) == 2


def test_selectors_in_query(client: httpx.Client) -> None:
    name = client.get("/api/v1/namespaces/default/pods").json()["items"][0]["metadata"]["name"]
    one = client.get("/api/v1/namespaces/default/pods",
                     params={"fieldSelector": f"metadata.name={name}"}).json()
    assert [p["metadata"]["name"] for p in one["items"]] == [name]
    none = client.get("/api/v1/namespaces/default/pods", params={"labelSelector": "app=x"})
    assert none.json()["items"] == []
    bad = client.get("/api/v1/namespaces/default/pods", params={"labelSelector": "a in in ("})
    assert bad.status_code == 400 and bad.json()["reason"] == "BadRequest"


def _policy(name: str, protocol: str = "TCP") -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name},
            "spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80,
                                                                "protocol": protocol}]}]}}


def test_crud_and_status_errors(client: httpx.Client) -> None:
    base = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    r = client.post(base, json=_policy("web"))
    assert r.status_code == 201 and r.json()["metadata"]["namespace"] == "default"
    dup = client.post(base, json=_policy("web"))
    assert dup.status_code == 409
    assert dup.json() | {"details": None} == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'networkpolicies.networking.k8s.io "web" already exists',
        "reason": "AlreadyExists", "code": 409, "details": None}
    bad = client.post(base, json=_policy("udp", "ICMP"))
    assert bad.status_code == 422 and bad.json()["reason"] == "Invalid"
    assert bad.json()["details"]["causes"][0]["field"] == "spec.ingress[0].ports[0].protocol"
    missing = client.get(f"{base}/nope")
    assert missing.status_code == 404
    assert missing.json()["message"] == 'networkpolicies.networking.k8s.io "nope" not found'
    patched = client.patch(f"{base}/web", content=json.dumps(
        [{"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": 81}]),
        headers={"Content-Type": "application/json-patch+json"})
    assert patched.status_code == 200
    assert patched.json()["spec"]["ingress"][0]["ports"][0]["port"] == 81
    ssa = client.patch(f"{base}/web", content="spec: {}",
                       headers={"Content-Type": "application/apply-patch+yaml"})
    assert ssa.status_code == 400 and "requires fieldManager" in ssa.json()["message"]
    obj = client.get(f"{base}/web").json()
    obj["spec"]["ingress"] = []
    assert "ingress" not in client.put(f"{base}/web", json=obj).json()["spec"]  # omitempty
    assert client.put(f"{base}/web", json=obj).status_code == 409
    dry = client.delete(f"{base}/web", params={"dryRun": "All"})
    assert dry.status_code == 200 and client.get(f"{base}/web").status_code == 200
    assert client.delete(f"{base}/web").json()["status"] == "Success"
    assert client.get(f"{base}/web").status_code == 404
    assert client.post(base, content=b"{not json").status_code == 400
    assert client.get("/api/v1/namespaces/default/widgets").status_code == 404


def test_watch_streams_changes_after_the_listed_revision(client: httpx.Client) -> None:
    base = "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies"
    listed = client.get(base).json()["metadata"]["resourceVersion"]
    policy = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "w"}, "spec": {"podSelector": {}}}

    def writer() -> None:
        time.sleep(0.3)
        with httpx.Client(base_url=str(client.base_url), timeout=5) as other:
            other.post(base, json=policy)
            other.delete(f"{base}/w")

    threading.Thread(target=writer).start()
    seen = []
    with client.stream("GET", base, params={"watch": "true", "resourceVersion": listed}) as r:
        assert r.headers["transfer-encoding"] == "chunked"
        for line in r.iter_lines():
            event = json.loads(line)
            seen.append((event["type"], event["object"]["metadata"]["name"]))
            if len(seen) == 2:
                break
    assert seen == [("ADDED", "w"), ("DELETED", "w")]


def test_scale_subresource(client: httpx.Client) -> None:
    url = "/apis/apps/v1/namespaces/default/deployments/adservice/scale"
    assert client.get(url).json()["spec"]["replicas"] == 2
    r = client.patch(url, content=json.dumps({"spec": {"replicas": 3}}),
                     headers={"Content-Type": "application/merge-patch+json"})
    assert r.json()["spec"]["replicas"] == 3
    pods = client.get("/api/v1/namespaces/default/pods").json()["items"]
    assert len(pods) == 3


def test_start_stop_idempotent() -> None:
    api = ApiServer(ObjectStore())
    url = api.start()
    assert api.start() == url
    assert httpx.get(f"{url}/version", timeout=5).status_code == 200
    api.stop()
    api.stop()
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{url}/version", timeout=1)


@pytest.mark.parametrize(("seconds", "text"), [
    (5, "5s"), (119, "119s"), (330, "5m30s"), (600, "10m"), (3 * 3600 + 120, "3h2m"),
    (20 * 3600, "20h"), (50 * 3600, "2d2h"), (30 * 86400, "30d"), (3 * 365 * 86400, "3y0d"),
])
def test_human_duration(seconds: int, text: str) -> None:
    assert human_duration(seconds) == text


def test_watch_list_sends_the_state_then_a_bookmark(client: httpx.Client) -> None:
    url = "/apis/apps/v1/namespaces/default/deployments"
    params = {"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
              "resourceVersionMatch": "NotOlderThan", "timeoutSeconds": "1"}
    with client.stream("GET", url, params=params) as r:
        events = [json.loads(line) for line in r.iter_lines()]
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    assert events[0]["object"]["metadata"]["name"] == "adservice"
    assert events[1]["object"]["metadata"]["annotations"] == {
        "k8s.io/initial-events-end": "true"}
