"""Network namespaces: naming, entering, batch configuration and leftover cleanup.

Every episode owns a unique name prefix (``nr`` + 5 base-36 characters, e.g. ``nr3k9az``).
All its namespaces are named ``<prefix>_<node>`` (``nr3k9az_net`` holds the bridges,
``nr3k9az_r0``/``nr3k9az_h1`` are the nodes), so a cleanup can find them by prefix after a
killed process. An owner file ``/run/netarena-route/<prefix>.pid`` records the owning
process: it is written when the prefix is claimed (``claim_prefix``), before anything of the
network exists, so nothing of a network is ever without an owner. ``cleanup`` spares the
networks of owners that are alive (the file holds the owner's pid and start time: a later
process given the same pid is not the owner) and removes the others; every ``claim_prefix``
(every network's construction, in ``open()``) first reaps the networks of owners that are
gone, so a program killed while it held networks leaves nothing behind for long.

Python 3.11 has no ``os.setns``; ``enter`` calls libc's ``setns`` for the current thread
only (network namespaces are per thread), so sockets can be opened inside a node.

Each node's network namespace belongs to a user namespace of its own
(``mininet_build.own_user_namespace``), rooted at the episode's unprivileged host uid: an agent
holds its network capabilities over its node alone (not the switch fabric, not the host).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import logging
import os
import random
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.cgroups import remove_group, stale_groups
from netarena.route.linux.reaplog import note_reap, reap_note

__all__ = [
    "NETNS_DIR",
    "OWNER_DIR",
    "PREFIX_RE",
    "new_prefix",
    "claim_prefix",
    "reap",
    "fs_root",
    "enter",
    "ip_batch",
    "read_sysctl",
    "write_sysctl",
    "list_prefixes",
    "remove_prefix",
    "cleanup",
]

log = logging.getLogger(__name__)

NETNS_DIR = Path("/run/netns")
"""Where ``ip netns`` keeps its bind mounts."""
OWNER_DIR = Path("/run/netarena-route")
"""Owner files: one ``<prefix>.pid`` per live episode."""
PREFIX_RE = re.compile(r"^(nr[0-9a-z]{5})_[A-Za-z0-9]+$")
"""Namespace names of ours; group 1 is the episode prefix."""

_CLONE_NEWNET = 0x40000000
_MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)
_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def new_prefix(rng: random.Random | None = None) -> str:
    """A fresh episode prefix not used by any namespace on this machine."""
    rng = rng or random.Random(os.urandom(8))
    while True:
        prefix = "nr" + "".join(rng.choice(_ALPHABET) for _ in range(5))
        if prefix not in list_prefixes():
            return prefix


def claim_prefix(prefix: str | None = None) -> str:
    """Reap the networks of owners that are gone, then claim a prefix for this process.

    The owner file is made before anything of the network (whole, and exclusively: two
    processes never claim one prefix, and no reaper reads it half written), so a process
    killed at any later point of ``open()`` leaves an owner file naming a process that is
    gone.

    Args:
        prefix: The prefix wanted; a fresh one by default.

    Raises:
        EmulatorError: ``prefix`` is claimed already, or the owner file cannot be made.
    """
    reap()
    try:
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        spare = OWNER_DIR / f".claim.{os.getpid()}.{threading.get_ident()}"
        spare.write_text(f"{os.getpid()} {_start_ticks(os.getpid())}")
        try:
            while True:
                wanted = prefix or new_prefix()
                try:
                    os.link(spare, OWNER_DIR / f"{wanted}.pid")
                    return wanted
                except FileExistsError:
                    if prefix:
                        raise EmulatorError(f"prefix {prefix} is claimed already") from None
        finally:
            spare.unlink()
    except OSError as exc:
        raise EmulatorError(f"cannot claim a network prefix: {exc}") from exc


def reap() -> list[str]:
    """``cleanup()`` of gone owners (names removed), unless another process reaps right now."""
    try:
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        lock = open(OWNER_DIR / ".reap.lock", "w")  # noqa: SIM115 - held across the body
    except OSError:
        return []
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # another open() is reaping: what it leaves, the next one takes
        removed = cleanup()
    if removed:
        log.warning("removed %d namespaces of networks whose owner is gone", len(removed))
    return removed


def fs_root(prefix: str) -> Path:
    """Where episode ``prefix`` mounts its agents' writable filesystem."""
    return OWNER_DIR / f"{prefix}.fs"


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise EmulatorError(f"setns failed: {os.strerror(err)}")


