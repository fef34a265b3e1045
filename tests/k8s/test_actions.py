# ruff: noqa: E501 - one case per line reads as a table
"""The kubectl allowlist: what agents may type, what is refused and why."""

from __future__ import annotations

import json

import pytest
import yaml

from netarena.common.core.errors import ForbiddenCommand, InvalidAction
from netarena.k8s.reply_commands import parse_kubectl

NS = "default"

ALLOWED = [
    ("kubectl get pods", ("get", "pods", "--namespace=default")),
    ("$ kubectl get networkpolicy -o yaml", ("get", "networkpolicy", "-o", "yaml", "--namespace=default")),
    ("kubectl -n default describe netpol adservice", ("-n", "default", "describe", "netpol", "adservice")),
    ("kubectl get svc --namespace=default -o wide", ("get", "svc", "--namespace=default", "-o", "wide")),
    ("kubectl get pods -A", ("get", "pods", "-A")),
    ("kubectl -n kube-system get pods", ("-n", "kube-system", "get", "pods")),
    ("kubectl exec frontend-1 -- nc -zv -w 2 adservice 9555", ("exec", "frontend-1", "--namespace=default", "--", "nc", "-zv", "-w", "2", "adservice", "9555")),
    ("kubectl logs -f frontend-1", ("logs", "-f", "frontend-1", "--namespace=default")),
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
    fed = parse_kubectl("kubectl apply -f -", NS, manifest).stdin  # the checked object, as JSON
    assert fed is not None and [json.loads(fed)] == list(yaml.safe_load_all(manifest))
    with pytest.raises(InvalidAction, match="yaml block"):
        parse_kubectl("kubectl apply -f -", NS)
    with pytest.raises(ForbiddenCommand, match="only create or change NetworkPolicies"):
        parse_kubectl("kubectl apply -f -", NS, "kind: Deployment\nmetadata: {name: x}\n")
    with pytest.raises(ForbiddenCommand, match="namespace"):
        parse_kubectl("kubectl apply -f -", NS, "kind: NetworkPolicy\nmetadata: {name: x, namespace: kube-system}\n")


HOSTILE = [
    ("kubectl delete deploy frontend", "only NetworkPolicies may be deleted"),
    ("kubectl delete pod frontend-abc", "only NetworkPolicies may be deleted"),
    ("kubectl delete networkpolicy,deployment x", "only NetworkPolicies may be deleted"),
    ("kubectl delete networkpolicy/x deployment/frontend service/redis-cart", "deleting deployments"),
    ("kubectl cp x:/etc/passwd /tmp/p", "copies files"),
    ("kubectl port-forward svc/frontend 8080:80", "opens ports"),
    ("kubectl proxy", "opens ports"),
    ("kubectl scale deploy frontend --replicas=0", "changes workloads"),
    ("kubectl label netpol x a=b -n kube-system", "limited to namespace 'default'"),
    ("kubectl -n kube-system patch netpol x -p {}", "limited to namespace 'default'"),
    ("kubectl patch netpol adservice -p {} --all-namespaces", "--all-namespaces"),
    ("kubectl label netpol --all x=y -A", "--all-namespaces"),
    ("kubectl get pods --kubeconfig /root/.kube/config", "--kubeconfig"),
    ("kubectl get pods --server=https://10.0.0.1:6443", "--server"),
    ("kubectl get pods -s https://evil", "-s"),
    ("kubectl get pods --token abc", "--token"),
    ("kubectl get pods --context prod", "--context"),
    ("kubectl get pods --as system:admin", "--as"),
    ("kubectl get $(cat /etc/passwd)", "command substitution"),
    ("kubectl get pods `id`", "command substitution"),
    ("kubectl get pods > /tmp/x", "redirection"),
    ("kubectl apply -f /etc/passwd", "reading files"),
    ("kubectl apply -f https://example.com/x.yaml", "reading files"),
    ("kubectl patch netpol x --patch-file=/dev/zero", "--patch-file"),
    ("kubectl delete --raw /api/v1/namespaces/default/pods/x", "--raw"),
    ("kubectl label ns kube-system x=y", "only namespace 'default'"),
    ("kubectl patch configmap x -p {}", "not part of the task"),
    ("kubectl get pods -o jsonpath-file=/etc/passwd", "template file"),
    ("kubectl cluster-info dump --output-directory=/tmp", "writes files"),
]


@pytest.mark.parametrize(("line", "reason"), HOSTILE, ids=[h[0][:40] for h in HOSTILE])
def test_hostile_commands_are_forbidden_with_a_reason(line: str, reason: str) -> None:
    with pytest.raises(ForbiddenCommand) as info:
        parse_kubectl(line, NS)
    assert reason in str(info.value)


@pytest.mark.parametrize(("line", "reason"), [
    ("", "empty"),
    ("kubectl", "write the command"),
    ("kubectl --namespace", "needs a value"),
    ("kubectl patch", "needs a resource type"),
    ("kubectl get secrets", "Secrets are out of scope"),
    ("kubectl edit netpol x", "interactive"),
    ("kubectl get pods | grep Running", "pipes are not supported"),
    ("kubectl get pods\nkubectl get svc", "exactly one command per turn; this block has 2"),
    ("rm -rf /", "only kubectl commands"),
])
def test_refusals_that_cost_only_the_turn(line: str, reason: str) -> None:
    with pytest.raises(InvalidAction) as info:
        parse_kubectl(line, NS)
    assert not isinstance(info.value, ForbiddenCommand)
    assert reason in str(info.value)
