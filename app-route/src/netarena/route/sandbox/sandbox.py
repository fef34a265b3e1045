"""A real shell on each node, inside a sandbox that protects the host.

Every agent command runs as ``bash -c COMMAND`` inside the node's network namespace, the
way Mininet runs it on a host, but within a per-command bubblewrap sandbox
(``bwrap``, Debian ``bubblewrap``):

* **files**: a read-only ``/usr`` (every tool of the machine), a handful of ``/etc``
  files needed by network tools (no ``/etc/shadow``, no host ``/root``, ``/home``, ``/run``
  or ``/sys``), and one per-episode tmpfs (16 MiB) shared by the episode's nodes for
  ``/tmp`` and ``/root``, so files survive between turns like on a Mininet host;
* **proc**: a private, read-only ``/proc`` (its own PID namespace: no host or other
  episode process is visible) with only the node's ``/proc/sys/net`` writable;
* **a node's box**: on a node that runs programs of its own (a router's FRR daemons,
  ``frr/box.py``), the command starts inside that box's mount namespace, binds the box's
  directories (``/etc/frr``, ``/var/log/frr``, ``/tmp``...) and shares its PID namespace,
  so ``ps`` and ``ss -p`` show the node's daemons as on a real machine, and nothing of
  other nodes or the host. No process of a command outlives it there either: whatever
  is left in the episode's ``commands`` control group when it ends is killed (without
  control groups, the command keeps a PID namespace of its own);
* **privileges**: the command runs as ``root`` of the node's own user namespace (see
  ``mininet_build.own_user_namespace``; the episode's unprivileged uid on the host) with
  exactly CAP_NET_ADMIN, CAP_NET_RAW and CAP_NET_BIND_SERVICE *over that namespace*: it
  administers its node's network and nothing else (CAP_SETUID and CAP_SETGID too, so
  ``tcpdump`` can switch to its user: only uid and gid 0 exist in that namespace; in a
  node's box, CAP_SYS_PTRACE too, so ``ss -p`` can list the daemons' sockets). The
  switch fabric, the other nodes
  and the host belong to the host's user namespace, where it holds no capability, so the
  ``link-netnsid`` numbers it sees name namespaces it cannot act on. A seccomp filter
  (``syscalls.py``) refuses new namespaces, mounts, keyrings, the kernel log, bpf and
  the like; ``sudo`` is a shim that just runs its command;
* **bounds**: per agent user 32 processes, 256 MiB address space per process and 16 MiB
  per file, niced; per episode a control group (``cgroups.py``: 512 MiB of memory, 64
  processes, half a core) that every command joins before anything else runs; the
  command gets SIGINT at its time limit (``ping`` then prints its statistics), SIGKILL a
  second later, and whatever it printed so far is returned with a note.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.cgroups import MAX_ADDRESS_SPACE, MAX_PROCESSES, EpisodeGroup
from netarena.route.linux.namespaces import NETNS_DIR, fs_root
from netarena.route.sandbox.capped import (
    CAP_READ_BYTES,
    LINE_BUFFERED,
    cap_output,
    pipe_of,
    run_capped,
    time_limit_note,
    unknown_qdisc_note,
)
from netarena.route.sandbox.syscalls import filter_program

__all__ = [
    "open_userns",
    "ExecResult",
    "EpisodeSandbox",
    "NodeBox",
    "FS_BYTES",
    "ETC_FILES",
    "episode_uid",
    "system_links",
]

log = logging.getLogger(__name__)

FS_BYTES = 16 << 20
"""Size of the per-episode writable filesystem (``/tmp`` and ``/root``)."""
_UID_BASE = 1_900_000_000
_PATH = "/opt/netarena/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CAPS = ("net_admin", "net_raw", "net_bind_service", "setuid", "setgid")
ETC_FILES = (
    "alternatives",
    "iproute2",
    "protocols",
    "services",
    "ethertypes",
    "nsswitch.conf",
    "host.conf",
    "gai.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
)
"""The host's ``/etc`` entries network tools need, bound read-only into sandboxes."""
_SUDO_SHIM = (
    '#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done\n'
    'exec "$@"\n'
)


@dataclass(frozen=True)
class ExecResult:
    """What a command printed and how it ended."""

    returncode: int
    output: str
    timed_out: bool = False


def episode_uid(prefix: str) -> int:
    """The unprivileged host uid that is ``root`` in the user namespaces of episode ``prefix``."""
    digest = hashlib.sha256(prefix.encode()).digest()
    return _UID_BASE + int.from_bytes(digest[:4], "big") % 10_000_000