@contextlib.contextmanager
def enter(netns: str) -> Iterator[None]:
    """Run the body with the current thread inside namespace ``netns``, then come back.

    ``netns`` is a name under ``/run/netns`` or a path (``/proc/PID/ns/net``). Sockets
    opened in the body stay bound to ``netns`` after the body ends.
    """
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(NETNS_DIR / netns, os.O_RDONLY)
    except OSError as exc:
        os.close(home)
        gone = reap_note(OWNER_DIR, netns.split("_", 1)[0])
        raise EmulatorError(f"no namespace {netns}: {exc}{gone}") from exc
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def _remove_filesystem(prefix: str) -> None:
    root = fs_root(prefix)
    if root.exists():
        subprocess.run(["umount", "-l", str(root)], capture_output=True)
        with contextlib.suppress(OSError):
            shutil.rmtree(root)


def ip_batch(lines: list[str], netns: str | None = None, check: bool = True) -> str:
    """Run many ``ip`` commands in one process (``ip -batch``), optionally in ``netns``.

    Returns:
        Combined stderr (empty on success).

    Raises:
        EmulatorError: A command failed and ``check`` is set.
    """
    argv = ["ip"] + (["-n", netns] if netns else []) + (["-force"] if not check else [])
    argv += ["-batch", "-"]
    proc = subprocess.run(
        argv, input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=30
    )
    if check and proc.returncode != 0:
        raise EmulatorError(f"ip batch failed in {netns or 'host'}: {proc.stderr.strip()}")
    return proc.stderr


def read_sysctl(netns: str, key: str) -> str:
    """``/proc/sys/<key>`` as seen from inside ``netns`` (``net.*`` keys), stripped."""
    path = "/proc/sys/" + key.replace(".", "/")
    with enter(netns), open(path) as f:
        return f.read().strip()


def write_sysctl(netns: str, key: str, value: str) -> None:
    """Write ``/proc/sys/<key>`` as seen from inside ``netns`` (``net.*`` keys)."""
    path = "/proc/sys/" + key.replace(".", "/")
    with enter(netns), open(path, "w") as f:
        f.write(value)


def list_prefixes() -> set[str]:
    """Episode prefixes that have at least one namespace on this machine."""
    if not NETNS_DIR.exists():
        return set()
    found = set()
    for entry in NETNS_DIR.iterdir():
        m = PREFIX_RE.match(entry.name)
        if m:
            found.add(m.group(1))
    return found


def _namespace_inodes(prefix: str) -> dict[int, str]:
    inodes = {}
    for entry in NETNS_DIR.glob(f"{prefix}_*"):
        with contextlib.suppress(OSError):
            inodes[entry.stat().st_ino] = entry.name
    return inodes


def _processes_in(inodes: dict[int, str]) -> list[int]:
    """Processes (not this one) whose network namespace is one of ``inodes``."""
    found = []
    me = os.getpid()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            ino = os.stat(proc / "ns" / "net").st_ino
        except OSError:
            continue
        if ino in inodes:
            found.append(int(proc.name))
    return found


def _still_bound(inodes: dict[int, str]) -> dict[int, str]:
    """The namespaces of ``inodes`` still bound under their names: ours for sure."""
    # An unbound one may be gone and its inode number reused by another episode's namespace.
    bound = {}
    for ino, name in inodes.items():
        with contextlib.suppress(OSError):
            if (NETNS_DIR / name).stat().st_ino == ino:
                bound[ino] = name
    return bound


def _kill_processes_in(inodes: dict[int, str], deadline_s: float = 10.0) -> int:
    """SIGKILL every process in the namespaces ``inodes``, until none is left.

    A process can fork between the scan and the kill, and a killed one takes a moment to
    leave its namespaces on a loaded machine, so the scan repeats until it finds none (or
    ``deadline_s`` passes; the survivors are logged).
    """
    killed = 0
    end = time.monotonic() + deadline_s
    while pids := _processes_in(_still_bound(inodes)):
        if time.monotonic() > end:
            log.warning("processes still in namespaces %s: %s", sorted(inodes.values()), pids)
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
    return killed


