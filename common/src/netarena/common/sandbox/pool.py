"""A pool of warm, confined, forking sandbox workers: ``run`` one answer in a fresh child.

Each worker (``zygote.py``) is a separate ``python -I -S`` interpreter started with an empty
environment and no NetArena package on its path. It loads an app-supplied setup program once
(the topology, say) and then runs each answer in a fresh ``fork``, so the preloaded state is
shared copy-on-write and every answer starts from the pristine state. The child confines
itself before it touches the agent's code, in both modes:

- always: rlimits (CPU, memory, no files or processes), its own session, an empty
  environment, only its answer pipe open, then the kernel layers (``kernel.py``): a seccomp
  allowlist and, where the kernel has it, a Landlock domain of its own; then the audit hook,
  a second layer with clear messages;
- as root, besides: a network namespace for the worker, a chroot into an empty directory and
  a uid of its own per answer (each where the host grants it; ``host.py`` says what is not).

The wall clock is enforced by the worker and, as a backstop, here. Answers come back as the
bytes the app's ``run`` function produced (JSON by convention), at most
``max_output_bytes``; nothing is unpickled on the evaluator side.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import queue
import shutil
import tempfile
import threading
import weakref
from collections import OrderedDict
from pathlib import Path
from typing import Any

from netarena.common.core.errors import SandboxError, SandboxTimeout
from netarena.common.sandbox.host import HostLayers, log_start_up_checks
from netarena.common.sandbox.spec import SandboxLimits, SandboxResult, SandboxSpec
from netarena.common.sandbox.worker import Worker, WorkerOptions

__all__ = ["CHROOT_PREFIX", "KEEP_WARM", "SandboxPool", "empty_root", "shared_pool"]

log = logging.getLogger(__name__)

_SIGNAL_REASONS = {
    "SIGXCPU": "ran past its CPU-time limit",
    "SIGKILL": "was killed (CPU hard limit or memory exhaustion)",
    "SIGXFSZ": "tried to write a file",
    "SIGSEGV": "crashed (segmentation fault)",
    "SIGABRT": "aborted",
    "SIGSYS": "made a system call of a foreign ABI",
}
_REPORTED: set[tuple[str, ...]] = set()


def _report(layers: tuple[str, ...]) -> None:
    """Log the layers answers run under (once per combination) and what the host lacks."""
    if layers not in _REPORTED:
        _REPORTED.add(layers)
        log.info("sandbox layers: %s", ", ".join(layers))


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
            privileged: Add the root-only layers (network namespace, chroot, a uid per
                answer) where the host grants them; ``None`` means "when running as root".
                The kernel layers (seccomp, Landlock) apply in both modes.

        Raises:
            SandboxError: This host cannot confine agent code at all (no seccomp).
        """
        host = log_start_up_checks(privileged)
        if host.seccomp:
            raise SandboxError(f"cannot confine agent code: {host.seccomp}")
        self.spec = spec
        self.limits = limits or SandboxLimits()
        self.privileged = host.root if privileged is None else privileged and host.root
        chroot = None
        if self.privileged and host.chroot:
            chroot = empty_root()
        self._options = WorkerOptions(
            unshare=shutil.which("unshare") if self.privileged and host.netns else None,
            chroot=chroot,
            per_answer_uid=self.privileged and host.setuid,
        )
        self.layers = self._layers(host)
        """Names of the layers every answer runs under (``seccomp``, ``landlock-abi7``, ...)."""
        _report(self.layers)
        self.workers = max(1, workers)
        self._idle: queue.Queue[Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False
        self._busy = 0
        for _ in range(self.workers):
            self._idle.put(self._start())
        # Runs when the pool is closed, garbage-collected (no caller holds it, so no run is in
        # flight) or the interpreter exits: the pool's processes never outlive its users.
        self._finalizer = weakref.finalize(self, _shutdown, self._idle, chroot)

    def _layers(self, host: HostLayers) -> tuple[str, ...]:
        options = self._options
        optional = {
            f"landlock-abi{host.landlock_abi}": host.landlock_abi > 0,
            "netns": options.unshare is not None,
            "chroot": options.chroot is not None,
            "uid-per-answer": options.per_answer_uid,
            "audit-hook": self.spec.audit_hook,
        }
        return ("rlimits", "seccomp", *(name for name, on in optional.items() if on))

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called (a closed pool refuses work)."""
        return self._closed

    def _start(self) -> Worker:
        return Worker(self.spec, self.limits, self._options)

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
        if info["status"] != "ok" or "signal" in info or info.get("confined") is not True:
            self._fail(info, output)
        return SandboxResult(output=output, run_s=float(info.get("run_s", 0.0)))

    def _borrow(self) -> Worker:
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

    def _give_back(self, worker: Worker) -> None:
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

    def _fail(self, info: dict[str, Any], output: bytes) -> None:
        status, sig = info["status"], info.get("signal")
        if status == "timeout":
            raise SandboxTimeout(f"code ran past the {self.limits.wall_s:g} s wall-clock limit")
        if status == "output_limit":
            raise SandboxError(
                f"answer larger than {self.limits.max_output_bytes} bytes (refused unread)"
            )
        if status != "ok":
            raise SandboxError(f"sandbox worker refused the request ({status})")
        if sig == "SIGXCPU" or (sig == "SIGKILL" and info.get("run_s", 0) >= self.limits.cpu_s):
            raise SandboxTimeout(f"code ran past the {self.limits.cpu_s} s CPU-time limit")
        if info.get("confined") is not True:
            reason = output[:500].decode("utf-8", "replace") or f"{info}"
            raise SandboxError(f"the sandbox could not confine the code (it did not run): {reason}")
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


CHROOT_PREFIX = "netarena-sandbox-"
"""Name of the pools' chroot directories in the temp dir: the prefix, the pid, a suffix."""


def empty_root() -> str:
    """A new empty, read-only directory to chroot answers into, named after this process.

    A pool removes its own when it closes or its process exits; a process killed outright
    cannot, so each new one first removes the (empty) directories of processes that are gone.
    """
    for old in Path(tempfile.gettempdir()).glob(f"{CHROOT_PREFIX}*-*"):
        pid = old.name.removeprefix(CHROOT_PREFIX).split("-")[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):  # not empty, or another process got there first
                old.rmdir()
    path = tempfile.mkdtemp(prefix=f"{CHROOT_PREFIX}{os.getpid()}-")
    os.chmod(path, 0o555)
    return path


def _shutdown(idle: queue.Queue[Worker], chroot: str | None) -> None:
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
