"""The kernel layers of the sandbox: a seccomp-bpf system-call allowlist and a Landlock domain.

Standard library plus ``pyseccomp`` (ctypes over the system's libseccomp) only, and no
NetArena import: the warm worker loads this file by path (``zygote.py``), and the evaluator
imports it to probe what the host offers (``host.py``).

Both layers are built once in the warm worker and applied in each forked child just before
the untrusted code runs, so they bind every answer whatever the process's uid:

- **seccomp**: an allowlist of the few system calls a confined Python computation needs
  (memory, time, reading and writing its own descriptors, exiting). Everything else fails
  with ``EPERM``: opening, stat-ing or creating any path (so ``stat("/etc/shadow")`` and
  ``stat("/nonexistent")`` look the same), ``mknod``/``mkfifo``, sockets, ``ptrace``,
  ``execve``, ``fork``/``clone`` (no processes, no threads), ``pidfd_*``, ``io_uring``,
  namespaces. ``kill``/``tgkill`` are allowed only on the child's own pid. Other
  architectures' system-call ABIs (x32, i386) kill the process.
- **Landlock** (ABI >= 1): the filesystem is read-only beneath the Python runtime's
  directories and closed everywhere else; with ABI >= 4 no TCP bind or connect; with ABI >= 6
  no signal to, and no abstract unix socket of, a process outside the child's own domain
  (each child gets its own, so concurrent answers cannot signal each other or the worker).
"""

from __future__ import annotations

import ctypes
import errno
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "SECCOMP_ALLOWED",
    "landlock_abi",
    "landlock_ruleset",
    "landlock_restrict",
    "seccomp_filter",
    "seccomp_lock",
]

#: System calls a confined answer may make with any arguments.
SECCOMP_ALLOWED = (
    # its own descriptors (the answer pipe, /dev/null); no way to open new ones
    "read",
    "write",
    "readv",
    "writev",
    "close",
    "lseek",
    "fstat",
    # memory
    "brk",
    "mmap",
    "munmap",
    "mremap",
    "mprotect",
    "madvise",
    "futex",
    # signals delivered to itself, time, randomness
    "rt_sigaction",
    "rt_sigprocmask",
    "rt_sigreturn",
    "sigaltstack",
    "restart_syscall",
    "clock_gettime",
    "clock_getres",
    "gettimeofday",
    "time",
    "times",
    "clock_nanosleep",
    "nanosleep",
    "getrandom",
    "sched_yield",
    "getrusage",
    # harmless identity questions (answered from inside the sandbox)
    "getpid",
    "gettid",
    "getppid",
    "getuid",
    "geteuid",
    "getgid",
    "getegid",
    "getcwd",
    "uname",
    "exit",
    "exit_group",
)
#: System calls allowed only when their first argument is 0 (the calling process).
_SELF_ZERO = ("prlimit64", "sched_getaffinity")
#: System calls allowed only when their first argument is the child's own pid.
_SELF_PID = ("kill", "tgkill")

_PR_SET_NO_NEW_PRIVS = 38
_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
_LANDLOCK_RULE_NET_PORT = 2
_ACCESS_FS_EXECUTE = 1 << 0
_ACCESS_FS_WRITE_FILE = 1 << 1
_ACCESS_FS_READ_FILE = 1 << 2
_ACCESS_FS_READ_DIR = 1 << 3
_ACCESS_FS_TRUNCATE = 1 << 14
_ACCESS_FS_IOCTL_DEV = 1 << 15
#: Rights a rule on a file (not a directory) may grant.
_FILE_RIGHTS = (
    _ACCESS_FS_EXECUTE
    | _ACCESS_FS_WRITE_FILE
    | _ACCESS_FS_READ_FILE
    | _ACCESS_FS_TRUNCATE
    | _ACCESS_FS_IOCTL_DEV
)
_NET_CONNECT_TCP = 1 << 1
#: Filesystem rights each ABI version handles (v2 adds REFER, v3 TRUNCATE, v5 IOCTL_DEV).
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_NET_TCP_BIND_CONNECT = 0b11  # ABI 4
_SCOPE_UNIX_AND_SIGNAL = 0b11  # ABI 6

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPortAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


