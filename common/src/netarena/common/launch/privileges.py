"""What each app's green container needs from the engine: the one table of privileges.

``netarena up`` starts containers with it, ``netarena compose`` writes it into compose
files, and ``docs/agentbeats.md`` ("Route's privileges") explains each entry. Only route
needs anything: its emulator builds network namespaces, remounts ``/proc/sys`` and ``/sys``
in its own mount namespace, opens the namespaces of node processes running as another uid,
and runs agents' commands under bubblewrap (``pivot_root``, which Docker's default seccomp
profile refuses). Measured to be the narrowest set that works; ``docker/entrypoint.sh``
stops at start naming the missing one otherwise. malt and k8s run as a non-root user with
the engine's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Privileges", "privileges"]


@dataclass(frozen=True)
class Privileges:
    """Capabilities and security options one container needs beyond the engine's defaults."""

    cap_add: tuple[str, ...] = ()
    """Linux capabilities to add (``NET_ADMIN``, ...)."""
    security_opt: tuple[str, ...] = ()
    """Security options (``seccomp=unconfined``, ...)."""

    def docker_flags(self) -> list[str]:
        """The ``docker run`` flags, one per item (``--cap-add=NET_ADMIN``, ...)."""
        return ([f"--cap-add={cap}" for cap in self.cap_add]
                + [f"--security-opt={opt}" for opt in self.security_opt])

    def compose(self) -> dict[str, list[str]]:
        """The compose service keys (``cap_add``, ``security_opt``); empty when none."""
        keys: dict[str, list[str]] = {}
        if self.cap_add:
            keys["cap_add"] = list(self.cap_add)
        if self.security_opt:
            keys["security_opt"] = list(self.security_opt)
        return keys


_ROUTE = Privileges(
    cap_add=("NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE"),
    # apparmor=unconfined lets the entrypoint remount /proc/sys where Docker's AppArmor
    # profile forbids mounts (Ubuntu hosts); engines without AppArmor ignore it.
    security_opt=("seccomp=unconfined", "apparmor=unconfined"),
)

_BY_APP = {"route": _ROUTE}


def privileges(app: str) -> Privileges:
    """The privileges the green container of ``app`` needs (none for malt and k8s)."""
    return _BY_APP.get(app, Privileges())
