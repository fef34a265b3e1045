"""Per-episode control groups: memory, processes and CPU of an episode's processes.

An episode's group (``<prefix>``) holds one child per kind of process it runs:
``commands``, which every command an agent runs on any node of the episode joins before
the sandbox starts, and one per box of the episode's own (a router's FRR daemons,
``frr/box.py``). The agent's commands together hold at most ``MEMORY_BYTES`` of memory
(kernel memory they allocate included, with no swap), ``MAX_TASKS`` processes and
``CPU_QUOTA`` of one core: eight processes of 250 MiB each (each within its address-space
limit) no longer add up to 2 GB, and a flood on a node's loopback cannot take more than
half a core. A router's daemons, whatever the agent tells them, hold at most
``ROUTER_LIMITS``.

cgroup v2 is used where the host has it (a group of our own with the ``memory``, ``pids``
and ``cpu`` controllers delegated; inside a container whose only process is the
evaluator, the evaluator first moves into a leaf so the controllers can be enabled), else
the v1 hierarchies of those controllers. What is active is said once, when the process
opens its first episode (``announce``); where no control group can be made, the
per-process limits of ``sandbox.py`` remain and that line says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from netarena.common.core.notices import log_once_per_session
from netarena.route.linux.cgroup_tree import kill_all, make_group, remove, reweigh

__all__ = [
    "MAX_ADDRESS_SPACE",
    "MAX_PROCESSES",
    "MEMORY_BYTES",
    "MAX_TASKS",
    "CPU_QUOTA",
    "COMMANDS",
    "Limits",
    "ROUTER_LIMITS",
    "EPISODE_CPU",
    "episode_limits",
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
_JOIN = 'while [ "$1" != -- ]; do echo 0 > "$1" || exit 125; shift; done; shift; exec "$@"'
"""Joins the control groups named before ``--``, then runs the rest (as ``sh -c``)."""
_SWAP_FILES = frozenset({"memory.memsw.limit_in_bytes", "memory.swap.max"})

COMMANDS = "commands"
"""The child group the agent's commands join (a box's name is a node's: never this)."""

MAX_PROCESSES = 32
"""Processes (threads) the agent's user may have at once (a per-process limit: ``prlimit``)."""
MAX_ADDRESS_SPACE = 256 << 20
"""Address space of each agent process, bytes (a per-process limit: ``prlimit``)."""


@dataclass(frozen=True)
class Limits:
    """What the processes of one child group may hold together."""

    memory_bytes: int
    """Memory, kernel memory and the files they write to tmpfs included, bytes (no swap)."""
    tasks: int
    """Processes and threads at once."""
    cpu: float | None
    """Share of one core (a quota per 100 ms period); None: no quota."""


COMMAND_LIMITS = Limits(MEMORY_BYTES, MAX_TASKS, CPU_QUOTA)
"""The agent's commands of one episode, together."""
ROUTER_LIMITS = Limits(256 << 20, 64, 0.5)
"""One router's FRR daemons, together with the files they write (its tmpfs directories:
``frr/box.py``). Measured: zebra, staticd, ospfd and bgpd hold 44 MiB and run 13 threads;
a configuration at the node's budget (``limits.OBJECT_BUDGET``) fits."""
EPISODE_CPU = 1.0
"""Share of one core an episode's commands and boxes may use together once its boxes run:
what an agent makes the daemons do counts too (10 s of route churn cost zebra 4.3 CPU-s,
outside any group, against the commands' half a core)."""
ROUTER_START = dataclasses.replace(ROUTER_LIMITS, cpu=None)
"""A router's limits while its daemons start: their CPU quota applies once they run
(starting zebra, staticd and ospfd costs about 80 ms of CPU each router; under a quota,
opening a 6-router network took 0.5 s longer on the loaded 2-core machine)."""


