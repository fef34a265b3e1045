"""Attacks by k8s agents' kubectl commands (brief §9): other targets, files, namespaces.

"(was allowed)" marks commands the allowlist let through before this hardening.
"""

from __future__ import annotations

import pytest

from netarena.common.errors import ForbiddenCommand, InvalidAction
from netarena.k8s.actions import parse_kubectl

NS = "shop"
MANIFEST = "kind: NetworkPolicy\nmetadata:\n  name: x\n"

FORBIDDEN = [
    "kubectl get pods --kubeconfig=/root/.kube/config",
    "kubectl get pods --server=http://10.0.0.1",
    "kubectl get pods -s http://10.0.0.1",
    "kubectl get pods -shttp://10.0.0.1",
    "kubectl get pods -ws http://10.0.0.1",
    "kubectl get pods --token=x",
    "kubectl get pods --as=system:admin",
    "kubectl get pods --as-group=system:masters",
    "kubectl get pods --context=prod",
    "kubectl get pods --cluster=prod",
    "kubectl get pods --user=admin",
    "kubectl get pods --certificate-authority=/etc/ssl/ca.pem",
    "kubectl get pods --client-key=/root/key.pem",
    "kubectl get pods --insecure-skip-tls-verify",
    "kubectl get pods --cache-dir=/tmp/x",
    "kubectl get pods -n=other",
    "kubectl get pods --namespace=other",
    "kubectl get pods -nother",
    "kubectl get pods -wnother",  # (was allowed) pflag cluster -w -n other
    "kubectl get pods -A",  # (was allowed) reads every namespace
    "kubectl get pods --all-namespaces",  # (was allowed)
    "kubectl get pods --all-namespaces=true",  # (was allowed)
    "kubectl get pods -wA",  # (was allowed)
    "kubectl label pods --all x=y -A",
    "kubectl get -f /etc/passwd",
    "kubectl get -f http://10.0.0.1/x.yaml",
    "kubectl apply -f http://10.0.0.1/x.yaml",
    "kubectl get --filename=/etc/passwd",
    "kubectl get -wf/etc/passwd",
    "kubectl get -k /",
    "kubectl get pods -o go-template-file=/etc/passwd",
    "kubectl get pods -o jsonpath-file=/etc/passwd",
    "kubectl get pods -o templatefile --template=/etc/passwd",  # (was allowed) read the file
    "kubectl get pods -otemplatefile=/etc/passwd",  # (was allowed)
    "kubectl get pods -o=custom-columns-file=/etc/passwd",
    "kubectl get pods --profile=cpu",  # (was allowed) writes profile.pprof
    "kubectl get pods --profile-output=/tmp/x",
    "kubectl get pods -v=9",  # (was allowed) logs request headers
    "kubectl get pods --v=9",  # (was allowed)
    "kubectl get pods --vmodule=*=9",  # (was allowed)
    "kubectl get pods --log-file=/tmp/x",
    "kubectl get pods --log-file-max-size=1",  # (was allowed)
    "kubectl get secrets",  # (was allowed)
    "kubectl describe secret/x",  # (was allowed)
    "kubectl get --raw /api/v1/namespaces/kube-system/secrets",
    "kubectl plugin list",
    "kubectl kustomize /",
    "kubectl proxy",
    "kubectl cp shop/x:/etc/passwd /tmp/x",
    "kubectl debug x --image=busybox",
    "kubectl exec x -- id",
    "kubectl auth can-i '*' '*'",
    "kubectl config view --raw",
    "kubectl alpha",
    "kubectl krew install x",
    "kubectl foo",
    "kubectl-foo",
    "kubectl delete deployment frontend",
    "kubectl delete pods --all",
    "kubectl delete namespace shop",
    "kubectl delete ns shop",
    "kubectl label ns kube-system x=y",
    "kubectl get pods; rm -rf /",
    "kubectl get pods $(id)",
    "sh -c 'kubectl get pods'",
]


@pytest.mark.parametrize("command", FORBIDDEN)
def test_forbidden_kubectl(command: str) -> None:
    with pytest.raises(ForbiddenCommand):
        parse_kubectl(command, NS, MANIFEST)


@pytest.mark.parametrize(
    "command",
    ["kubectl get pods\x00", "kubectl get pods \ud800", "kubectl get \u200bpods", "k" * 5000],
    ids=["nul", "surrogate", "zero-width", "very-long"],
)
def test_binary_and_long_input_is_invalid(command: str) -> None:
    with pytest.raises(InvalidAction):
        parse_kubectl(command, NS)


@pytest.mark.parametrize(
    "command",
    [
        "kubectl get pods -o wide",
        "kubectl get pods -ojson",
        "kubectl get netpol -o yaml",
        "kubectl get pods -l app=frontend",
        "kubectl get pods -nshop",
        "kubectl get pods -o jsonpath={.items[*].metadata.name}",
        "kubectl patch networkpolicy adservice --type json -p []",
        "kubectl delete networkpolicy adservice",
    ],
)
def test_ordinary_kubectl_still_passes(command: str) -> None:
    argv = parse_kubectl(command, NS).argv
    assert "-A" not in argv and not any(a.startswith("--all-namespaces") for a in argv)


def test_workload_changes_are_not_refused_silently() -> None:
    """Patching a Deployment parses (the episode judges it unsafe), but stays in the namespace."""
    cmd = parse_kubectl("kubectl patch deployment frontend -p {}", NS)
    assert cmd.mutating and cmd.argv[-1] == f"--namespace={NS}"
