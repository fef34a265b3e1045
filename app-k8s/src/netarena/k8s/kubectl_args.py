"""kubectl's command-line grammar, as much as an allowlist needs to read it exactly.

pflag rules: ``--flag=value`` or ``--flag value`` for flags that take a value; short
flags cluster (``-wA``, ``-ojson``, ``-nkube-system``); flags may appear anywhere, before
or after the verb; ``_`` in a long flag's name means ``-`` (kubectl normalises
``--patch_file`` to ``--patch-file``); ``--`` ends kubectl's flags: what follows is the
command ``exec`` runs in the container, and for every other verb more arguments (cobra
passes them on: ``label netpol/x -- configmap/y a=b`` labels both). Flags with an
optional value (``--dry-run``, ``--cascade``, ``--validate``) never take the next word.
Which flags take a value, and which are booleans only for some verbs (``logs -f``
follows, elsewhere ``-f`` is a file), decides which words are resource arguments, so
the tables here follow kubectl's own definitions (a test compares them with the installed
kubectl's ``--help``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netarena.common.core.errors import InvalidAction

__all__ = ["ParsedArgs", "parse_args", "resource_kind", "takes_value", "CLUSTER_SCOPED",
           "WORKLOAD_KINDS", "OPTIONAL_VALUE_FLAGS"]

_VALUE_FLAGS = frozenset({
    # global
    "-n", "--namespace", "-s", "--server", "--context", "--cluster", "--user", "--token",
    "--kubeconfig", "--cache-dir", "--request-timeout", "-v", "--v", "--vmodule", "--as",
    "--as-group", "--as-uid", "--certificate-authority", "--client-certificate",
    "--client-key", "--tls-server-name", "--profile", "--profile-output", "--username",
    "--password", "--log-file", "--log-dir", "--log-file-max-size", "--log-flush-frequency",
    "--log-backtrace-at", "--stderrthreshold", "--kuberc", "--as-user-extra", "--proxy-url",
    # selection and output
    "-o", "--output", "-l", "--selector", "--field-selector", "--sort-by", "-L",
    "--label-columns", "--template", "--chunk-size", "--api-group", "--api-version",
    "--output-directory", "--categories", "--verbs", "--types", "--max-depth", "--revision",
    "--concurrency",
    # writes
    "-p", "--patch", "--patch-file", "--type", "-f", "--filename", "-k", "--kustomize",
    "--field-manager", "--subresource", "--grace-period", "--timeout", "--resource-version",
    "--prune-allowlist", "--prune-whitelist", "--applyset", "--for", "--raw",
    # exec, logs, debug, run
    "-c", "--container", "--since", "--since-time", "--tail", "--limit-bytes",
    "--max-log-requests", "--pod-running-timeout", "--image", "--target", "--env",
    "--port", "--replicas", "--image-pull-policy", "--restart", "--copy-to",
    "--from-file", "--from-env-file", "--from-literal", "--env-file", "--overrides",
    "--custom-profile",
})
"""Flags that consume the next word when written without ``=``."""
OPTIONAL_VALUE_FLAGS = frozenset({"--dry-run", "--cascade", "--validate"})
"""Flags with a default for a bare ``--flag`` (pflag's NoOptDefVal): a value needs ``=``."""
_REMOTE_VERBS = frozenset({"exec", "run", "debug"})
"""Verbs for which the words after ``--`` are a command for the container."""
_BOOL_FOR_VERB = {
    "logs": frozenset({"-f", "-p"}),  # --follow, --previous
    "config": frozenset({"--raw"}),  # config view --raw
}
_SHORT_VALUE_LETTERS = "noLlpcfksv"
"""Short flags that take a value: in a cluster the rest of the word is that value."""

_KINDS: dict[str, tuple[str, ...]] = {
    "networkpolicies": ("networkpolicy", "netpol", "netpols"),
    "pods": ("pod", "po"),
    "deployments": ("deployment", "deploy"),
    "replicasets": ("replicaset", "rs"),
    "statefulsets": ("statefulset", "sts"),
    "daemonsets": ("daemonset", "ds"),
    "jobs": ("job",),
    "cronjobs": ("cronjob", "cj"),
    "services": ("service", "svc"),
    "endpoints": ("endpoint", "ep"),
    "endpointslices": ("endpointslice",),
    "ingresses": ("ingress", "ing"),
    "ingressclasses": ("ingressclass",),
    "configmaps": ("configmap", "cm"),
    "secrets": ("secret",),
    "serviceaccounts": ("serviceaccount", "sa"),
    "namespaces": ("namespace", "ns"),
    "nodes": ("node", "no"),
    "events": ("event", "ev"),
    "roles": ("role",),
    "rolebindings": ("rolebinding",),
    "clusterroles": ("clusterrole",),
    "clusterrolebindings": ("clusterrolebinding",),
    "persistentvolumeclaims": ("persistentvolumeclaim", "pvc"),
    "persistentvolumes": ("persistentvolume", "pv"),
    "horizontalpodautoscalers": ("horizontalpodautoscaler", "hpa"),
    "poddisruptionbudgets": ("poddisruptionbudget", "pdb"),
    "limitranges": ("limitrange", "limits"),
    "resourcequotas": ("resourcequota", "quota"),
    "storageclasses": ("storageclass", "sc"),
    "customresourcedefinitions": ("customresourcedefinition", "crd", "crds"),
    "priorityclasses": ("priorityclass", "pc"),
    "leases": ("lease",),
    "componentstatuses": ("componentstatus", "cs"),
    "all": (),
}
_BY_ALIAS = {alias: kind for kind, names in _KINDS.items() for alias in (kind, *names)}
CLUSTER_SCOPED = frozenset({"namespaces", "nodes", "clusterroles", "clusterrolebindings",
                            "persistentvolumes", "storageclasses", "customresourcedefinitions",
                            "priorityclasses", "ingressclasses", "componentstatuses"})
"""Kinds that live outside every namespace."""
WORKLOAD_KINDS = frozenset({"pods", "deployments", "replicasets", "statefulsets",
                            "daemonsets", "jobs", "cronjobs", "services", "endpoints",
                            "endpointslices"})
"""Kinds whose deletion takes the application down."""


def resource_kind(text: str) -> str | None:
    """Canonical plural of a kubectl resource word (``netpol``, ``deployments.apps``).

    Returns ``None`` for a word kubectl would not know as a built-in type.
    """
    word = text.lower()
    if word in _BY_ALIAS:
        return _BY_ALIAS[word]
    base = word.split(".", 1)[0]
    return _BY_ALIAS.get(base) if "." in word else None


@dataclass
class ParsedArgs:
    """A kubectl argv split into its parts."""

    positional: list[str] = field(default_factory=list)
    """Words that are not flags, verb first (``patch``, ``networkpolicy``, ``x``)."""
    flags: list[tuple[str, str | None]] = field(default_factory=list)
    """Every flag in order, as ``(name, value)``; a boolean without ``=`` has ``None``."""
    remote: list[str] = field(default_factory=list)
    """Words after ``--`` (the command ``exec``/``debug``/``run`` passes on)."""

    def values(self, *names: str) -> list[str | None]:
        """Values of every occurrence of any of ``names``."""
        return [v for n, v in self.flags if n in names]

    def has(self, *names: str) -> bool:
        """Whether any of ``names`` was given (``--flag=false`` counts as not given)."""
        return any(n in names and (v or "true").lower() != "false" for n, v in self.flags)


def _expand_cluster(token: str) -> list[str]:
    """``-wA`` → ``-w -A``; ``-wnx`` → ``-w -nx`` (pflag: a value letter takes the rest)."""
    if token.startswith("--") or len(token) <= 2 or token[2] == "=":
        return [token]
    out = []
    for i, letter in enumerate(token[1:], start=1):
        if letter in _SHORT_VALUE_LETTERS:
            out.append("-" + token[i:])
            break
        out.append("-" + letter)
    return out


def takes_value(name: str, verb: str) -> bool:
    """Whether flag ``name`` (normalised) consumes the next word for ``verb``."""
    return name in _VALUE_FLAGS and name not in _BOOL_FOR_VERB.get(verb, frozenset())


def _flag_name(token: str) -> str:
    """A long flag's name as kubectl normalises it (``--patch_file`` is ``--patch-file``)."""
    name = token.split("=", 1)[0]
    return "--" + name[2:].replace("_", "-")


def _verb_of(argv: list[str]) -> str | None:
    """The first word that is neither a flag nor a global flag's value."""
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return None
        if not tok.startswith("-") or tok == "-":
            return tok
        name = _flag_name(tok) if tok.startswith("--") else tok[:2]
        takes_next = "=" not in tok and len(tok) == len(name) and name in _VALUE_FLAGS
        i += 2 if takes_next else 1
    return None


def parse_args(argv: list[str]) -> ParsedArgs:
    """Split the words after ``kubectl`` into positionals, flags and the remote command.

    Raises:
        InvalidAction: A value flag is last with no value.
    """
    verb = _verb_of(argv) or ""
    out = ParsedArgs()
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        i += 1
        if tok == "--":
            if verb in _REMOTE_VERBS:
                out.remote = tokens[i:]
            else:
                out.positional.extend(tokens[i:])
            break
        if not tok.startswith("-") or tok == "-":
            out.positional.append(tok)
            continue
        for flag in _expand_cluster(tok):
            if flag.startswith("--"):
                _, eq, value = flag.partition("=")
                name = _flag_name(flag)
                if eq:
                    out.flags.append((name, value))
                    continue
            else:
                name, rest = flag[:2], flag[2:]
                if rest:
                    out.flags.append((name, rest.removeprefix("=")))
                    continue
            if takes_value(name, verb):
                if i >= len(tokens):
                    raise InvalidAction(f"flag {name} needs a value")
                out.flags.append((name, tokens[i]))
                i += 1
            else:
                out.flags.append((name, None))
    return out
