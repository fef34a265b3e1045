"""What each app's green container needs from the engine: the one table of privileges.

``netarena up`` starts containers with it, ``netarena compose`` writes it into compose
files, and ``docs/agentbeats.md`` ("Route's privileges") explains each entry. Only route
needs anything: its emulator builds network namespaces, remounts ``/proc/sys`` and ``/sys``
in its own mount namespace, starts each node as another uid in a user namespace of its own,
opens and cleans up those nodes' namespaces and processes, and runs agents' commands under
bubblewrap (``pivot_root``, which Docker's default seccomp profile refuses). So route's
container drops every capability and adds back exactly the nine it was measured to need,
and runs under a seccomp profile of its own (``netarena.common.launch.seccomp``);
``docker/entrypoint.sh`` stops at start naming the missing one otherwise. malt and k8s run
as a non-root user with the engine's defaults.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from netarena.common.launch.seccomp import PROFILE_FILE, route_profile

__all__ = ["Privileges", "privileges", "ROUTE_CAPABILITIES"]

ROUTE_CAPABILITIES = ("CHOWN", "DAC_OVERRIDE", "KILL", "NET_ADMIN", "NET_RAW", "SETGID",
                      "SETUID", "SYS_ADMIN", "SYS_PTRACE")
"""Route's capabilities, each measured to be needed (docs/agentbeats.md): CHOWN (each node's
files), DAC_OVERRIDE (another uid's ``uid_map``), KILL (ending nodes' processes, another
uid's), NET_ADMIN and NET_RAW (links, addresses, routes, rules; probes), SETGID and SETUID
(nodes run as another uid), SYS_ADMIN (namespaces, mounts), SYS_PTRACE (opening another
uid's ``/proc/N/ns``). Of Docker's default set it drops FOWNER, FSETID, MKNOD, SETFCAP,
SETPCAP, NET_BIND_SERVICE, SYS_CHROOT and AUDIT_WRITE."""


@dataclass(frozen=True)
class Privileges:
    """Capabilities and security options one container needs beyond the engine's defaults."""

    cap_add: tuple[str, ...] = ()
    """Linux capabilities to add (``NET_ADMIN``, ...)."""
    cap_drop: tuple[str, ...] = ()
    """Linux capabilities to drop first (``ALL``: only ``cap_add`` remain)."""
    security_opt: tuple[str, ...] = ()
    """Security options besides seccomp (``apparmor=unconfined``, ...)."""
    seccomp: dict[str, Any] | None = None
    """The container's own seccomp profile (``None``: the engine's default)."""

    def security_options(self, seccomp_file: str = PROFILE_FILE) -> list[str]:
        """The security options, the profile given as a file (``docker run``, compose)."""
        head = [f"seccomp={seccomp_file}"] if self.seccomp is not None else []
        return head + list(self.security_opt)

    def engine_security_options(self) -> list[str]:
        """The security options as the engine's API takes them: the profile inline."""
        head = ([f"seccomp={json.dumps(self.seccomp, separators=(',', ':'))}"]
                if self.seccomp is not None else [])
        return head + list(self.security_opt)

    def docker_flags(self, seccomp_file: str = PROFILE_FILE) -> list[str]:
        """The ``docker run`` flags, one per item (``--cap-drop=ALL``, ...)."""
        return ([f"--cap-drop={cap}" for cap in self.cap_drop]
                + [f"--cap-add={cap}" for cap in self.cap_add]
                + [f"--security-opt={opt}" for opt in self.security_options(seccomp_file)])

    def compose(self, seccomp_file: str = PROFILE_FILE) -> dict[str, list[str]]:
        """The compose service keys (``cap_drop``, ``cap_add``, ``security_opt``)."""
        keys: dict[str, list[str]] = {}
        if self.cap_drop:
            keys["cap_drop"] = list(self.cap_drop)
        if self.cap_add:
            keys["cap_add"] = list(self.cap_add)
        if self.security_options(seccomp_file):
            keys["security_opt"] = self.security_options(seccomp_file)
        return keys


_ROUTE = Privileges(
    cap_add=ROUTE_CAPABILITIES,
    cap_drop=("ALL",),
    # apparmor=unconfined lets the entrypoint remount /proc/sys and /sys where Docker's
    # AppArmor profile forbids mounts (Ubuntu hosts); engines without AppArmor ignore it.
    security_opt=("apparmor=unconfined",),
    seccomp=route_profile(),
)

_BY_APP = {"route": _ROUTE}


def privileges(app: str) -> Privileges:
    """The privileges the green container of ``app`` needs (none for malt and k8s)."""
    return _BY_APP.get(app, Privileges())
