"""Run untrusted agent code in a pool of warm, confined, forking worker processes.

Each worker (``sandbox_zygote.py``) is a separate ``python -I -S`` interpreter started with no
NetArena package on its path; as root it also lives in a fresh network namespace (``unshare
--net``: no interface but a down loopback). It loads an app-supplied setup program once (the
topology, say) and then serves requests: each runs in a fresh ``fork`` of the warm worker, so
the preloaded state is shared copy-on-write and every answer starts from the pristine state.
Before running the code the child sets rlimits (CPU seconds, address space, no processes, few
file descriptors, zero file size), chroots into an empty directory and drops to ``nobody``
when root, and arms an audit hook that refuses file access, sockets, processes and imports
outside an allowlist. The wall clock is enforced by the worker and, as a backstop, here.

Answers come back as bytes the app's ``run`` function produced (JSON by convention); nothing
is unpickled on the evaluator side.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field

from netarena.common.errors import SandboxError, SandboxTimeout

__all__ = ["SandboxLimits", "SandboxSpec", "SandboxResult", "SandboxPool", "shared_pool"]

log = logging.getLogger(__name__)

_ZYGOTE = Path(__file__).with_name("sandbox_zygote.py")
_NOBODY = 65534
_SIGNAL_REASONS = {
    "SIGXCPU": "ran past its CPU-time limit",
    "SIGKILL": "was killed (CPU hard limit or memory exhaustion)",
    "SIGXFSZ": "tried to write a file",
    "SIGSEGV": "crashed (segmentation fault)",
    "SIGABRT": "aborted",
}

#: Standard-library modules agent code may import (preloaded before confinement).
SAFE_STDLIB = (
    "math",
    "cmath",
    "statistics",
    "collections",
    "itertools",
    "functools",
    "operator",
    "heapq",
    "bisect",
    "copy",
    "re",
    "json",
    "string",
    "random",
    "decimal",
    "fractions",
    "typing",
    "dataclasses",
    "enum",
    "numbers",
    "datetime",
    "abc",
    "types",
    "textwrap",
    "pprint",
    "array",
    "time",
    "contextlib",
    "warnings",
    "traceback",
    "encodings.idna",
)


class SandboxLimits(BaseModel):
    """Per-answer resource limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float = Field(5.0, gt=0)
    """Wall-clock limit of one run, seconds."""
    cpu_s: int = Field(5, ge=1)
    """CPU-time limit (``RLIMIT_CPU`` soft; the hard limit is one second more)."""
    memory_bytes: int = Field(1_536 * 1024 * 1024, ge=256 * 1024 * 1024)
    """Address-space limit (``RLIMIT_AS``), bytes."""
    open_files: int = Field(32, ge=8)
    """``RLIMIT_NOFILE``."""
    max_output_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    """Largest answer accepted from a run, bytes."""


class SandboxSpec(BaseModel):
    """What the warm workers hold: a setup program, its payload and the import allowlist.

    ``setup_source`` must define ``setup(payload: bytes) -> state`` (run once per worker,
    before confinement) and ``run(state, request: bytes) -> bytes`` (run in each confined
    child). It may import only the standard library and ``preload`` modules.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    setup_source: str
    payload: bytes = b""
    preload: tuple[str, ...] = ()
    """Third-party modules to import in the worker (e.g. ``networkx``)."""
    allowed_imports: tuple[str, ...] = SAFE_STDLIB
    """Top-level module names agent code may import (must be preloaded to work when root)."""

    def key(self) -> str:
        """A digest identifying this spec, for sharing pools."""
        digest = hashlib.sha256(self.setup_source.encode() + b"\0" + self.payload)
        digest.update(json.dumps([self.preload, self.allowed_imports]).encode())
        return digest.hexdigest()[:16]


class SandboxResult(BaseModel):
    """One run's output and how it ended."""

    model_config = ConfigDict(frozen=True)

    output: bytes
    """What ``run`` returned (JSON by convention)."""
    run_s: float
    """Fork-to-exit time of the child, seconds."""


def _module_dir(name: str) -> str:
    module = __import__(name)
    return str(Path(module.__file__ or "").resolve().parent.parent)


