"""Start-up checks: which sandbox layers this host and process can give agent code.

A pool asks once per process and says what is missing instead of failing query after query:
as root without ``CAP_SYS_ADMIN`` (a default Docker container, say) there is no network
namespace, and the pool runs with seccomp and Landlock only; without Landlock the
filesystem barrier is seccomp's alone. Without seccomp there is no kernel boundary at all, so
no answer runs (``SandboxError`` with the reason).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import subprocess
import sys

from pydantic import BaseModel, ConfigDict

from netarena.common.core.notices import log_once_per_session
from netarena.common.sandbox import kernel

__all__ = ["HostLayers", "host_layers", "log_start_up_checks", "python_has_bytearray_uaf"]

log = logging.getLogger(__name__)

_CAP_SETGID, _CAP_SETUID, _CAP_SYS_CHROOT, _CAP_SYS_ADMIN = 6, 7, 18, 21


class HostLayers(BaseModel):
    """What this process can use to confine agent code (probed once, see ``host_layers``)."""

    model_config = ConfigDict(frozen=True)

    seccomp: str | None
    """Why seccomp cannot be used (missing pyseccomp or libseccomp), or ``None`` if it can."""
    landlock_abi: int
    """The kernel's Landlock ABI version; 0 when it has none."""
    root: bool
    """Running as uid 0."""
    netns: bool
    """A network namespace can be created (``unshare --net`` works: root and CAP_SYS_ADMIN)."""
    chroot: bool
    """``CAP_SYS_CHROOT`` is effective."""
    setuid: bool
    """``CAP_SETUID`` and ``CAP_SETGID`` are effective (a uid per answer)."""

    def missing(self, privileged: bool) -> list[str]:
        """One sentence per layer this host lacks for the given mode, saying what remains."""
        notes = []
        if self.landlock_abi < 1:
            notes.append(
                "no Landlock in this kernel: the filesystem barrier is seccomp's alone"
            )
        elif self.landlock_abi < 6:
            notes.append(
                f"Landlock ABI {self.landlock_abi} (< 6) cannot scope signals: answers are kept "
                "apart by seccomp (kill only itself)"
                + (" and a uid per answer" if privileged and self.setuid else "")
            )
        if privileged and not self.netns:
            notes.append(
                "no CAP_SYS_ADMIN (or unshare refused): no network namespace, running with "
                "seccomp and Landlock only (sockets are refused by seccomp)"
            )
        if privileged and not self.chroot:
            notes.append("no CAP_SYS_CHROOT: no chroot, running with seccomp and Landlock only")
        if privileged and not self.setuid:
            notes.append(
                "no CAP_SETUID/CAP_SETGID: answers keep the evaluator's uid, kept apart by "
                "seccomp and Landlock only"
            )
        if python_has_bytearray_uaf():
            notes.append(
                f"CPython {sys.version.split()[0]} has the bytearray search use-after-free "
                "(gh-142560, fixed in 3.13.12 and 3.14.3): a crash it causes stays inside "
                "the kernel layers"
            )
        return notes


def python_has_bytearray_uaf() -> bool:
    """Whether this interpreter predates the gh-142560 fix (3.13.12, 3.14.3, 3.15)."""
    version = sys.version_info[:3]
    return version < (3, 13, 12) or (3, 14) <= version < (3, 14, 3)


def _effective_caps() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _can_unshare_net() -> bool:
    unshare, true = shutil.which("unshare"), shutil.which("true")
    if not unshare or not true:
        return False
    try:
        probe = subprocess.run(
            [unshare, "--net", true], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def _seccomp_problem() -> str | None:
    try:
        kernel.seccomp_filter()
    except (ImportError, RuntimeError, OSError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
        return f"seccomp unavailable ({reason}); install libseccomp2 and pyseccomp"
    return None


@functools.lru_cache(maxsize=1)
def host_layers() -> HostLayers:
    """Probe this host and process once (cached)."""
    root = os.geteuid() == 0
    caps = _effective_caps()

    def has(cap: int) -> bool:
        return bool(caps >> cap & 1)

    return HostLayers(
        seccomp=_seccomp_problem(),
        landlock_abi=kernel.landlock_abi(),
        root=root,
        netns=root and has(_CAP_SYS_ADMIN) and _can_unshare_net(),
        chroot=root and has(_CAP_SYS_CHROOT),
        setuid=root and has(_CAP_SETUID) and has(_CAP_SETGID),
    )


_LOGGED: set[str] = set()


def log_start_up_checks(privileged: bool | None = None) -> HostLayers:
    """Log each layer this host lacks, and if no answer can run at all.

    A missing layer is a warning once per terminal session (``core.notices``: a script of
    many commands shows it once) and INFO after; no seccomp is a warning in every process.

    Args:
        privileged: The mode to check; ``None`` means "root mode when running as root".

    Returns:
        The host's layers.
    """
    host = host_layers()
    if host.seccomp and host.seccomp not in _LOGGED:
        _LOGGED.add(host.seccomp)
        log.warning("sandbox: cannot confine agent code, no answer will run: %s", host.seccomp)
    for note in host.missing(host.root if privileged is None else privileged):
        if note not in _LOGGED:  # what this host lacks: a warning once per terminal session
            _LOGGED.add(note)
            log_once_per_session(log, f"sandbox: {note}")
    return host
