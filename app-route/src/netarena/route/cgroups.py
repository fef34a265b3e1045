"""Per-episode control groups: memory, processes and CPU of an episode's agent commands.

Every command an agent runs on any node of an episode joins that episode's control group
before the sandbox starts, so the episode's processes together hold at most
``MEMORY_BYTES`` of memory (kernel memory they allocate included, with no swap),
``MAX_TASKS`` processes and ``CPU_QUOTA`` of one core: eight processes of 250 MiB each
(each within its address-space limit) no longer add up to 2 GB, and a flood on a node's
loopback cannot take more than half a core.

cgroup v2 is used where the host has it (a group of our own with the ``memory``, ``pids``
and ``cpu`` controllers delegated; inside a container whose only process is the
evaluator, the evaluator first moves into a leaf so the controllers can be enabled), else
the v1 hierarchies of those controllers. What is active is said once, when the process
opens its first episode (``announce``); where no control group can be made, the
per-process limits of ``sandbox.py`` remain and that line says so.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import re
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from netarena.common.core.notices import log_once_per_session

__all__ = [
    "MAX_ADDRESS_SPACE",
    "MAX_PROCESSES",
    "MEMORY_BYTES",
    "MAX_TASKS",
    "CPU_QUOTA",
    "Hierarchy",
    "hierarchy",
    "announce",
    "EpisodeGroup",
    "remove_group",
    "stale_groups",
]

log = logging.getLogger(__name__)

MEMORY_BYTES = 512 << 20
"""Memory the processes of one episode's commands may hold together, bytes."""
MAX_TASKS = 64
"""Processes (threads) of one episode's commands at once."""
CPU_QUOTA = 0.5
"""Share of one core the commands of one episode may use."""
CGROUP_ROOT = Path("/sys/fs/cgroup")
_GROUP = "netarena-route"
_CONTROLLERS = ("memory", "pids", "cpu")
_PERIOD_US = 100_000
_NAME = re.compile(r"^nr[0-9a-z]{5}$")
_LOCK = threading.Lock()
_SWAP_FILES = frozenset({"memory.memsw.limit_in_bytes", "memory.swap.max"})

MAX_PROCESSES = 32
"""Processes (threads) the agent's user may have at once (a per-process limit: ``prlimit``)."""
MAX_ADDRESS_SPACE = 256 << 20
"""Address space of each agent process, bytes (a per-process limit: ``prlimit``)."""

@dataclass(frozen=True)
class Hierarchy:
    """Where this process makes its episodes' control groups."""

    version: int | None
    """1 or 2, or ``None`` when no control group can be made here."""
    parents: dict[str, Path] = field(default_factory=dict)
    """Controller → the directory holding one group per episode (v2: one for all)."""
    reason: str = ""
    """Why control groups are unavailable, when they are."""

    def describe(self) -> str:
        """The limits active on agents' commands, in one line."""
        per_process = f"{MAX_PROCESSES} processes x {MAX_ADDRESS_SPACE >> 20} MiB address space"
        if self.version is None:
            return (
                f"route sandbox limits: per agent user {per_process}; NO per-episode "
                f"memory, process or CPU limit ({self.reason})"
            )
        return (
            f"route sandbox limits: per episode {MEMORY_BYTES >> 20} MiB memory, "
            f"{MAX_TASKS} processes, {CPU_QUOTA:g} CPU (cgroup v{self.version}: "
            f"{', '.join(sorted(self.parents))}); per agent user {per_process}"
        )


def _own_paths() -> dict[str, str]:
    """This process's group per v1 controller, and ``""`` → its v2 group."""
    paths: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(","):
            paths[name] = path
    return paths


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def _v2(own: str) -> Hierarchy:
    base = CGROUP_ROOT / own.lstrip("/")
    wanted = set(_CONTROLLERS)
    if not wanted <= set((base / "cgroup.controllers").read_text().split()):
        return Hierarchy(None, reason=f"cgroup v2 without {', '.join(sorted(wanted))} here")
    enable = " ".join(f"+{c}" for c in _CONTROLLERS)
    try:
        _write(base / "cgroup.subtree_control", enable)
    except OSError as exc:
        if exc.errno != errno.EBUSY:
            return Hierarchy(None, reason=f"cgroup v2 not delegated: {exc.strerror}")
        procs = [int(pid) for pid in (base / "cgroup.procs").read_text().split()]
        if not all(_ours(pid) for pid in procs):  # only our own group is ours to rearrange
            return Hierarchy(None, reason="cgroup v2 group shared with other processes")
        leaf = base / "netarena-evaluator"
        leaf.mkdir(exist_ok=True)
        for pid in procs:  # this process and its children (Mininet's node shells...)
            with contextlib.suppress(ProcessLookupError):
                _write(leaf / "cgroup.procs", str(pid))
        try:
            _write(base / "cgroup.subtree_control", enable)
        except OSError as again:
            return Hierarchy(None, reason=f"cgroup v2 controllers not enabled: {again.strerror}")
    parent = base / _GROUP
    parent.mkdir(exist_ok=True)
    _write(parent / "cgroup.subtree_control", enable)
    return Hierarchy(2, {c: parent for c in _CONTROLLERS})


def _ours(pid: int) -> bool:
    """Whether ``pid`` is this process or one of its descendants."""
    me = os.getpid()
    while pid > 1 and pid != me:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return pid == me


