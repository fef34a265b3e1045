"""The allowlist reads kubectl's flags as the installed kubectl does.

Which flags take a value decides which words are resource arguments: a boolean flag
read as taking a value hides the next word from the check while kubectl acts on it
(``label --show-managed-fields configmap/x netpol/y a=b`` labelled the ConfigMap). So the
tables in ``kubectl_args`` are compared with what the installed kubectl's ``--help``
says, verb by verb, and with how it really splits a command line.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from netarena.k8s.actions import READ_VERBS, WRITE_VERBS
from netarena.k8s.kubectl import find_kubectl
from netarena.k8s.kubectl_args import OPTIONAL_VALUE_FLAGS, parse_args, takes_value

_FLAG = re.compile(r"^\s+(?:-(\w), )?(--[\w-]+)=(.*):$")
_SUBCOMMANDS = {"auth": ("can-i", "whoami"), "config": ("view",), "rollout": ("status", "history"),
                "apply": ("", "set-last-applied", "view-last-applied"), "top": ("pods", "nodes")}
_NOT_VERBS = {"options", "help", "completion"}


def _help_flags(*words: str) -> dict[str, bool]:
    """Flag name → whether it takes a value, from ``kubectl WORDS --help``."""
    out = subprocess.run([find_kubectl(), *words, "--help"], capture_output=True, text=True,
                         timeout=30, check=False).stdout
    assert "Usage:" in out, out[:500]
    flags: dict[str, bool] = {}
    for line in out.splitlines():
        m = _FLAG.match(line)
        if m:
            short, long, default = m.groups()
            value = default not in ("true", "false")
            flags[long] = value
            if short:
                flags["-" + short] = value
    return flags


def _commands() -> list[tuple[str, ...]]:
    out = []
    for verb in sorted((READ_VERBS | WRITE_VERBS) - _NOT_VERBS):
        out += [tuple(w for w in (verb, sub) if w) for sub in _SUBCOMMANDS.get(verb, ("",))]
    return out


@pytest.mark.parametrize("words", _commands(), ids=" ".join)
def test_every_flag_takes_a_value_exactly_when_kubectl_says_so(words: tuple[str, ...]) -> None:
    flags = _help_flags(*words)
    wrong = {name: value for name, value in flags.items()
             if takes_value(name, words[0]) != (value and name not in OPTIONAL_VALUE_FLAGS)}
    assert not wrong, f"flags read wrongly for `kubectl {' '.join(words)}` (name: takes a value)"


def test_global_flags_agree_with_kubectl_options() -> None:
    out = subprocess.run([find_kubectl(), "options"], capture_output=True, text=True,
                         timeout=30, check=False).stdout
    flags = {m.group(2): m.group(3) not in ("true", "false")
             for m in map(_FLAG.match, out.splitlines()) if m}
    assert "--kubeconfig" in flags
    wrong = {name for name, value in flags.items() if takes_value(name, "get") != value}
    assert not wrong, wrong


@pytest.mark.parametrize(("argv", "positional"), [
    (["label", "netpol/x", "--", "configmap/y", "a=b"], ["label", "netpol/x", "configmap/y",
                                                        "a=b"]),
    (["label", "--show-managed-fields", "configmap/y", "netpol/x", "a=b"],
     ["label", "configmap/y", "netpol/x", "a=b"]),
    (["delete", "--dry-run", "server", "netpol", "x"], ["delete", "server", "netpol", "x"]),
    (["delete", "--cascade", "orphan", "netpol", "x"], ["delete", "orphan", "netpol", "x"]),
    (["get", "--output-watch-events", "pods"], ["get", "pods"]),
    (["patch", "netpol", "x", "--patch_file", "/etc/shadow"], ["patch", "netpol", "x"]),
    (["exec", "pod", "--", "nc", "-z", "a", "1"], ["exec", "pod"]),
])
def test_positionals_are_the_words_kubectl_acts_on(argv: list[str], positional: list[str]
                                                   ) -> None:
    assert parse_args(argv).positional == positional