def episode_limits(boxes: int) -> Limits:
    """What an episode with ``boxes`` running boxes holds at most, commands included."""
    memory = MEMORY_BYTES + boxes * ROUTER_LIMITS.memory_bytes
    return Limits(memory, MAX_TASKS + boxes * ROUTER_LIMITS.tasks, EPISODE_CPU)


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
        router = ROUTER_LIMITS
        return (
            f"route sandbox limits: per episode {MEMORY_BYTES >> 20} MiB memory, "
            f"{MAX_TASKS} processes, {CPU_QUOTA:g} CPU (cgroup v{self.version}: "
            f"{', '.join(sorted(self.parents))}); per agent user {per_process}; per FRR "
            f"router {router.memory_bytes >> 20} MiB, {router.tasks} processes, {router.cpu:g} CPU"
            f" ({EPISODE_CPU:g} CPU an episode's commands and routers together)"
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
    """The control groups of one episode: its commands' and its boxes' (nothing when unavailable).

    Args:
        prefix: The episode's prefix (names the group).
        boxes: Names of the episode's boxes, each a child group limited by ``box_limits``.
        box_limits: What each box may hold (while it starts: ``limit`` sets it later).
    """

    def __init__(
        self, prefix: str, boxes: tuple[str, ...] = (), box_limits: Limits = ROUTER_START
    ) -> None:
        self.prefix = prefix
        announce()  # at the first episode of the process
        self.found = hierarchy()
        self.dirs: list[Path] = []
        """The episode's group in each hierarchy (one in v2)."""
        try:
            v2 = self.found.version == 2
            for parent in dict.fromkeys(self.found.parents.values()):
                self.dirs.append(make_group(parent / self.prefix, _CONTROLLERS if v2 else ()))
            self.limit(COMMANDS, COMMAND_LIMITS)
            for box in boxes:
                self.limit(box, box_limits)
        except OSError:
            self.close()
            raise

    def limit(self, child: str, limits: Limits) -> None:
        """Make ``child`` if need be, and set its limits (``""``: the episode's own group).

        Raises:
            OSError: A group or limit could not be written.
        """
        for group in self.dirs:
            if not (group / child).exists():
                (group / child).mkdir()
                reweigh(group.parent)
            controllers = [c for c, p in self.found.parents.items() if p == group.parent]
            for file, value in _limit_files(limits, self.found.version, controllers).items():
                if file not in _SWAP_FILES or (group / child / file).exists():  # swap: if counted
                    _write(group / child / file, value)

    def procs_files(self, child: str = COMMANDS) -> list[str]:
        """The ``cgroup.procs`` files a process writes ``0`` to, to join ``child``."""
        return [str(group / child / "cgroup.procs") for group in self.dirs]

    def join_argv(self, child: str = COMMANDS) -> list[str]:
        """A command prefix that joins ``child``, then runs the rest of the command line."""
        return ["sh", "-c", _JOIN, "join", *self.procs_files(child), "--"]

    def peak_memory_bytes(self, child: str = COMMANDS) -> int | None:
        """The most memory ``child``'s processes held at once so far, if the kernel says."""
        for group in self.dirs:
            for name in ("memory.peak", "memory.max_usage_in_bytes"):
                with contextlib.suppress(OSError, ValueError):
                    return int((group / child / name).read_text())
        return None

    def kill(self, child: str = COMMANDS) -> None:
        """Kill every process left in ``child`` (the group stays, for the next command)."""
        for group in self.dirs:
            kill_all(group / child)

    def close(self) -> None:
        """Kill what is left in the groups and remove them. Idempotent."""
        for group in self.dirs:
            remove(group)
        self.dirs = []


def _limit_files(limits: Limits, version: int | None, controllers: list[str]) -> dict[str, str]:
    """The files that set ``limits``, of ``controllers`` (in v1, each has its own hierarchy)."""
    quota = str(int(limits.cpu * _PERIOD_US)) if limits.cpu is not None else None
    files = {
        2: {"memory.max": str(limits.memory_bytes), "memory.swap.max": "0",
            "pids.max": str(limits.tasks), "cpu.max": f"{quota or 'max'} {_PERIOD_US}"},
        1: {"memory.limit_in_bytes": str(limits.memory_bytes),
            "memory.memsw.limit_in_bytes": str(limits.memory_bytes),
            "pids.max": str(limits.tasks), "cpu.cfs_period_us": str(_PERIOD_US),
            "cpu.cfs_quota_us": quota or "-1"},
    }.get(version or 0, {})
    return {name: value for name, value in files.items() if name.split(".")[0] in controllers}


def remove_group(prefix: str) -> None:
    """Remove episode ``prefix``'s control group, wherever this process would make it."""
    if not _NAME.match(prefix):
        return
    for parent in dict.fromkeys(hierarchy().parents.values()):
        remove(parent / prefix)


def stale_groups() -> set[str]:
    """Prefixes that have a control group here (live or not)."""
    found = set()
    for parent in dict.fromkeys(hierarchy().parents.values()):
        with contextlib.suppress(OSError):
            found |= {p.name for p in parent.iterdir() if p.is_dir() and _NAME.match(p.name)}
    return found