def _v1(own: dict[str, str]) -> Hierarchy:
    parents = {}
    for name in _CONTROLLERS:
        mounts = [p for p in CGROUP_ROOT.iterdir() if name in p.name.split(",")]
        if name not in own or not mounts:
            continue
        parent = mounts[0] / own[name].lstrip("/") / _GROUP
        with contextlib.suppress(OSError):
            parent.mkdir(exist_ok=True)
            parents[name] = parent
    if "memory" not in parents or "pids" not in parents:
        return Hierarchy(None, reason="no writable cgroup v1 memory and pids hierarchies")
    return Hierarchy(1, parents)


@functools.cache
def hierarchy() -> Hierarchy:
    """How this process limits its episodes (found once)."""
    try:
        own = _own_paths()
        if (CGROUP_ROOT / "cgroup.controllers").exists():
            found = _v2(own.get("", "/"))
        else:
            found = _v1(own)
    except OSError as exc:
        found = Hierarchy(None, reason=f"control groups unreadable: {exc}")
    return found


@functools.cache
def announce() -> None:
    """Say which limits agents' commands run under: a warning once per terminal session."""
    log_once_per_session(log, hierarchy().describe())


class EpisodeGroup:
    """The control group of one episode's commands (nothing when unavailable).

    Args:
        prefix: The episode's prefix (names the group).
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        announce()  # at the first episode of the process
        self.found = hierarchy()
        self.dirs: list[Path] = []
        try:
            self._make()
        except OSError:
            self.close()
            raise

    def _make(self) -> None:
        quota = str(int(CPU_QUOTA * _PERIOD_US))
        limits = {
            2: {"memory.max": str(MEMORY_BYTES), "memory.swap.max": "0",
                "pids.max": str(MAX_TASKS), "cpu.max": f"{quota} {_PERIOD_US}"},
            1: {"memory.limit_in_bytes": str(MEMORY_BYTES),
                "memory.memsw.limit_in_bytes": str(MEMORY_BYTES),
                "pids.max": str(MAX_TASKS), "cpu.cfs_period_us": str(_PERIOD_US),
                "cpu.cfs_quota_us": quota},
        }.get(self.found.version or 0, {})
        groups: dict[Path, Path] = {}
        for controller, parent in self.found.parents.items():
            if parent not in groups:
                groups[parent] = _make_group(parent / self.prefix, self.found.version == 2)
                self.dirs.append(groups[parent])
            group = groups[parent]
            for name, value in limits.items():
                if name.split(".")[0] != controller:
                    continue  # in v1, each controller's files are in its own hierarchy
                if name not in _SWAP_FILES or (group / name).exists():  # swap: if accounted
                    _write(group / name, value)

    @property
    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a command writes ``0`` to, to join the group."""
        return [str(group / "cgroup.procs") for group in self.dirs]

    def peak_memory_bytes(self) -> int | None:
        """The most memory the group's processes held at once so far, if the kernel says."""
        for group in self.dirs:
            for name in ("memory.peak", "memory.max_usage_in_bytes"):
                with contextlib.suppress(OSError, ValueError):
                    return int((group / name).read_text())
        return None

    def close(self) -> None:
        """Kill what is left in the group and remove it. Idempotent."""
        for group in self.dirs:
            _remove(group)
        self.dirs = []


def _make_group(group: Path, v2: bool) -> Path:
    """Make ``group`` and, if the last episode's close removed it, its parent."""
    for attempt in range(3):
        try:
            with _LOCK:
                group.parent.mkdir(exist_ok=True)
                if v2:
                    enable = " ".join(f"+{c}" for c in _CONTROLLERS)
                    _write(group.parent / "cgroup.subtree_control", enable)
                group.mkdir(exist_ok=True)
            return group
        except FileNotFoundError:  # another process removed the parent meanwhile
            if attempt == 2:
                raise
    return group


def _remove(group: Path) -> None:
    """Kill every process of ``group`` and remove it, and its parent once empty.

    Nothing of ours stays behind in the control group this process was started in.
    """
    _remove_one(group)
    with _LOCK, contextlib.suppress(OSError):  # other episodes' groups may remain: fine
        group.parent.rmdir()


def _remove_one(group: Path) -> None:
    """Kill every process of ``group`` and remove it (a few tries: dying takes a moment)."""
    for _ in range(50):
        try:
            pids = (group / "cgroup.procs").read_text().split()
        except OSError:
            return  # gone already
        if (group / "cgroup.kill").exists() and pids:
            with contextlib.suppress(OSError):
                _write(group / "cgroup.kill", "1")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        try:
            group.rmdir()
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            time.sleep(0.02)
    log.warning("control group %s could not be removed", group)


def remove_group(prefix: str) -> None:
    """Remove episode ``prefix``'s control group, wherever this process would make it."""
    if not _NAME.match(prefix):
        return
    for parent in dict.fromkeys(hierarchy().parents.values()):
        _remove(parent / prefix)


def stale_groups() -> set[str]:
    """Prefixes that have a control group here (live or not)."""
    found = set()
    for parent in dict.fromkeys(hierarchy().parents.values()):
        with contextlib.suppress(OSError):
            found |= {p.name for p in parent.iterdir() if p.is_dir() and _NAME.match(p.name)}
    return found
