"""The kubectl allowlist: which commands an agent may run, forced into its namespace.

Parsing is ``netarena.common.commands.split_command`` (shlex, no shell syntax); on top of
it a command must be ``kubectl``, its verb must be allowlisted, changes may only touch
the episode's namespace, deletes only NetworkPolicies, and no flag may point kubectl at
another cluster, identity, file or the network. Every rejection says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import yaml

from netarena.common.commands import split_command
from netarena.common.errors import ForbiddenCommand, InvalidAction

__all__ = ["KubectlCommand", "ForbiddenCommand", "parse_kubectl", "READ_VERBS", "WRITE_VERBS"]

READ_VERBS = frozenset({"get", "describe", "explain", "api-resources", "api-versions",
                        "version", "cluster-info"})
"""Verbs that only read."""
WRITE_VERBS = frozenset({"patch", "label", "annotate", "apply", "delete"})
"""Verbs that change objects (checked further by resource type)."""

_FORBIDDEN_FLAGS = {
    "--kubeconfig": "kubectl's configuration is fixed",
    "--server": "the API server is fixed", "-s": "the API server is fixed",
    "--token": "credentials are fixed", "--context": "the context is fixed",
    "--cluster": "the cluster is fixed", "--user": "the user is fixed",
    "--username": "credentials are fixed", "--password": "credentials are fixed",
    "--as": "impersonation is not allowed", "--as-group": "impersonation is not allowed",
    "--as-uid": "impersonation is not allowed",
    "--certificate-authority": "TLS settings are fixed",
    "--client-certificate": "TLS settings are fixed", "--client-key": "TLS settings are fixed",
    "--insecure-skip-tls-verify": "TLS settings are fixed",
    "--tls-server-name": "TLS settings are fixed",
    "--cache-dir": "no filesystem access", "--profile-output": "no filesystem access",
    "--log-file": "no filesystem access", "--log-dir": "no filesystem access",
    "--output-directory": "no filesystem access", "-k": "no filesystem access",
    "--kustomize": "no filesystem access", "--raw": "raw API paths are not allowed",
    "-R": "no filesystem access", "--recursive": "no filesystem access",
    "--profile": "no filesystem access (it writes a profile file)",
    "-v": "verbose logs may print credentials", "--v": "verbose logs may print credentials",
    "--vmodule": "verbose logs may print credentials",
}
_SHORT_VALUE_LETTERS = "noLlpcfksv"
"""kubectl short flags that take a value (the rest of a ``-xyz`` cluster is that value)."""
_SECRET_KINDS = ("secret", "secrets")
_ALIASES = {
    "networkpolicies": ("networkpolicy", "networkpolicies", "netpol", "netpols",
                        "networkpolicy.networking.k8s.io", "networkpolicies.networking.k8s.io"),
    "pods": ("pod", "pods", "po"),
    "deployments": ("deployment", "deployments", "deploy", "deployment.apps", "deployments.apps"),
    "services": ("service", "services", "svc"),
    "namespaces": ("namespace", "namespaces", "ns"),
}
_CANONICAL = {alias: kind for kind, names in _ALIASES.items() for alias in names}
_VALUE_FLAGS = {"-n", "--namespace", "-o", "--output", "-l", "--selector", "-p", "--patch",
                "--type", "--field-selector", "--sort-by", "-L", "--label-columns",
                "--template", "-c", "--container", "-f", "--filename", "--field-manager",
                "--subresource", "--api-group", "--chunk-size", "--show-kind"}


@dataclass(frozen=True)
class KubectlCommand:
    """A validated command, ready for ``Kubectl.run``."""

    argv: tuple[str, ...]
    """Arguments after ``kubectl``, with the namespace forced."""
    verb: str
    mutating: bool
    """Whether the verb can change objects."""
    stdin: str | None = None
    """Manifest text for ``apply -f -`` (from a yaml block of the reply)."""


def _flag_name(token: str) -> str:
    if token.startswith("--"):
        return token.split("=", 1)[0]
    return token[:2] if len(token) > 2 and token[1] != "-" else token


def _expand_cluster(token: str) -> list[str]:
    """``-wA`` → ``["-w", "-A"]``, ``-wnx`` → ``["-w", "-nx"]`` (how pflag reads clusters)."""
    if token.startswith("--") or len(token) <= 2 or token[2] == "=":
        return [token]
    flags = []
    for i, letter in enumerate(token[1:], start=1):
        if letter in _SHORT_VALUE_LETTERS:
            flags.append("-" + token[i:])
            break
        flags.append("-" + letter)
    return flags


def _check_flags(args: list[str], namespace: str, mutating: bool) -> list[str]:
    """Validate flags; return the positional arguments (resource type/names, label pairs)."""
    positional: list[str] = []
    args = [tok for arg in args for tok in (_expand_cluster(arg) if arg.startswith("-") else [arg])]
    i = 0
    while i < len(args):
        tok = args[i]
        if not tok.startswith("-") or tok == "-":
            positional.append(tok)
            i += 1
            continue
        name = _flag_name(tok)
        if name.startswith("--log"):
            raise ForbiddenCommand(f"flag {name} is not allowed: no filesystem access")
        if name in _FORBIDDEN_FLAGS:
            raise ForbiddenCommand(f"flag {name} is not allowed: {_FORBIDDEN_FLAGS[name]}")
        value = None
        if not tok.startswith("--") and len(tok) > 2:
            value = tok[2:].removeprefix("=")  # pflag: -ojson, -o=json (not split at a later =)
        elif "=" in tok:
            value = tok.split("=", 1)[1]
        elif name in _VALUE_FLAGS:
            if i + 1 >= len(args):
                raise InvalidAction(f"flag {name} needs a value")
            value = args[i + 1]
            i += 1
        i += 1
        if name in ("-n", "--namespace") and value != namespace:
            raise ForbiddenCommand(f"only namespace {namespace!r} may be used, not {value!r}")
        if name in ("-A", "--all-namespaces") and (value or "true").lower() != "false":
            raise ForbiddenCommand(
                f"--all-namespaces is not allowed: only namespace {namespace!r} may be used")
        if name in ("-f", "--filename") and value != "-":
            raise ForbiddenCommand("reading files or URLs is not allowed; use `apply -f -` with "
                                   "the "
                                "manifest in a ```yaml block of the same reply")
        if name in ("-o", "--output") and value and "file" in value.split("=", 1)[0].lower():
            raise ForbiddenCommand("output templates from files are not allowed")
    return positional


def _check_target(verb: str, positional: list[str], namespace: str) -> None:
    if verb == "apply":
        return
    if not positional:
        raise InvalidAction(f"`kubectl {verb}` needs a resource type")
    first = positional[0]
    kind_text, _, name = first.partition("/")
    kinds = [_CANONICAL.get(k.lower()) for k in kind_text.split(",")]
    if any(k is None for k in kinds):
        allowed = "networkpolicies" if verb == "delete" else ", ".join(sorted(_ALIASES))
        raise ForbiddenCommand(f"`kubectl {verb}` may only target {allowed}, not {kind_text!r}")
    if verb == "delete" and kinds != ["networkpolicies"]:
        raise ForbiddenCommand(
            "deleting workloads is forbidden: only NetworkPolicies may be deleted")
    if "namespaces" in kinds:
        names = [name] if name else positional[1:2]
        if names != [namespace]:
            raise ForbiddenCommand(f"only namespace {namespace!r} may be changed")


def _check_manifest(stdin: str | None, namespace: str) -> None:
    if stdin is None:
        raise InvalidAction("`kubectl apply -f -` needs the manifest in a ```yaml block of the "
                            "same reply")
    try:
        docs = [d for d in yaml.safe_load_all(stdin) if d is not None]
    except yaml.YAMLError as exc:
        raise InvalidAction(f"the yaml block does not parse: {exc}") from exc
    if not docs:
        raise InvalidAction("the yaml block holds no object")
    for doc in docs:
        if not isinstance(doc, dict) or doc.get("kind") != "NetworkPolicy":
            raise ForbiddenCommand("`kubectl apply` may only create or update NetworkPolicies")
        ns = (doc.get("metadata") or {}).get("namespace")
        if ns not in (None, namespace):
            raise ForbiddenCommand(f"only namespace {namespace!r} may be used, not {ns!r}")


def parse_kubectl(line: str, namespace: str, stdin: str | None = None) -> KubectlCommand:
    """Validate one agent command and force it into ``namespace``.

    Args:
        line: The command as written (a leading ``$ `` is tolerated).
        namespace: The episode's namespace.
        stdin: Manifest for ``apply -f -``, if the reply carried one.

    Raises:
        InvalidAction: The command is not allowed; the message says why.
    """
    line = line.strip()
    if line.startswith("$ "):
        line = line[2:]
    try:
        argv = split_command(line)
    except InvalidAction as exc:
        if str(exc).startswith("shell syntax"):
            raise ForbiddenCommand(str(exc)) from exc
        raise
    if argv[0] != "kubectl":
        raise ForbiddenCommand(f"only kubectl commands are allowed, not {argv[0]!r}")
    args = argv[1:]
    while args and args[0] in ("-n", "--namespace") and len(args) > 1:
        if args[1] != namespace:
            raise ForbiddenCommand(f"only namespace {namespace!r} may be used, not {args[1]!r}")
        args = args[2:]
    if not args or args[0].startswith("-"):
        raise InvalidAction("write the verb right after `kubectl` (e.g. `kubectl get pods`)")
    verb = args[0]
    if verb not in READ_VERBS | WRITE_VERBS:
        raise ForbiddenCommand(f"verb {verb!r} is not allowed; use one of "
                            f"{', '.join(sorted(READ_VERBS | WRITE_VERBS))}")
    mutating = verb in WRITE_VERBS
    positional = _check_flags(args[1:], namespace, mutating)
    if positional and any(k.lower() in _SECRET_KINDS
                          for k in positional[0].partition("/")[0].split(",")):
        raise ForbiddenCommand("Secrets are not part of the task and may not be read")
    if verb == "cluster-info" and positional:
        raise ForbiddenCommand("only plain `kubectl cluster-info` is allowed")
    if mutating:
        _check_target(verb, positional, namespace)
    if verb == "apply":
        _check_manifest(stdin, namespace)
    rest = list(args[1:])
    forced = [verb, *rest]
    if not any(_flag_name(a) in ("-n", "--namespace", "-A", "--all-namespaces") for a in rest):
        forced.append(f"--namespace={namespace}")
    return KubectlCommand(tuple(forced), verb, mutating, stdin if verb == "apply" else None)
