"""The system calls an agent's shell may not make: a seccomp filter handed to bubblewrap.

The shell runs any program, so this is a deny list over "allowed", in the spirit of a
container runtime's default profile: kernel interfaces a network operator never needs,
that would reach past the node or that widen the kernel's attack surface fail with
``EPERM``:

* **namespaces**: ``unshare`` and ``clone`` with any ``CLONE_NEW*`` flag (a new user
  namespace would hand its creator every capability over the namespaces it then makes),
  ``setns`` into anything but a user namespace (the sandbox's own ``nsenter`` steps into
  the node's user namespace after this filter is in place; the agent then lacks the
  CAP_SYS_ADMIN any ``setns`` needs). ``clone3``, whose flags live in memory a filter
  cannot read, reports ``ENOSYS`` so the C library falls back to ``clone``;
* **mounts**: ``mount``, ``umount2``, ``pivot_root`` and the new mount API;
* **other processes' memory**: ``ptrace``, ``process_vm_readv``/``process_vm_writev`` and
  ``pidfd_getfd`` (on a router, the command shares a PID namespace with the router's
  daemons, which it may see, signal and list the sockets of, as root on an FRR machine
  does, but not take over);
* **kernel state shared with the host**: the keyrings (``keyctl``, ``add_key``,
  ``request_key``), the kernel log (``syslog``), ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``io_uring``, modules, ``kexec``, ``reboot``, swap, accounting, quotas
  and the clocks.

System calls of a foreign ABI (i386, x32 on x86-64) kill the process.
"""

from __future__ import annotations

import errno
import functools
import tempfile
from typing import Any

__all__ = ["DENIED", "filter_program"]

DENIED = (
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "keyctl",
    "add_key",
    "request_key",
    "syslog",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "lookup_dcookie",
    "open_by_handle_at",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_getfd",
)
"""System calls refused whatever their arguments."""

_CLONE_NEW_FLAGS = (
    0x00000080,  # CLONE_NEWTIME
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)
_CLONE_NEWUSER = 0x10000000


def _rules() -> Any:
    import pyseccomp as sc

    rules = sc.SyscallFilter(sc.ALLOW)
    rules.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    refuse = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        if sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0:
            rules.add_rule(refuse, name)
    for flag in _CLONE_NEW_FLAGS:  # clone's flags are its first argument on x86-64 and arm64
        for name in ("unshare", "clone"):
            rules.add_rule(refuse, name, sc.Arg(0, sc.MASKED_EQ, flag, flag))
    rules.add_rule(refuse, "setns", sc.Arg(1, sc.NE, _CLONE_NEWUSER))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return rules


@functools.cache
def filter_program() -> bytes:
    """The compiled filter (classic BPF), as ``bwrap --seccomp FD`` reads it.

    Raises:
        ImportError, OSError: pyseccomp or the system's libseccomp is missing.
    """
    with tempfile.TemporaryFile() as out:
        _rules().export_bpf(out)
        out.seek(0)
        program = out.read()
    if not program or len(program) % 8:
        raise OSError("libseccomp exported no filter program")
    return program