def open_userns(node: str, userns: str) -> int:
    """A descriptor of ``node``'s user namespace (``userns``), which commands enter.

    Raises:
        EmulatorError: The namespace is gone (its node was torn down).
    """
    try:
        return os.open(userns, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise EmulatorError(f"{node}: its user namespace is gone: {exc}") from exc


def system_links() -> list[str]:
    """``/bin``, ``/lib``... as on the host: symlinks into ``/usr`` or read-only binds."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), f"/{name}"]
        elif path.is_dir():
            args += ["--ro-bind", str(path), f"/{name}"]
    return args


@dataclass(frozen=True)
class NodeBox:
    """A node's box, as its commands see it: where they start and what they bind.

    Paths are the box's own, bound at the same place in the command's sandbox.
    """

    pid: int
    """A process (host pid) whose mount and PID namespaces are the box's."""
    writable: tuple[str, ...]
    """Directories bound read-write."""
    readable: tuple[str, ...] = ()
    """Paths bound read-only."""


class Hosts(Protocol):
    """What ``/etc/hosts`` needs of a network (a ``NetworkPlan``, an ``OspfPlan``).

    A protocol, not the plan, so the sandbox stays below the emulator that builds on it.
    """

    @property
    def nodes(self) -> tuple[str, ...]: ...

    def address(self, node: str) -> str: ...


class EpisodeSandbox:
    """The sandbox of one episode: its filesystem, its agent user and its control groups.

    Args:
        prefix: The episode's namespace prefix (names the filesystem and the user).
        plan: The network (host names go into ``/etc/hosts``).
        boxes: Nodes that will have a box (each gets a control group of its own).
    """

    def __init__(self, prefix: str, plan: Hosts, boxes: tuple[str, ...] = ()) -> None:
        self.prefix = prefix
        self.boxes: dict[str, NodeBox] = {}
        """Node → its box, once started (``frr/box.py``)."""
        self.uid = episode_uid(prefix)
        self.root = fs_root(prefix)
        self._mounted = False
        self.group = EpisodeGroup(prefix, boxes)
        self.root.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={FS_BYTES},mode=0755", "tmpfs", str(self.root)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise EmulatorError(f"cannot mount the episode filesystem: {proc.stderr.strip()}")
        self._mounted = True
        self._populate(plan)

    def _populate(self, plan: Hosts) -> None:
        for name, mode in (("tmp", 0o1777), ("root", 0o755), ("etc", 0o755), ("bin", 0o755)):
            (self.root / name).mkdir(mode=mode)
            os.chmod(self.root / name, mode)
        os.chown(self.root / "root", self.uid, self.uid)
        hosts = ["127.0.0.1\tlocalhost"]
        hosts += [f"{plan.address(node)}\t{node}" for node in plan.nodes]
        etc = self.root / "etc"
        (etc / "hosts").write_text("\n".join(hosts) + "\n")
        # tcpdump switches to its own user: here that is root again (only 0 is mapped)
        (etc / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/bash\ntcpdump:x:0:0::/nonexistent:/bin/false\n"
        )
        (etc / "group").write_text("root:x:0:\n")
        (etc / "resolv.conf").write_text("")
        sudo = self.root / "bin" / "sudo"
        sudo.write_text(_SUDO_SHIM)
        sudo.chmod(0o755)

    def _box(self, node: str) -> NodeBox | None:
        """``node``'s box, if its commands can share its processes (see the docstring)."""
        return self.boxes.get(node) if self.group.dirs else None

    def _bwrap(self, node: str, seccomp_fd: int) -> list[str]:
        """The bubblewrap part: the files, the private /proc, the seccomp filter."""
        box = self._box(node)
        bwrap = ["bwrap", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        bwrap += [] if box else ["--unshare-pid", "--as-pid-1"]
        bwrap += ["--hostname", node, "--die-with-parent", "--new-session"]
        bwrap += ["--ro-bind", "/usr", "/usr", *system_links(), "--dir", "/etc"]
        for name in ETC_FILES:
            if (Path("/etc") / name).exists():
                bwrap += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        for name in ("hosts", "passwd", "group", "resolv.conf"):
            bwrap += ["--ro-bind", str(self.root / "etc" / name), f"/etc/{name}"]
        bwrap += ["--proc", "/proc", "--remount-ro", "/proc", "--bind", "/proc/sys/net"]
        bwrap += ["/proc/sys/net", "--dev", "/dev", "--dir", "/run"]
        bwrap += ["--bind", str(self.root / "tmp"), "/tmp", "--bind", str(self.root / "root")]
        bwrap += ["/root", "--dir", "/opt", "--dir", "/opt/netarena"]
        bwrap += ["--ro-bind", str(self.root / "bin"), "/opt/netarena/bin"]
        if box:
            bwrap += ["--dir", "/var", "--dir", "/var/log", "--symlink", "../run", "/var/run"]
            for path in box.writable:
                bwrap += ["--bind", path, path]
            for path in box.readable:
                bwrap += ["--ro-bind", path, path]
        bwrap += ["--remount-ro", "/", "--chdir", "/root", "--seccomp", str(seccomp_fd)]
        # CAP_SYS_ADMIN only lets the next program, nsenter, step into the node's user
        # namespace; there it has capabilities over that namespace alone
        return [*bwrap, "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN"]

    def argv(
        self, node: str, netns: str, userns_fd: int, seccomp_fd: int, command: str, timeout_s: float
    ) -> list[str]:
        """The full command line that runs ``command`` on ``node`` in the sandbox.

        Args:
            node: The machine (its hostname in the sandbox).
            netns: Its network namespace's name.
            userns_fd: An inherited descriptor of its user namespace.
            seccomp_fd: An inherited descriptor holding the seccomp filter program.
            command: The agent's command line.
            timeout_s: When it gets SIGINT (SIGKILL a second later).
        """
        more = ("sys_ptrace",) if self._box(node) else ()  # `ss -p` reads the daemons' fds
        caps = ",".join(f"+{c}" for c in (*_CAPS, *more))
        limits = ["prlimit", f"--nproc={MAX_PROCESSES}", f"--as={MAX_ADDRESS_SPACE}"]
        limits += [f"--fsize={FS_BYTES}", "--nofile=256", "--core=0", "nice", "-n", "10"]
        enter = ["nsenter", f"--user=/proc/self/fd/{userns_fd}", "--"]  # uid 0 there
        drop = ["setpriv", f"--inh-caps=-all,{caps}", f"--bounding-set=-all,{caps}", "--"]
        timer = ["timeout", "-s", "INT", "-k", "1", f"{timeout_s:g}"]
        join = self.group.join_argv()
        box = self._box(node)
        shared = [f"--mount=/proc/{box.pid}/ns/mnt", f"--pid=/proc/{box.pid}/ns/pid"] if box else []
        return [
            *join,
            *limits,
            "nsenter",
            f"--net={NETNS_DIR / netns}",
            *shared,
            "--",
            *self._bwrap(node, seccomp_fd),
            "--",
            *enter,
            *drop,
            *timer,
            "bash",
            "-c",
            command,
        ]

    def run(
        self,
        node: str,
        netns: str,
        userns: str,
        command: str,
        timeout_s: float,
        guard: Callable[[], str | None] | None = None,
    ) -> ExecResult:
        """Run ``command`` as ``bash -c`` on ``node``; bounded in time and output.

        Args:
            node: The machine.
            netns: Its network namespace's name.
            userns: A path to its user namespace (``/proc/<pid>/ns/user``).
            command: The agent's command line.
            timeout_s: The command's time limit, seconds.
            guard: Looks at the node while the command runs; a reason it returns stops
                the command at once (the reason ends its output).

        Raises:
            EmulatorError: The node's user namespace is gone.
        """
        env = {"PATH": _PATH, "HOME": "/root", "USER": "root", "LANG": "C.UTF-8", "TERM": "dumb",
               **LINE_BUFFERED}
        stopped: list[str] = []

        def check() -> bool:
            if guard is not None and (reason := guard()):
                stopped.append(reason)
            return bool(stopped)

        with contextlib.ExitStack() as descriptors:
            userns_fd = open_userns(node, userns)
            descriptors.callback(os.close, userns_fd)
            seccomp_fd = pipe_of(filter_program())
            descriptors.callback(os.close, seccomp_fd)
            argv = self.argv(node, netns, userns_fd, seccomp_fd, command, timeout_s)
            at, end = argv.index("bwrap") + 1, argv.index("--", argv.index("bwrap"))
            options = argv[at:end]  # through a descriptor: `ps` shows no host paths
            args_fd = pipe_of(b"".join(a.encode() + b"\0" for a in options))
            descriptors.callback(os.close, args_fd)
            started = time.monotonic()
            code, raw, killed = run_capped(
                [*argv[:at], "--args", str(args_fd), *argv[end:]],
                timeout_s + 3,
                CAP_READ_BYTES,
                env,
                (userns_fd, seccomp_fd, args_fd),
                check if guard is not None else None,
            )
        self.group.kill()  # what it left running (in a box's PID namespace, it could)
        text = unknown_qdisc_note(command, cap_output(raw))
        if stopped:
            return ExecResult(code, text.rstrip("\n") + f"\n[stopped: {stopped[0]}]")
        late = time.monotonic() - started >= timeout_s
        timed_out = killed or (code in (124, 137) and late)
        if timed_out:
            text = text.rstrip("\n") + "\n" + time_limit_note(command, timeout_s)
        return ExecResult(code, text, timed_out)

    def close(self) -> None:
        """Unmount and remove the episode's filesystem and control group. Idempotent."""
        self.group.close()
        if self._mounted:
            subprocess.run(["umount", "-l", str(self.root)], capture_output=True)
            self._mounted = False
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)


