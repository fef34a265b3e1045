"""A router's box: its FRR daemons in a mount, PID and control group of their own.

Every router's daemons start inside a bubblewrap box made by host root (so the daemons,
root of the node's user namespace only, can change none of its mounts):

* **files**: a read-only root with ``/usr``, the system links and a handful of ``/etc``
  files; writable are only the router's own configuration (``/etc/frr``), run
  (``/var/run/frr``: vty sockets, pid files) and log (``/var/log/frr``) directories,
  and its private ``/tmp``, ``/var/tmp`` and ``/dev/shm``, each a tmpfs of its own with
  a size cap (``SIZES``). ``log file /tmp/x`` or ``dump bgp all /dev/shm/x 60`` writes
  there, in the router's memory, and goes with it; a full directory is the router's
  problem alone;
* **processes**: a PID namespace of its own, which the agent's commands on that router
  share (``sandbox.NodeBox``): ``ps``, ``ss -tlnp`` and ``/var/log/frr`` show the
  router's daemons and logs, as on an FRR machine, and nothing of other routers or the
  host; the vty listens on the router's own loopback only (``-A 127.0.0.1``, as Debian's
  FRR does) and on its unix sockets;
* **limits**: the daemons join the router's child of the episode's control group
  (``cgroups.ROUTER_LIMITS``: memory, tmpfs files included, tasks and CPU) before they
  start, whatever the agent later tells them to do;
* **lifetime**: the box's first process waits on a pipe the evaluator holds, so the box
  and its daemons end when the network closes, or when the evaluator dies.

The judge reaches the box's files through ``/proc/<pid>/root`` (``path``).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.cgroups import ROUTER_LIMITS
from netarena.route.linux.namespaces import NETNS_DIR, OWNER_DIR
from netarena.route.sandbox.capped import pipe_of
from netarena.route.sandbox.sandbox import (
    ETC_FILES,
    EpisodeSandbox,
    NodeBox,
    open_userns,
    system_links,
)

__all__ = ["RouterBox", "SIZES", "WRITABLE", "START_TIMEOUT_S"]

SIZES = {
    "/etc/frr": 4 << 20,
    "/run/frr": 1 << 20,
    "/var/log/frr": 16 << 20,
    "/tmp": 16 << 20,
    "/var/tmp": 16 << 20,
    "/dev/shm": 16 << 20,
}
"""Each writable directory of a router and its size, bytes (a tmpfs of its own)."""
WRITABLE = tuple(SIZES)
"""The directories the router's daemons, and the agent's commands on it, may write."""
START_TIMEOUT_S = 30.0
"""How long a router's daemons may take to start."""
_FRR_BIN = Path("/usr/lib/frr")
_GROUPS = "root:x:0:\nfrr:x:0:\nfrrvty:x:0:root\n"
"""The group file the daemons see: FRR insists its user is in ``frrvty``."""
_PASSWD = "root:x:0:0:root:/root:/bin/sh\n"
_PAM = "auth sufficient pam_permit.so\naccount sufficient pam_permit.so\n"
"""vtysh's PAM service in the sandbox (it has no shadow file to check accounts against)."""
_VTYSH = "service integrated-vtysh-config\n"
_STICKY = ("/tmp", "/var/tmp", "/dev/shm")
_INIT = (
    'unset INIT; chown "$OWNER:$OWNER" /etc/frr /etc/frr/* /run/frr /var/log/frr {sticky}'
    ' && for daemon in $DAEMONS; do nsenter --user=/proc/self/fd/"$USERNS" -- {bin}/$daemon -d'
    " -A 127.0.0.1 -u root -g root -F traditional -f /etc/frr/frr.conf"
    " --log file:/var/log/frr/$daemon.log --log-level warnings || exit 1; done"
    " && unset OWNER DAEMONS USERNS && echo ready && cat >/dev/null 2>&1; kill -KILL -1"
)
"""The box's first process: it hands the directories to the router's root, starts each
daemon as root of the node's user namespace, says so, then waits for its stdin to close
and ends every process of the box (bubblewrap's init waits for them all)."""