def remove_prefix(prefix: str) -> list[str]:
    """Delete every namespace of episode ``prefix`` and kill processes left inside them.

    Deleting a namespace takes its links, bridges and iptables rules with it.

    Returns:
        Names of the namespaces removed.
    """
    if not re.fullmatch(r"nr[0-9a-z]{5}", prefix):
        raise EmulatorError(f"not one of our prefixes: {prefix!r}")
    inodes = _namespace_inodes(prefix)
    remove_group(prefix)  # every agent command of the episode, however many it forked
    _kill_processes_in(inodes)
    removed = []
    for name in sorted(inodes.values()):
        try:
            _delete_namespace(name)
            removed.append(name)
        except OSError as exc:
            log.warning("could not delete namespace %s: %s", name, exc)
    _remove_filesystem(prefix)
    with contextlib.suppress(FileNotFoundError):
        (OWNER_DIR / f"{prefix}.pid").unlink()
    return removed


def _delete_namespace(name: str) -> None:
    """What ``ip netns del NAME`` does: detach its bind mount, remove the file.

    The namespace goes once nothing holds it (its processes are killed first).
    """
    path = bytes(NETNS_DIR / name)
    if _libc.umount2(path, _MNT_DETACH) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err), str(NETNS_DIR / name))
    (NETNS_DIR / name).unlink()


def _owner_alive(prefix: str) -> bool:
    """Whether the process that claimed ``prefix`` is still running.

    The owner file holds the owner's pid and its start time in clock ticks since boot, so
    a later process given the same pid (the kernel reuses pids) is not taken for it, and
    no wall clock (which NTP may step) is read. A file with a pid alone (older NetArena)
    falls back to comparing the process's start with the file's time.
    """
    owner = OWNER_DIR / f"{prefix}.pid"
    try:
        fields = owner.read_text().split()
        pid = int(fields[0])
        ticks = int(fields[1]) if len(fields) > 1 else None
        written = owner.stat().st_mtime
    except (OSError, ValueError, IndexError):
        return False
    if pid == os.getpid():
        return True
    try:
        started = _start_ticks(pid)
    except OSError:
        return False
    if ticks is not None:
        return started == ticks
    since_boot = started / os.sysconf("SC_CLK_TCK")
    return _boot_time() + since_boot <= written + 1  # the boot time is known to the second


def _start_ticks(pid: int) -> int:
    """When process ``pid`` started, in clock ticks since boot (``/proc/PID/stat``).

    Raises:
        OSError: No such process.
    """
    stat = Path(f"/proc/{pid}/stat").read_text()
    try:
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (IndexError, ValueError) as exc:
        raise OSError(f"unreadable /proc/{pid}/stat") from exc


def _boot_time() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def cleanup(include_live: bool = False) -> list[str]:
    """Remove leftovers of killed episodes: namespaces named ``nr?????_*`` and owner files.

    Args:
        include_live: Also remove episodes whose owner process is still running.

    Returns:
        Names of the namespaces removed. Nothing outside our prefixes is touched.
    """
    removed: list[str] = []
    for prefix in sorted(list_prefixes()):
        if include_live or not _owner_alive(prefix):
            note_reap(OWNER_DIR, prefix, "--all" if include_live else "owner judged gone")
            removed += remove_prefix(prefix)
    if OWNER_DIR.exists():
        for owner in OWNER_DIR.glob("nr*.pid"):
            prefix = owner.stem
            if prefix not in list_prefixes() and (include_live or not _owner_alive(prefix)):
                _remove_filesystem(prefix)
                with contextlib.suppress(FileNotFoundError):
                    owner.unlink()
        for spare in OWNER_DIR.glob(".claim.*"):  # a claim's, killed before it linked it
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(spare.name.split(".")[2]), 0)
                continue
            with contextlib.suppress(FileNotFoundError):
                spare.unlink()
    for prefix in stale_groups() - list_prefixes():
        if include_live or not _owner_alive(prefix):
            remove_group(prefix)
    return removed
