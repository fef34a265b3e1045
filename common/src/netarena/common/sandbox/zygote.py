"""The warm sandbox worker ("zygote"). Runs as its own interpreter, never imported by NetArena.

``netarena.common.sandbox`` starts ``python -I -S`` on this file (so no NetArena package is
importable from it) with an empty environment and one end of a unix socket. It reads a setup
program and its payload from stdin, runs the setup once, prepares the kernel layers (a
Landlock ruleset, the seccomp allowlist) and says ``ready``. Then, per answer, it receives
two descriptors over the socket: a memfd holding the agent's code and the write end of a
pipe whose read end the evaluator keeps. It forks; the child reads the code, confines itself
(``confine.py``, ``kernel.py``), runs it and writes its answer straight to the pipe; the
worker only waits for the child (wall clock) and reports how it ended.

The worker never reads an answer or holds one: what a previous answer computed, printed or
planted lived in a child that is gone, so no later answer (of the same agent or another
evaluation's) can find it in the worker's memory, frames, modules or garbage collector.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import select
import signal
import socket
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Any, BinaryIO, NoReturn

    from netarena.common.sandbox import confine, kernel
else:

    def _sibling(name: str) -> ModuleType:
        """Load ``<name>.py`` from this directory (the worker has no package to import from)."""
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"_netarena_sandbox_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    confine, kernel = _sibling("confine"), _sibling("kernel")

__all__: list[str] = []

def _read_frame(stream: BinaryIO) -> bytes:
    head = stream.read(4)
    if len(head) < 4:
        raise EOFError
    (size,) = struct.unpack(">I", head)
    return stream.read(size)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class Warm:
    """The warm state: the setup program's result, its ``run`` and the prepared layers."""

    def __init__(self, config: dict[str, Any], setup_source: str, payload: bytes) -> None:
        """Run the setup program and prepare the kernel layers (before any answer)."""
        self.config = config
        sys.path[:0] = config["paths"]
        for name in config["preload"]:
            __import__(name)
        namespace: dict[str, Any] = {"__name__": "sandbox_setup"}  # the program defines more
        exec(compile(setup_source, "<sandbox setup>", "exec"), namespace)
        self.state = namespace["setup"](payload)
        self.run: Callable[[object, bytes], bytes] = namespace["run"]
        self.rules = kernel.seccomp_filter()
        self.ruleset = kernel.landlock_ruleset(config["readable"])
        self.devnull = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)

    def answer(self, request_fd: int, out_fd: int, wall_s: float) -> dict[str, Any]:
        """Run one answer in a fresh child; its status once it has ended (or been killed)."""
        started = time.perf_counter()
        confined_r, confined_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(confined_r)
            self._child(request_fd, out_fd, confined_w)
        for fd in (request_fd, out_fd, confined_w):
            os.close(fd)
        try:
            status = _wait(pid, confined_r, time.monotonic() + wall_s)
        finally:
            os.close(confined_r)
        status["run_s"] = round(time.perf_counter() - started, 6)
        return status

    def _child(self, request_fd: int, out_fd: int, confined_fd: int) -> NoReturn:
        """Confine this forked process, say so, run the request, write the answer, exit."""
        try:
            request = _read_all(request_fd)
            confine.isolate(keep=(out_fd, confined_fd, self.ruleset), devnull=self.devnull)
            confine.limit(self.config["limits"])
            confine.drop_identity(self.config["chroot"], self.config["per_answer_uid"])
            if self.ruleset >= 0:
                kernel.landlock_restrict(self.ruleset)
                os.close(self.ruleset)
            kernel.seccomp_lock(self.rules, os.getpid())
            sys.path[:] = []
            sys.path_importer_cache.clear()
            confine.forget_machinery(self.config["allowed_imports"])
            if self.config["audit_hook"]:
                confine.arm_audit_hook(self.config["allowed_imports"])
            os.write(confined_fd, b"!")  # the worker records it: the code cannot take it back
            os.close(confined_fd)
        except BaseException as exc:  # noqa: BLE001 - report confinement failure, never run code
            _write_all(out_fd, f"confinement failed: {type(exc).__name__}: {exc}".encode())
            os._exit(confine.CONFINEMENT_FAILED)
        try:
            data = self.run(self.state, request)
        except BaseException as exc:  # noqa: BLE001 - run() reports agent errors itself
            data = json.dumps({"sandbox_error": f"{type(exc).__name__}: {exc}"[:2000]}).encode()
        try:
            _write_all(out_fd, data)
        except OSError:
            os._exit(1)  # the evaluator stopped reading (answer over its size limit)
        os._exit(0)


def _wait(pid: int, confined_fd: int, deadline: float) -> dict[str, Any]:
    """Wait for the child until ``deadline`` (then kill it); how it ended and if it was confined.

    Waits on a pidfd (readable when the child exits) where the kernel has them, so the
    answer is reported the moment it ends; polls with a growing delay otherwise. The child
    writes one byte to ``confined_fd`` once every layer is in place, before the agent's code
    runs; it is read here as it arrives, so nothing the code does later can change it.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        pidfd = -1
    delay, status, confined, watching = 0.0002, "ok", False, True
    try:
        while True:
            done, wstatus = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                status = "timeout"
                os.kill(pid, signal.SIGKILL)
                _, wstatus = os.waitpid(pid, 0)
                break
            watch = ([pidfd] if pidfd >= 0 else []) + ([confined_fd] if watching else [])
            timeout = left if pidfd >= 0 else min(delay, left)
            delay = min(delay * 2, 0.01)
            if confined_fd in select.select(watch, [], [], timeout)[0]:
                confined, watching = os.read(confined_fd, 1) == b"!", False
    finally:
        if pidfd >= 0:
            os.close(pidfd)
    if watching:  # the child has exited: the byte is there, or the pipe is at its end
        confined = os.read(confined_fd, 1) == b"!"
    info: dict[str, Any] = {"status": status, "confined": confined}
    if os.WIFSIGNALED(wstatus):
        info["signal"] = signal.Signals(os.WTERMSIG(wstatus)).name
    elif os.WIFEXITED(wstatus):
        info["exit_code"] = os.WEXITSTATUS(wstatus)
    return info


def serve(control: socket.socket, warm: Warm) -> None:
    """Answer requests from the evaluator until it closes the socket."""
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 1024, 2)
        except OSError:
            return
        if not message:
            return
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            control.send(json.dumps({"status": "protocol", "fds": len(fds)}).encode())
            continue
        wall_s = float(json.loads(message)["wall_s"])
        control.send(json.dumps(warm.answer(fds[0], fds[1], wall_s)).encode())


def main() -> None:
    """Load the warm state from stdin, say ``ready`` (or why not) and serve."""
    control = socket.socket(fileno=int(sys.argv[1]))
    stdin = sys.stdin.buffer
    try:
        config = json.loads(_read_frame(stdin))
        warm = Warm(config, _read_frame(stdin).decode(), _read_frame(stdin))
    except BaseException as exc:  # noqa: BLE001 - tell the evaluator why, then stop
        control.send(json.dumps({"error": f"{type(exc).__name__}: {exc}"[:2000]}).encode())
        return
    os.close(0)
    gc.collect()
    gc.freeze()  # keep the preloaded heap shared with the children (copy-on-write)
    control.send(json.dumps({"ready": True, "landlock": warm.ruleset >= 0}).encode())
    serve(control, warm)


if __name__ == "__main__":
    main()