class _Worker:
    """One warm zygote process and its pipes. Used by one thread at a time."""

    def __init__(
        self, spec: SandboxSpec, limits: SandboxLimits, chroot: str | None, privileged: bool
    ) -> None:
        """Start ``workers`` warm workers for ``spec`` (they finish loading in the background)."""
        config = {
            "limits": limits.model_dump(),
            "paths": sorted({_module_dir(m) for m in spec.preload}),
            "preload": list(spec.preload)
            + [m for m in spec.allowed_imports if m not in spec.preload],
            "allowed_imports": sorted(
                {m.split(".")[0] for m in (*spec.allowed_imports, *spec.preload)}
            ),
            "chroot": chroot,
            "uid": _NOBODY if privileged else None,
        }
        cmd = [sys.executable, "-I", "-S", str(_ZYGOTE)]
        if privileged and shutil.which("unshare"):
            cmd = ["unshare", "--net", *cmd]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in: IO[bytes] = self.proc.stdin
        self._out: IO[bytes] = self.proc.stdout
        self._ready = False
        for frame in (json.dumps(config).encode(), spec.setup_source.encode(), spec.payload):
            self._send(frame)

    def _send(self, data: bytes) -> None:
        self._in.write(struct.pack(">I", len(data)) + data)
        self._in.flush()

    def _recv(self, timeout_s: float) -> bytes:
        result: list[bytes] = []

        def read() -> None:
            head = self._out.read(4)
            if len(head) == 4:
                result.append(self._out.read(struct.unpack(">I", head)[0]))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if reader.is_alive() or not result:
            self.kill()
            raise SandboxError("sandbox worker stopped responding")
        return result[0]

    def run(self, request: bytes, wall_s: float) -> tuple[dict[str, Any], bytes]:
        """Send one request and read its info and output frames.

        Any failure leaves the worker killed (never half-read and reusable), since a
        desynchronised pipe would hand the next caller someone else's answer.
        """
        if not self._ready:
            if self._recv(60.0) != b"ready":
                self.kill()
                raise SandboxError("sandbox worker failed to start")
            self._ready = True
        try:
            self._send(json.dumps({"wall_s": wall_s}).encode())
            self._send(request)
        except (BrokenPipeError, OSError) as exc:
            self.kill()
            raise SandboxError(f"sandbox worker died: {exc}") from exc
        try:
            info = json.loads(self._recv(wall_s + 10.0))
        except ValueError as exc:
            self.kill()
            raise SandboxError(f"sandbox worker sent a malformed frame: {exc}") from exc
        if not isinstance(info, dict) or not isinstance(info.get("status"), str):
            self.kill()
            raise SandboxError("sandbox worker sent a malformed info frame")
        return info, self._recv(10.0)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("sandbox worker %s did not exit", self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


class SandboxPool:
    """A fixed number of warm workers; ``run`` borrows one, forks a child, returns its answer.

    Thread-safe: callers block until a worker is free. A worker that dies is replaced.
    """

    def __init__(
        self,
        spec: SandboxSpec,
        limits: SandboxLimits | None = None,
        workers: int = 2,
        privileged: bool | None = None,
    ) -> None:
        """Start ``workers`` warm workers for ``spec`` (they finish loading in the background).

        Args:
            spec: The setup program, payload and import allowlist.
            limits: Per-answer limits.
            workers: Warm workers (answers run one at a time per worker).
            privileged: Use the root-only layers (network namespace, chroot, drop to
                ``nobody``); ``None`` means "when running as root". ``False`` as root keeps
                only the rlimits and the audit hook, as for an unprivileged user.
        """
        self.spec = spec
        self.limits = limits or SandboxLimits()
        self.privileged = os.geteuid() == 0 if privileged is None else privileged
        self._chroot = tempfile.mkdtemp(prefix="netarena-sandbox-") if self.privileged else None
        if self._chroot:
            os.chmod(self._chroot, 0o555)
        self.workers = max(1, workers)
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._busy = 0
        for _ in range(self.workers):
            self._idle.put(self._start())
        # Runs when the pool is closed, garbage-collected (no caller holds it, so no run is in
        # flight) or the interpreter exits: the pool's processes never outlive its users.
        self._finalizer = weakref.finalize(self, _shutdown, self._idle, self._chroot)

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (a closed pool refuses work)."""
        return self._closed

    def _start(self) -> _Worker:
        return _Worker(self.spec, self.limits, self._chroot, self.privileged)

    def run(self, request: bytes) -> SandboxResult:
        """Run one request in a fresh confined child.

        Raises:
            SandboxTimeout: The run passed its wall-clock or CPU limit.
            SandboxError: The child crashed, was killed, or produced too much output.
        """
        worker = self._borrow()
        try:
            info, output = worker.run(request, self.limits.wall_s)
        except SandboxError:
            worker.kill()
            raise
        finally:
            self._give_back(worker)
        if info["status"] != "ok" or "signal" in info:
            self._fail(info)
        return SandboxResult(output=output, run_s=float(info.get("run_s", 0.0)))

    def _borrow(self) -> _Worker:
        """Wait for an idle worker; give up once the pool is closed (its queue stays empty)."""
        while True:
            if self._closed:
                raise SandboxError("sandbox pool is closed")
            try:
                worker = self._idle.get(timeout=0.2)
            except queue.Empty:
                continue
            if self._mark_busy():
                return worker
            worker.kill()

    def _mark_busy(self) -> bool:
        """Count a borrowed worker as busy unless the pool closed since it was taken."""
        with self._lock:
            if self._closed:
                return False
            self._busy += 1
            return True

    def _give_back(self, worker: _Worker) -> None:
        """Return ``worker`` (or a fresh one if it died); kill it if the pool closed meanwhile.

        Under the lock so that ``close`` cannot drain the queue between the check and the put.
        """
        with self._lock:
            self._busy -= 1
            if self._closed:
                worker.kill()
                if not self._busy:
                    self._finalizer()  # the last busy worker is back: remove the chroot
                return
            if not worker.alive():
                worker.kill()  # reap it and close its pipes
                worker = self._start()
            self._idle.put(worker)

    def _fail(self, info: dict[str, Any]) -> None:
        status, sig = info["status"], info.get("signal")
        if status == "timeout":
            raise SandboxTimeout(f"code ran past the {self.limits.wall_s:g} s wall-clock limit")
        if status == "output_limit":
            raise SandboxError(f"answer larger than {self.limits.max_output_bytes} bytes")
        if sig == "SIGXCPU" or (sig == "SIGKILL" and info.get("run_s", 0) >= self.limits.cpu_s):
            raise SandboxTimeout(f"code ran past the {self.limits.cpu_s} s CPU-time limit")
        raise SandboxError(f"code {_SIGNAL_REASONS.get(sig or '', f'ended by {sig}')}")

    def worker_pids(self) -> list[int]:
        """Process ids of the idle warm workers (for inspection and tests)."""
        return [w.proc.pid for w in list(self._idle.queue)]

    def close(self) -> None:
        """Stop every worker and remove the chroot directory. Idempotent.

        Workers busy in ``run`` finish their answer and are killed when they come back.
        """
        with self._lock:
            self._closed = True
            while True:
                try:
                    self._idle.get_nowait().kill()
                except queue.Empty:
                    break
            if not self._busy:  # else the last busy worker's ``_give_back`` finishes the job
                self._finalizer()


def _shutdown(idle: queue.Queue[_Worker], chroot: str | None) -> None:
    """Kill the idle workers and remove the chroot (a pool's finalizer; holds no pool ref)."""
    while True:
        try:
            idle.get_nowait().kill()
        except queue.Empty:
            break
    if chroot:
        shutil.rmtree(chroot, ignore_errors=True)


#: Recently used pools kept warm although nobody holds them (a long-running green server gets
#: requests with many configurations; each pool costs ``workers`` processes).
KEEP_WARM = 2
_POOLS: weakref.WeakValueDictionary[str, SandboxPool] = weakref.WeakValueDictionary()
_WARM: OrderedDict[str, SandboxPool] = OrderedDict()
_POOLS_LOCK = threading.Lock()


def shared_pool(
    spec: SandboxSpec, limits: SandboxLimits | None = None, workers: int = 2
) -> SandboxPool:
    """The process-wide pool for ``spec``, ``limits`` and ``workers``, created on first use.

    Pools are shared while anyone holds them (an app instance, an open episode) and the
    ``KEEP_WARM`` most recently requested ones are kept besides. A pool nobody holds any more
    is closed when it is garbage-collected, so a pool is never closed under a running
    evaluation and the idle ones stay bounded however many configurations are requested.
    """
    limits = limits or SandboxLimits()
    workers = max(1, workers)
    digest = hashlib.sha256(limits.model_dump_json().encode()).hexdigest()[:8]
    key = f"{spec.key()}-{digest}-{workers}"
    with _POOLS_LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool.closed:
            pool = _POOLS[key] = SandboxPool(spec, limits, workers)
        _WARM[key] = pool
        _WARM.move_to_end(key)
        while len(_WARM) > KEEP_WARM:
            _WARM.popitem(last=False)
        return pool