class RouterBox:
    """One router's running daemons, in their box.

    Args:
        router: The router (its host name in the box).
        netns: Its network namespace's name.
        userns: A path to its user namespace (``/proc/<pid>/ns/user``).
        config: Its ``frr.conf``.
        daemons: The daemons to start, in order.
        sandbox: The episode's sandbox (its control groups, filesystem and user).

    Raises:
        EmulatorError: The box or a daemon did not start within ``START_TIMEOUT_S``.
    """

    def __init__(
        self,
        router: str,
        netns: str,
        userns: str,
        config: str,
        daemons: tuple[str, ...],
        sandbox: EpisodeSandbox,
    ) -> None:
        self.router = router
        self.pid = 0
        """The box's first process (host pid): its namespaces and root are the box's."""
        with contextlib.ExitStack() as fds:
            userns_fd = open_userns(router, userns)
            fds.callback(os.close, userns_fd)
            data = {name: pipe_of(text.encode()) for name, text in (
                ("passwd", _PASSWD), ("group", _GROUPS), ("pam", _PAM),
                ("conf", config), ("vtysh", _VTYSH))}
            for fd in data.values():
                fds.callback(os.close, fd)
            info_read, info_write = os.pipe()
            fds.callback(os.close, info_read)
            with contextlib.closing(os.fdopen(info_write, "wb", closefd=True)) as info:
                args = self._options(router, data, info.fileno(), sandbox)
                args_fd = pipe_of(b"".join(a.encode() + b"\0" for a in args))
                fds.callback(os.close, args_fd)
                argv = [*sandbox.group.join_argv(router), "nsenter", f"--net={NETNS_DIR / netns}"]
                argv += ["--", "bwrap", "--args", str(args_fd), "--", "sh", "-c", 'eval "$INIT"']
                init = _INIT.format(sticky=" ".join(_STICKY), bin=_FRR_BIN)
                env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8", "INIT": init,
                       "OWNER": str(sandbox.uid), "DAEMONS": " ".join(daemons),
                       "USERNS": str(userns_fd)}
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=env, cwd="/", pass_fds=(userns_fd, args_fd, info.fileno(), *data.values()),
                )
            try:
                info_json = _read(info_read, lambda d: d.rstrip().endswith(b"}"))
                self.pid = int(json.loads(info_json)["child-pid"])
                self._wait_ready()
                sandbox.group.limit(router, ROUTER_LIMITS)  # the CPU quota, once started
            except (OSError, ValueError, KeyError, EmulatorError) as exc:
                self.close()
                raise EmulatorError(f"{router}: FRR did not start: {exc}") from exc

    @staticmethod
    def _options(
        router: str, data: dict[str, int], info_fd: int, sandbox: EpisodeSandbox
    ) -> list[str]:
        """The box's bubblewrap options: its namespaces and files (see the module docstring)."""
        args = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        args += ["--hostname", router, "--info-fd", str(info_fd)]
        args += ["--ro-bind", "/usr", "/usr", *system_links(), "--dir", "/etc"]
        for name in ETC_FILES:
            if (Path("/etc") / name).exists():
                args += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
        for name, path in (("passwd", "/etc/passwd"), ("group", "/etc/group"),
                           ("pam", "/etc/pam.d/frr")):
            args += ["--perms", "0644", "--ro-bind-data", str(data[name]), path]
        args += ["--proc", "/proc", "--remount-ro", "/proc", "--bind", "/proc/sys/net"]
        args += ["/proc/sys/net", "--dev", "/dev", "--dir", "/run", "--dir", "/var/log"]
        args += ["--symlink", "../run", "/var/run"]
        for path, size in SIZES.items():
            perms = "1777" if path in _STICKY else "0755"
            args += ["--perms", perms, "--size", str(size), "--tmpfs", path]
        args += ["--perms", "0644", "--file", str(data["conf"]), "/etc/frr/frr.conf"]
        args += ["--perms", "0644", "--file", str(data["vtysh"]), "/etc/frr/vtysh.conf"]
        # the agent's own files, for its commands' sandboxes: a directory the daemons
        # (no capability over the host's files) cannot enter
        args += ["--perms", "0700", "--dir", str(OWNER_DIR)]
        args += ["--bind", str(sandbox.root), str(sandbox.root)]
        return [*args, "--remount-ro", "/", "--chdir", "/"]

    def _wait_ready(self) -> None:
        """Wait for the box to say its daemons started; its error if it ends first.

        Raises:
            EmulatorError: It ended, or did not finish within ``START_TIMEOUT_S``.
        """
        assert self.proc.stdout is not None and self.proc.stderr is not None
        out = _read(self.proc.stdout.fileno(), lambda d: d.endswith(b"ready\n"))
        if out.endswith(b"ready\n"):
            self.proc.stdout.close()
            self.proc.stderr.close()
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(1)
        error = _read(self.proc.stderr.fileno(), lambda _: False, 5.0).decode(errors="replace")
        raise EmulatorError(error.strip()[-400:] or f"exit {self.proc.poll()}")

    @property
    def node_box(self) -> NodeBox:
        """What the agent's commands on the router join and bind."""
        return NodeBox(self.pid, WRITABLE, ("/etc/pam.d",))

    def path(self, inside: str) -> Path:
        """Where the box's ``inside`` path is, seen from the host."""
        return Path(f"/proc/{self.pid}/root") / inside.lstrip("/")

    def daemon_pids(self) -> dict[str, int]:
        """The router's daemons running now → their host pids.

        They are the children of the box's first process: daemons detach to it.
        """
        found = {}
        with contextlib.suppress(OSError):
            children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
            for pid in children:
                with contextlib.suppress(OSError):
                    found[Path(f"/proc/{pid}/comm").read_text().strip()] = int(pid)
        return found

    def close(self) -> None:
        """Stop the box: its first process sees its stdin close, then everything in it ends.

        Idempotent; the episode's control groups kill whatever is left.
        """
        proc = getattr(self, "proc", None)
        if proc is None:
            return
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(2)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _read(fd: int, done: Callable[[bytes], bool], timeout_s: float = START_TIMEOUT_S) -> bytes:
    """What ``fd`` gives until ``done`` says so or it ends, within ``timeout_s``.

    Raises:
        EmulatorError: Nothing more came within ``timeout_s``.
    """
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    data, end = bytearray(), time.monotonic() + timeout_s
    while not done(bytes(data)):
        if not poller.poll(max(0.0, end - time.monotonic()) * 1000):
            raise EmulatorError(f"no answer within {timeout_s:g} s")
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    return bytes(data)
