"""Run untrusted agent code behind a kernel-enforced boundary, in warm forking workers.

``SandboxPool`` runs each answer in a fresh fork of a warm worker that holds the app's
preloaded state. The child confines itself before the agent's code runs: rlimits, an empty
environment, only its answer pipe open, a seccomp allowlist of system calls, its own
Landlock domain (where the kernel has Landlock), and, as root, a network namespace, a chroot
and a uid of its own; an audit hook gives clear messages on top. ``host_layers`` says which
of these this host grants. See docs/sandbox.md for each mode's guarantees.
"""

from netarena.common.sandbox.host import HostLayers, host_layers
from netarena.common.sandbox.pool import KEEP_WARM, SandboxPool, shared_pool
from netarena.common.sandbox.spec import SAFE_STDLIB, SandboxLimits, SandboxResult, SandboxSpec

__all__ = [
    "KEEP_WARM",
    "SAFE_STDLIB",
    "HostLayers",
    "SandboxLimits",
    "SandboxPool",
    "SandboxResult",
    "SandboxSpec",
    "host_layers",
    "shared_pool",
]