def _syscall(number: int, *args: Any) -> int:
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))
    return result


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers, or 0 when it has none (or it is disabled)."""
    try:
        return _syscall(
            _SYS_LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION),
        )
    except OSError:
        return 0


def landlock_ruleset(
    readable: Iterable[str],
    *,
    executable: Iterable[str] = (),
    writable: Iterable[str] = (),
    connect_ports: Iterable[int] = (),
) -> int:
    """A Landlock ruleset that allows what the arguments grant and nothing else.

    Args:
        readable: Directories (or files) that stay readable, e.g. the Python runtime.
        executable: Files (or directories) that may also be run.
        writable: Directories (or files) where everything but running programs is allowed.
        connect_ports: TCP ports that may be connected to (ABI >= 4; no other connect and
            no bind either way).

    Returns:
        The ruleset's file descriptor (give it to ``landlock_restrict`` in each child), or
        -1 when the kernel has no Landlock.
    """
    abi = landlock_abi()
    if abi < 1:
        return -1
    fs = _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= abi)]
    attr = _RulesetAttr(fs, _NET_TCP_BIND_CONNECT if abi >= 4 else 0)
    attr.scoped = _SCOPE_UNIX_AND_SIGNAL if abi >= 6 else 0
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = _syscall(
        _SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    grants: dict[str, int] = {}
    for paths, rights in (
        (readable, _ACCESS_FS_READ_FILE | _ACCESS_FS_READ_DIR),
        (executable, _ACCESS_FS_READ_FILE | _ACCESS_FS_READ_DIR | _ACCESS_FS_EXECUTE),
        (writable, fs & ~_ACCESS_FS_EXECUTE),
    ):
        for path in paths:
            grants[path] = grants.get(path, 0) | rights
    for path, rights in sorted(grants.items()):
        _add_path_rule(ruleset, path, rights & fs)
    for port in sorted(set(connect_ports)) if abi >= 4 else ():
        rule = _NetPortAttr(_NET_CONNECT_TCP, port)
        _syscall(
            _SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LANDLOCK_RULE_NET_PORT),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    return ruleset


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a runtime directory that does not exist here grants nothing
    try:
        rule = _PathBeneathAttr(rights if os.path.isdir(path) else rights & _FILE_RIGHTS, fd)
        _syscall(
            _SYS_LANDLOCK_ADD_RULE,
            ctypes.c_int(ruleset),
            ctypes.c_int(_LANDLOCK_RULE_PATH_BENEATH),
            ctypes.byref(rule),
            ctypes.c_uint32(0),
        )
    finally:
        os.close(fd)


def _no_new_privileges() -> None:
    if _libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"prctl(PR_SET_NO_NEW_PRIVS): {os.strerror(code)}")


def landlock_restrict(ruleset: int) -> None:
    """Enter a new Landlock domain built from ``ruleset`` (this process and its future children).

    Also sets ``no_new_privs``, which Landlock and seccomp both require of an unprivileged
    caller (and which stops a set-uid program from regaining privileges).
    """
    _no_new_privileges()
    _syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))


def seccomp_filter() -> Any:
    """The pid-independent part of the allowlist, compiled per child by ``seccomp_lock``.

    Returns:
        A ``pyseccomp.SyscallFilter`` (default action ``EPERM``; foreign ABIs kill).

    Raises:
        ImportError, RuntimeError: pyseccomp or libseccomp is missing.
    """
    import pyseccomp as sc

    rules = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    rules.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
    for name in SECCOMP_ALLOWED:
        _allow(rules, name)
    for name in _SELF_ZERO:
        _allow(rules, name, sc.Arg(0, sc.EQ, 0))
    return rules


def _allow(rules: Any, name: str, *args: Any) -> None:
    import pyseccomp as sc

    if sc.resolve_syscall(sc.Arch.NATIVE, name) < 0:
        return  # not a system call on this architecture (``time`` on arm64, say)
    rules.add_rule(sc.ALLOW, name, *args)


def seccomp_lock(rules: Any, pid: int) -> None:
    """Load ``rules`` into this process, allowing ``kill``/``tgkill`` on ``pid`` (itself) only.

    Irreversible: from here on every system call outside the allowlist fails with ``EPERM``.
    """
    import pyseccomp as sc

    for name in _SELF_PID:
        _allow(rules, name, sc.Arg(0, sc.EQ, pid))
    _no_new_privileges()
    rules.load()
