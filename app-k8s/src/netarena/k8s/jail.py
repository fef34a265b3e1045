"""kubectl inside a Landlock domain: its own files, its libraries, its API server's port.

The allowlist (``actions``) decides which commands run; this is the boundary that holds
when the allowlist misreads one (as it once read ``--patch_file`` and
``--show-managed-fields``). Every kubectl of one embedded episode is started from one
thread that has entered a Landlock domain (the kernel applies it to that thread and to
every process it starts, nothing else in the evaluator), in which:

* only the system's programs and libraries (``/usr``, ``/lib*``), the kubectl binary,
  what a TLS client needs (``/etc/hosts``, ``/etc/resolv.conf``, the CA bundle) and the
  files a user's kubeconfig names can be read; ``prlimit``, ``kubectl`` and ``diff`` (for
  ``kubectl diff``), and the dynamic loader they need, can be run;
* only the episode's private directory (kubeconfig, discovery cache, temporary files)
  and ``/dev/null`` can be written;
* TCP connects go only to the episode's API server port, binds nowhere (Landlock ABI 4);
  signals and abstract sockets stay inside the domain (ABI 6).

So ``--patch-file=/etc/shadow`` reads nothing, ``--cache-dir=/etc`` writes nothing and
``--server=https://127.0.0.1:OTHER`` or a proxy outside never connects, whatever the
parser let through. Without Landlock (an old kernel) kubectl runs unconfined and a
warning says so once; so does a user's kubeconfig that runs a credential plugin (which
may need any file and any host).
"""

from __future__ import annotations

import functools
import glob
import logging
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.common.sandbox import kernel

__all__ = ["KubectlJail", "landlock_available"]

log = logging.getLogger(__name__)

_SYSTEM_READABLE = ("/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache", "/etc/localtime",
                    "/etc/hosts", "/etc/resolv.conf", "/etc/nsswitch.conf", "/etc/ssl",
                    "/etc/pki", "/etc/ca-certificates")
"""The system's programs and libraries, and what a TLS client needs to reach a named server
(name resolution, the public CA bundle)."""
_HELPERS = ("prlimit", "diff")
_LOADERS = ("/lib*/ld-linux*.so*", "/lib/*/ld-linux*.so*", "/lib/ld-musl-*.so*")
"""The dynamic loader: running a dynamically linked helper also executes it."""


@functools.cache
def landlock_available() -> bool:
    """Whether this kernel offers Landlock (warns once when it does not)."""
    abi = kernel.landlock_abi()
    if abi < 1:
        log.warning("no Landlock in this kernel: kubectl runs unconfined (the allowlist is "
                    "the only barrier between agents' commands and the host)")
    elif abi < 4:
        log.warning("Landlock ABI %d (< 4): kubectl's files are confined, its connections "
                    "are not", abi)
    return abi >= 1


class KubectlJail:
    """One thread in a Landlock domain that starts an episode's kubectl processes.

    Args:
        binary: The kubectl binary.
        private_dir: The episode's directory (kubeconfig, cache, temporary files).
        server_port: The API server's TCP port, the only one kubectl may connect to.
        readable: Files the kubeconfig names (a user's certificates and keys).

    Raises:
        EmulatorError: Landlock is there but the domain could not be entered.
    """

    def __init__(self, binary: str, private_dir: str, server_port: int,
                 readable: tuple[str, ...] = ()) -> None:
        helpers = [found for name in _HELPERS if (found := shutil.which(name))]
        helpers += [path for pattern in _LOADERS for path in glob.glob(pattern)]
        self._ruleset = kernel.landlock_ruleset(
            (*_SYSTEM_READABLE, *(os.path.realpath(path) for path in readable)),
            executable=[os.path.realpath(p) for p in (binary, *helpers)],
            writable=(os.path.realpath(private_dir), os.devnull),
            connect_ports=(server_port,))
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kubectl-jail",
                                        initializer=self._enter)
        try:
            self._pool.submit(lambda: None).result()
        except Exception as exc:
            self.close()
            raise EmulatorError(f"could not confine kubectl with Landlock: {exc}") from exc

    def _enter(self) -> None:
        kernel.landlock_restrict(self._ruleset)

    def popen(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``command`` from the confined thread (it inherits the domain)."""
        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(command, **kwargs)

        return self._pool.submit(start).result()

    def close(self) -> None:
        """Stop the confined thread and release the ruleset. Idempotent."""
        self._pool.shutdown(wait=True)
        if self._ruleset >= 0:
            os.close(self._ruleset)
            self._ruleset = -1
