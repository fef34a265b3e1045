"""The warm sandbox worker ("zygote"). Runs as its own interpreter, never imported by NetArena.

``netarena.common.sandbox`` starts ``python -I -S`` on this file's *source* (so no NetArena
package is importable from it), sends it a setup program and a payload, and then one request
per agent answer. The zygote forks a fresh child per request; the child drops privileges,
limits itself and arms an audit hook before it touches the untrusted code, so each answer runs
isolated while the preloaded state costs nothing to reuse. Only the standard library here.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import select
import signal
import struct
import sys
import time

# ``typing`` is imported for the type checker only: the zygote should load nothing it does not use.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, BinaryIO, NoReturn

    #: The ``sys.addaudithook`` callback signature.
    AuditHook = Callable[[str, tuple[object, ...]], None]

__all__: list[str] = []

_DENY_PREFIXES = (
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
        # crafted bytecode reads and writes arbitrary memory, which defeats every hook
        "code.__new__",
    }
)


def _read_frame(stream: BinaryIO) -> bytes:
    head = stream.read(4)
    if len(head) < 4:
        raise EOFError
    (size,) = struct.unpack(">I", head)
    return stream.read(size)


def _write_frame(stream: BinaryIO, data: bytes) -> None:
    stream.write(struct.pack(">I", len(data)) + data)
    stream.flush()


def _arm(allowed_imports: Iterable[str]) -> AuditHook:
    """Install the audit hook: no files, sockets, processes or new imports from here on.

    The hook is a closure over private copies of everything it uses (deny lists, ``type``,
    ``str``, the exception classes) and makes no global or builtin lookups: agent code can
    reach this module as ``sys.modules["__main__"]`` and rebind its globals or ``builtins``,
    so a hook that read ``_DENY_PREFIXES`` or ``str`` at call time could be switched off.
    It never calls a method of an agent-supplied object either (a ``str`` subclass with a
    lying ``__str__`` would otherwise pass the import check).
    """
    allowed = frozenset(allowed_imports)
    prefixes = tuple(_DENY_PREFIXES)
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


def _child(
    config: dict[str, Any],
    run: Callable[[object, bytes], bytes],
    state: object,
    request: bytes,
    out_fd: int,
    devnull: int,
) -> NoReturn:
    """Confine this forked process, run the request, write the answer, exit."""
    try:
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        limits = config["limits"]
        cpu = int(limits["cpu_s"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
        if config.get("chroot"):
            os.chroot(config["chroot"])
            os.chdir("/")
        if config.get("uid") is not None and os.geteuid() == 0:
            os.setgroups([])
            os.setgid(config["uid"])
            os.setuid(config["uid"])
        sys.path[:] = []
        sys.path_importer_cache.clear()
        _arm(config["allowed_imports"])
    except BaseException as exc:  # noqa: BLE001 - report confinement failure, never run code
        os.write(out_fd, json.dumps({"sandbox_error": f"confinement failed: {exc}"}).encode())
        os._exit(3)
    try:
        data = run(state, request)
    except BaseException as exc:  # noqa: BLE001 - run() reports agent errors itself
        data = json.dumps({"sandbox_error": f"{type(exc).__name__}: {exc}"[:2000]}).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(out_fd, view) :]
    os._exit(0)


def _reap(pid: int, deadline: float) -> int | None:
    """The child's wait status once it exits, or ``None`` if it is still alive at ``deadline``.

    The child may close its end of the pipe and keep running (sleeping, spinning): EOF is
    no proof of exit, and a blocking ``waitpid`` would hang the worker and orphan the child.
    """
    delay = 0.0002
    while True:
        done, wstatus = os.waitpid(pid, os.WNOHANG)
        if done:
            return wstatus
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(delay, left))
        delay = min(delay * 2, 0.01)


def _collect(
    pid: int, fd: int, wall_s: float, max_bytes: int
) -> tuple[dict[str, str | int | float], bytes]:
    """Read the child's answer within the wall clock; kill it when late or too chatty."""
    chunks: list[bytes] = []
    size, status = 0, "ok"
    deadline = time.monotonic() + wall_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            status = "timeout"
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            status = "output_limit"
            break
    wstatus = _reap(pid, deadline) if status == "ok" else None
    if wstatus is None:
        status = "timeout" if status == "ok" else status
        os.kill(pid, signal.SIGKILL)
        _, wstatus = os.waitpid(pid, 0)
    info: dict[str, str | int | float] = {"status": status, "bytes": size}
    if os.WIFSIGNALED(wstatus):
        info["signal"] = signal.Signals(os.WTERMSIG(wstatus)).name
    elif os.WIFEXITED(wstatus):
        info["exit_code"] = os.WEXITSTATUS(wstatus)
    return info, b"".join(chunks)


def main() -> None:
    """Serve requests from the evaluator on stdin/stdout until EOF."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    config = json.loads(_read_frame(stdin))
    sys.path[:0] = config["paths"]
    setup_source = _read_frame(stdin).decode()
    payload = _read_frame(stdin)
    for name in config["preload"]:
        __import__(name)
    namespace: dict[str, Any] = {"__name__": "sandbox_setup"}  # the setup program defines more
    exec(compile(setup_source, "<sandbox setup>", "exec"), namespace)
    state = namespace["setup"](payload)
    run = namespace["run"]
    devnull = os.open(os.devnull, os.O_RDWR)
    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the children (copy-on-write)
    _write_frame(stdout, b"ready")
    while True:
        try:
            header = json.loads(_read_frame(stdin))
            request = _read_frame(stdin)
        except EOFError:
            return
        rfd, wfd = os.pipe()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(rfd)
            _child(config, run, state, request, wfd, devnull)
        os.close(wfd)
        try:
            info, data = _collect(pid, rfd, header["wall_s"], config["limits"]["max_output_bytes"])
        finally:
            os.close(rfd)
        info["run_s"] = round(time.perf_counter() - started, 6)
        _write_frame(stdout, json.dumps(info).encode())
        _write_frame(stdout, data)


if __name__ == "__main__":
    main()
