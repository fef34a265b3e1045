"""The process-level steps that confine a forked child before it runs an answer.

Standard library only and no NetArena import: the warm worker loads this file by path. The
worker (``zygote.py``) calls these in order: ``isolate`` (descriptors, session, environment),
``limit`` (rlimits), ``drop_identity`` (chroot and a uid of its own, when root), then the
kernel layers (``kernel.py``), then ``arm_audit_hook``.

The audit hook is the second layer: it turns what agents commonly try (``open``,
``os.listdir``, ``import socket``) into a clear message before the kernel is even asked. It
is not the boundary: code that corrupts memory or reaches ``ctypes`` can get past it, and
then seccomp and Landlock still refuse the system call.
"""

from __future__ import annotations

import os
import resource
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Mapping

    #: The ``sys.addaudithook`` callback signature.
    AuditHook = Callable[[str, tuple[object, ...]], None]

__all__ = [
    "CONFINEMENT_FAILED",
    "DENY_PREFIXES",
    "MACHINERY_MODULES",
    "UID_BASE",
    "arm_audit_hook",
    "drop_identity",
    "forget_machinery",
    "isolate",
    "limit",
]

#: Exit code of a child whose confinement failed (the agent's code never ran).
CONFINEMENT_FAILED = 3

#: Root mode runs each answer as ``UID_BASE + pid``: a uid of its own that no account, file
#: or other process has, so it can signal nothing but itself even without the kernel layers.
UID_BASE = 2_000_000_000

#: Modules the worker loads for its own use (the seccomp binding and what it imports).
MACHINERY_MODULES = frozenset(
    {"ctypes", "_ctypes", "pyseccomp", "subprocess", "_posixsubprocess", "fcntl"}
)

#: Audit events refused by prefix (clear messages for what the kernel refuses anyway).
DENY_PREFIXES = (
    "os.",
    "socket.",
    "subprocess.",
    "shutil.",
    "ctypes.",
    "urllib.",
    "http.",
    "ftplib.",
    "smtplib.",
    "telnetlib.",
    "poplib.",
    "imaplib.",
    "nntplib.",
    "webbrowser.",
    "mmap.",
    "fcntl.",
    "pty.",
    "resource.",
    "signal.",
    "sqlite3.",
    "glob.",
    "pathlib.",
    "tempfile.",
    "gc.",
    "pickle.",
    "marshal.",
    "_posixsubprocess.",
    "syslog.",
    "sys.remote_exec",
    "sys.settrace",
    "sys.setprofile",
    "_thread.start_new_thread",
)
_DENY_EXACT = frozenset(
    {
        "open",
        "builtins.input",
        "os.system",
        "cpython.remote_debugger_script",
        # crafted bytecode reads and writes arbitrary memory
        "code.__new__",
    }
)


def isolate(keep: Collection[int], devnull: int) -> None:
    """Close every descriptor but ``keep``, point 0-2 at ``devnull``, leave the session.

    The worker's own pipes and control socket are closed, so the answer cannot talk to the
    evaluator except through the result pipe it was given; the environment is emptied.
    """
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    previous = 2
    for fd in sorted(fd for fd in keep if fd > previous):
        os.closerange(previous + 1, fd)
        previous = fd
    os.closerange(previous + 1, os.sysconf("SC_OPEN_MAX"))
    os.setsid()
    os.environ.clear()


def limit(limits: Mapping[str, int | float]) -> None:
    """Set the rlimits: CPU seconds, address space, descriptors; no files, cores or processes."""
    cpu = int(limits["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(limits["memory_bytes"])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    files = int(limits["open_files"])
    resource.setrlimit(resource.RLIMIT_NOFILE, (files, files))


def drop_identity(chroot: str | None, per_answer_uid: bool) -> None:
    """Root mode: chroot into an empty directory and become a uid nobody else has.

    Unprivileged mode (both off): only ``chdir("/")``, so the working directory says nothing.
    """
    if chroot:
        os.chroot(chroot)
    os.chdir("/")
    if per_answer_uid:
        uid = UID_BASE + os.getpid()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)


def forget_machinery(allowed_imports: Collection[str]) -> None:
    """Drop the sandbox machinery's own modules (ctypes, the seccomp binding) from sys.modules.

    So ``import ctypes`` in an answer is a refused import again, as it was before the worker
    loaded them (the objects stay reachable by other means: the hook is not the boundary).
    """
    for name in [m for m in sys.modules if m.partition(".")[0] in MACHINERY_MODULES]:
        if name.partition(".")[0] not in allowed_imports:
            del sys.modules[name]


def arm_audit_hook(allowed_imports: Iterable[str]) -> AuditHook:
    """Install the audit hook: no files, sockets, processes or new imports from here on.

    The hook is a closure over private copies of everything it uses (deny lists, ``type``,
    ``str``, the exception classes) and makes no global or builtin lookups: agent code can
    reach this module and rebind its globals or ``builtins``, so a hook that read
    ``DENY_PREFIXES`` or ``str`` at call time could be switched off. It never calls a method
    of an agent-supplied object either (a ``str`` subclass with a lying ``__str__`` would
    otherwise pass the import check).
    """
    allowed = frozenset(allowed_imports)
    prefixes = tuple(DENY_PREFIXES)
    exact = frozenset(_DENY_EXACT)
    exact_types = (str, int)
    str_type = str
    type_of = type
    refuse = PermissionError
    refuse_import = ImportError

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "import":
            name = args[0] if args else None
            if type_of(name) is not str_type:
                raise refuse_import("sandbox: import by a non-str name is not allowed")
            # Checked just above; narrowing with isinstance() would be a builtin lookup.
            module: str = name  # type: ignore[assignment]
            if module.partition(".")[0] not in allowed:
                raise refuse_import(f"sandbox: import of {name!r} is not allowed")
        elif event in exact or event.startswith(prefixes):
            first = args[0] if args else None
            detail = f" {first!r}"[:300] if type_of(first) in exact_types else ""
            raise refuse("sandbox: " + event + detail + " is not allowed")

    sys.addaudithook(hook)
    return hook
