# ruff: noqa: E501 - one case per line reads as a table
"""The kubectl allowlist: what agents may type, what is refused and why."""

from __future__ import annotations

import pytest

from netarena.common.errors import ForbiddenCommand, InvalidAction
from netarena.k8s.actions import parse_kubectl

NS = "default"

ALLOWED = [
    ("kubectl get pods", ("get", "pods", "--namespace=default")),
    ("$ kubectl get networkpolicy -o yaml", ("get", "networkpolicy", "-o", "yaml", "--namespace=default")),
    ("kubectl -n default describe netpol adservice", ("describe", "netpol", "adservice", "--namespace=default")),
    ("kubectl get svc --namespace=default -o wide", ("get", "svc", "--namespace=default", "-o", "wide")),
    ("kubectl get pods -A=false", ("get", "pods", "-A=false")),  # -A itself: tests/security
    ("kubectl delete networkpolicy adservice", ("delete", "networkpolicy", "adservice", "--namespace=default")),
    ("kubectl label networkpolicy adservice owner=me", ("label", "networkpolicy", "adservice", "owner=me", "--namespace=default")),
    ("kubectl annotate pod x note=1", ("annotate", "pod", "x", "note=1", "--namespace=default")),
    ("kubectl api-resources", ("api-resources", "--namespace=default")),
]


@pytest.mark.parametrize(("line", "argv"), ALLOWED)
def test_allowed_commands_are_forced_into_the_namespace(line: str, argv: tuple[str, ...]) -> None:
    cmd = parse_kubectl(line, NS)
    assert cmd.argv == argv


def test_patch_json_survives_quoting() -> None:
    line = ("kubectl patch networkpolicy adservice --type json -p "
            "'[{\"op\": \"replace\", \"path\": \"/spec/ingress/0/ports/0/port\", \"value\": 9555}]'")
    cmd = parse_kubectl(line, NS)
    assert cmd.mutating and cmd.argv[-2] == '[{"op": "replace", "path": "/spec/ingress/0/ports/0/port", "value": 9555}]'


def test_apply_needs_a_networkpolicy_manifest() -> None:
    manifest = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: x\nspec: {}\n"
    assert parse_kubectl("kubectl apply -f -", NS, manifest).stdin == manifest
    with pytest.raises(InvalidAction, match="yaml block"):
        parse_kubectl("kubectl apply -f -", NS)
    with pytest.raises(ForbiddenCommand, match="only create or update NetworkPolicies"):
        parse_kubectl("kubectl apply -f -", NS, "kind: Deployment\nmetadata: {name: x}\n")
    with pytest.raises(ForbiddenCommand, match="namespace"):
        parse_kubectl("kubectl apply -f -", NS, "kind: NetworkPolicy\nmetadata: {name: x, namespace: kube-system}\n")


HOSTILE = [
    ("kubectl delete deploy frontend", "deleting workloads"),
    ("kubectl delete pod frontend-abc", "deleting workloads"),
    ("kubectl delete networkpolicy,deployment x", "deleting workloads"),
    ("kubectl exec -it frontend -- sh", "verb 'exec' is not allowed"),
    ("kubectl cp x:/etc/passwd /tmp/p", "verb 'cp' is not allowed"),
    ("kubectl port-forward svc/frontend 8080:80", "not allowed"),
    ("kubectl proxy", "not allowed"),
    ("kubectl run x --image=busybox", "not allowed"),
    ("kubectl debug node/x", "not allowed"),
    ("kubectl attach frontend", "not allowed"),
    ("kubectl scale deploy frontend --replicas=0", "not allowed"),
    ("kubectl get pods -n kube-system", "only namespace 'default'"),
    ("kubectl -n kube-system get pods", "only namespace 'default'"),
    ("kubectl get pods --namespace=kube-system", "only namespace 'default'"),
    ("kubectl patch netpol adservice -p {} --all-namespaces", "--all-namespaces"),
    ("kubectl label netpol --all x=y -A", "--all-namespaces"),
    ("kubectl get pods --kubeconfig /root/.kube/config", "--kubeconfig"),
    ("kubectl get pods --server=https://10.0.0.1:6443", "--server"),
    ("kubectl get pods -s https://evil", "-s"),
    ("kubectl get pods --token abc", "--token"),
    ("kubectl get pods --context prod", "--context"),
    ("kubectl get pods --cluster prod", "--cluster"),
    ("kubectl get pods --user admin", "--user"),
    ("kubectl get pods --as system:admin", "impersonation"),
    ("kubectl get pods; rm -rf /", "shell syntax"),
    ("kubectl get $(cat /etc/passwd)", "shell syntax"),
    ("kubectl get pods `id`", "shell syntax"),
    ("kubectl get pods | sh", "shell syntax"),
    ("kubectl get pods && reboot", "shell syntax"),
    ("kubectl get pods > /tmp/x", "shell syntax"),
    ("rm -rf /", "only kubectl"),
    ("bash -c 'kubectl get pods'", "only kubectl"),
    ("kubectl apply -f /etc/passwd", "reading files"),
    ("kubectl apply -f https://example.com/x.yaml", "reading files"),
    ("kubectl get pods --raw /api", "--raw"),
    ("kubectl label ns kube-system x=y", "only namespace 'default'"),
    ("kubectl patch configmap x -p {}", "may only target"),
    ("kubectl get pods -o jsonpath-file=/etc/passwd", "files"),
    ("kubectl cluster-info dump --output-directory=/tmp", "no filesystem access"),
]


@pytest.mark.parametrize(("line", "reason"), HOSTILE, ids=[h[0][:40] for h in HOSTILE])
def test_hostile_commands_are_forbidden_with_a_reason(line: str, reason: str) -> None:
    with pytest.raises(ForbiddenCommand) as info:
        parse_kubectl(line, NS)
    assert reason in str(info.value)


@pytest.mark.parametrize("line", ["", "kubectl", "kubectl --namespace", "kubectl patch"])
def test_malformed_commands_are_invalid_but_not_forbidden(line: str) -> None:
    with pytest.raises(InvalidAction) as info:
        parse_kubectl(line, NS)
    assert not isinstance(info.value, ForbiddenCommand)
