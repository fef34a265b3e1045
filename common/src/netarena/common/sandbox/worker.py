"""The evaluator's handle on one warm worker process (``zygote.py``) and its wire protocol.

Control messages travel over a unix ``SOCK_SEQPACKET`` pair (one JSON message each); the
agent's code and its answer never do. Per answer the evaluator puts the code in a memfd,
opens a pipe, and passes the memfd and the pipe's write end to the worker (``SCM_RIGHTS``);
the forked child reads the code and writes its answer to the pipe; the evaluator reads the
pipe itself, with a byte limit, and stops reading (so the child dies on its next write) as
soon as the limit is passed: an oversized answer never grows the evaluator past the limit.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import select
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from netarena.common.core.errors import SandboxError, SandboxUnavailable
from netarena.common.sandbox.spec import SandboxLimits, SandboxSpec

__all__ = ["Worker", "WorkerOptions"]

log = logging.getLogger(__name__)

_ZYGOTE = Path(__file__).with_name("zygote.py")
#: Modules the worker itself needs besides the spec's (the seccomp binding).
_WORKER_IMPORTS = ("pyseccomp",)
#: A worker loads the app's data before it is ready: seconds on an idle host, many times
#: that on a loaded one (CI); no agent waits on it, so the limit only catches a hang.
_START_TIMEOUT_S = 300.0
#: How long past an answer's wall clock the worker may take to report it.
_GRACE_S = 10.0
_CHUNK = 1 << 20


class WorkerOptions(BaseModel):
    """The layers a pool asks of its workers (decided from the host's start-up checks)."""

    model_config = ConfigDict(frozen=True)

    unshare: str | None = None
    """Path of ``unshare`` to start the worker in a new network namespace, or ``None``."""
    chroot: str | None = None
    """Empty directory each answer is chrooted into, or ``None``."""
    per_answer_uid: bool = False
    """Run each answer as a uid of its own (needs CAP_SETUID)."""


def _import_root(name: str) -> tuple[str, str]:
    """The ``sys.path`` entry that provides module ``name`` and the module's own file or dir."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise SandboxError(f"sandbox: module {name!r} is not installed")
    origin = Path(spec.origin).resolve()
    own = origin.parent if spec.submodule_search_locations else origin
    return str(own.parent), str(own)


def _runtime_dirs() -> list[str]:
    """The interpreter's standard library (pure and compiled parts)."""
    import sysconfig

    paths = sysconfig.get_paths()
    return sorted({str(Path(paths[key]).resolve()) for key in ("stdlib", "platstdlib")})


def _config(spec: SandboxSpec, limits: SandboxLimits, options: WorkerOptions) -> dict[str, Any]:
    roots = [_import_root(m) for m in (*spec.preload, *_WORKER_IMPORTS)]
    top_level = {m.split(".")[0] for m in (*spec.allowed_imports, *spec.preload)}
    return {
        "limits": limits.model_dump(),
        "paths": sorted({path for path, _ in roots}),
        "readable": _runtime_dirs() + [own for _, own in roots],
        "preload": list(spec.preload) + [m for m in spec.allowed_imports if m not in spec.preload],
        "allowed_imports": sorted(top_level),
        "chroot": options.chroot,
        "per_answer_uid": options.per_answer_uid,
        "audit_hook": spec.audit_hook,
    }


class Worker:
    """One warm worker process and its control socket. Used by one thread at a time."""

    def __init__(self, spec: SandboxSpec, limits: SandboxLimits, options: WorkerOptions) -> None:
        """Start the worker (it finishes loading in the background; ``run`` waits for it)."""
        self.limits = limits
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        cmd = [sys.executable, "-I", "-S", str(_ZYGOTE), str(theirs.fileno())]
        if options.unshare:
            cmd = [options.unshare, "--net", "--", *cmd]
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(theirs.fileno(),),
            env={},  # the evaluator's secrets (API keys) never reach agent code
        )
        theirs.close()
        self._control = ours
        self._ready = False
        frames = (
            json.dumps(_config(spec, limits, options)).encode(),
            spec.setup_source.encode(),
            spec.payload,
        )
        assert self.proc.stdin is not None
        try:
            for frame in frames:
                self.proc.stdin.write(struct.pack(">I", len(frame)) + frame)
            self.proc.stdin.close()
        except OSError:  # it died at once; ``run`` reports why (or that it said nothing)
            log.warning("sandbox worker %s exited during start-up", self.proc.pid)

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        self._control.settimeout(max(timeout_s, 0.001))
        try:
            message = self._control.recv(65536)
        except OSError as exc:  # TimeoutError included
            self.kill()
            raise SandboxError("sandbox worker stopped responding") from exc
        if not message:
            self.kill()
            raise SandboxError("sandbox worker died")
        try:
            info = json.loads(message)
        except ValueError:
            info = None
        if not isinstance(info, dict):
            self.kill()
            raise SandboxError("sandbox worker sent a malformed message")
        return info

    def _await_ready(self) -> None:
        if self._ready:
            return
        try:
            hello = self._receive(_START_TIMEOUT_S)
        except SandboxError as exc:
            raise SandboxUnavailable(f"sandbox worker failed to start: {exc}") from exc
        if hello.get("ready") is not True:
            self.kill()
            reason = hello.get("error") or "it sent no ready message"
            raise SandboxUnavailable(f"sandbox worker failed to start: {str(reason)[:500]}")
        self._ready = True

    def run(self, request: bytes, wall_s: float) -> tuple[dict[str, Any], bytes]:
        """Run one answer; its status (from the worker) and its output (read here, capped).

        Any failure leaves the worker killed (never half-read and reusable), since a
        desynchronised worker would hand the next caller someone else's status.
        """
        self._await_ready()
        out_r, out_w = os.pipe()
        try:
            code = os.memfd_create("netarena-answer", os.MFD_CLOEXEC)
            try:
                _write_all(code, request)
                os.lseek(code, 0, os.SEEK_SET)
                header = json.dumps({"wall_s": wall_s}).encode()
                socket.send_fds(self._control, [header], [code, out_w])
            finally:
                os.close(code)
                os.close(out_w)
            return self._collect(out_r, time.monotonic() + wall_s + _GRACE_S)
        except OSError as exc:
            self.kill()
            raise SandboxError(f"sandbox worker died: {exc}") from exc
        finally:
            _close_quietly(out_r)

    def _collect(self, out_r: int, deadline: float) -> tuple[dict[str, Any], bytes]:
        """Read the answer pipe (at most ``max_output_bytes``) and the worker's status."""
        limit = self.limits.max_output_bytes
        chunks: list[bytes] = []
        size, over = 0, False
        info: dict[str, Any] | None = None
        poller = select.poll()  # not select(): a busy server's descriptors pass 1024
        poller.register(out_r, select.POLLIN)
        poller.register(self._control, select.POLLIN)
        reading = True
        while info is None or reading:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise SandboxError("sandbox worker stopped responding")
            for fd, _ in poller.poll(left * 1000):
                if fd == out_r:
                    chunk = os.read(out_r, min(_CHUNK, limit + 1 - size))
                    size += len(chunk)
                    if not chunk or size > limit:
                        over, reading = size > limit, False
                        poller.unregister(out_r)
                        if over:
                            _stop_reading(out_r)
                    else:
                        chunks.append(chunk)
                elif info is None:
                    info = self._receive(0.001)
                    poller.unregister(self._control)
                    if not isinstance(info.get("status"), str):
                        self.kill()
                        raise SandboxError("sandbox worker sent a malformed status")
        if over:
            info = {**info, "status": "output_limit"}
        return info, b"".join(chunks)

    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """Stop the worker process and close its socket (idempotent)."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("sandbox worker %s did not exit", self.proc.pid)
        self._control.close()


def _stop_reading(fd: int) -> None:
    """Make ``fd`` a closed pipe for its writer without freeing the descriptor number yet."""
    devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.dup2(devnull, fd)  # the pipe's last reader is gone: the child's next write fails
    finally:
        os.close(devnull)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _close_quietly(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
