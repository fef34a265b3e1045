"""Control groups as directories: making, weighing, emptying and removing them.

What ``cgroups.py`` does to the kernel's control-group files, with no policy of its own:
the same for v1 hierarchies and the v2 tree.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import signal
import threading
import time
from pathlib import Path

__all__ = ["make_group", "reweigh", "remove", "kill_all"]

log = logging.getLogger(__name__)

_LOCK = threading.Lock()
"""Held while a group's parent may be made or removed (other threads' episodes share it)."""
_WEIGHTS = {"cpu.shares": (1024, 262144), "cpu.weight": (100, 10000)}
"""What one process weighs when the CPU is contended, and the most a group may weigh."""


def _write(path: Path, value: str) -> None:
    path.write_text(value)


def make_group(group: Path, controllers: tuple[str, ...]) -> Path:
    """Make ``group`` (and its parent, if gone); in v2, its children get ``controllers``."""
    enable = " ".join(f"+{c}" for c in controllers)
    for attempt in range(3):
        try:
            with _LOCK:
                group.parent.mkdir(exist_ok=True)
                if controllers:
                    _write(group.parent / "cgroup.subtree_control", enable)
                group.mkdir(exist_ok=True)
            if controllers:
                _write(group / "cgroup.subtree_control", enable)
            return group
        except FileNotFoundError:  # another process removed the parent meanwhile
            if attempt == 2:
                raise
    return group


def reweigh(parent: Path) -> None:
    """Make each episode's group, and all together, weigh a process per child group.

    A group weighs one process by default when the CPU is contended: every router's
    daemons of every episode (a process each, outside any group) came to weigh one
    process together, and took seconds longer to start on a busy machine.
    """
    for name, (unit, most) in _WEIGHTS.items():
        if not (parent / name).exists():
            continue
        total = 0
        with _LOCK, contextlib.suppress(OSError):
            for episode in (p for p in parent.iterdir() if p.is_dir()):
                children = sum(1 for c in episode.iterdir() if c.is_dir())
                with contextlib.suppress(OSError):
                    _write(episode / name, str(min(unit * max(children, 1), most)))
                total += children
            _write(parent / name, str(min(unit * max(total, 1), most)))


def remove(group: Path) -> None:
    """Kill every process of ``group`` and below, remove them, and the parent once empty.

    Nothing of ours stays behind in the control group this process was started in.
    """
    _remove_tree(group)
    with _LOCK, contextlib.suppress(OSError):  # other episodes' groups may remain: fine
        group.parent.rmdir()
    reweigh(group.parent)


def _remove_tree(group: Path) -> None:
    """Kill every process of ``group`` and below, and remove the groups, children first.

    Every group's processes are killed before any is waited for: they die together.
    """
    groups = _subtree(group)
    for _ in range(50):
        for each in groups:
            kill_all(each, rounds=1)  # v2: cgroup.kill, the whole subtree at once
        for each in list(groups):
            try:
                each.rmdir()
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    break
            groups.remove(each)
        if not groups:
            return
        time.sleep(0.02)
    log.warning("control group %s could not be removed", group)


def _subtree(group: Path) -> list[Path]:
    """``group`` and the groups below it, deepest first."""
    with contextlib.suppress(OSError):
        children = [p for p in group.iterdir() if p.is_dir()]
        return [*(g for child in children for g in _subtree(child)), group]
    return [group]


def kill_all(group: Path, rounds: int = 50) -> None:
    """SIGKILL the processes of ``group`` until none is left (a process may fork meanwhile)."""
    for _ in range(rounds):
        try:
            pids = (group / "cgroup.procs").read_text().split()
        except OSError:
            return  # gone already
        if not pids:
            return
        if (group / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(group / "cgroup.kill", "1")
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
        if rounds > 1:
            time.sleep(0.005)
