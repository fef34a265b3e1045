"""The app's ``PodRuntime``: what the embedded cluster's containers print and answer.

The API server proxies ``kubectl logs`` and ``kubectl exec`` here, as a real one proxies
them to the kubelets. Both are answered from the cluster's state in the store: logs from
every state it went through (``logs.LogHistory``), exec from the state now (``shell``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from netarena.k8s.apiserver import ObjectStore
from netarena.k8s.apiserver.podruntime import ExecResult
from netarena.k8s.pods.logs import LogHistory, container_log, follow_log
from netarena.k8s.pods.shell import run_in_pod

__all__ = ["Kubelet"]


class Kubelet:
    """Logs and exec for the pods of ``store`` (pass it as ``ApiServer(pods=...)``).

    Args:
        store: The cluster's objects; read on every request.
    """

    def __init__(self, store: ObjectStore) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._snapshot: tuple[int, dict[str, list[dict[str, Any]]]] | None = None
        self.history = LogHistory(self._objects, lambda: store.revision)
        """The states the cluster went through, for logs written from each of them."""

    def _objects(self) -> dict[str, list[dict[str, Any]]]:
        """The objects containers see, copied once per store revision (read-only).

        Copying every pod, policy and service took 90% of an exec's time; between two
        writes the copy is the same. The revision is read before the copy, so a write
        landing meanwhile only makes the next read copy again.
        """
        revision = self.store.revision
        with self._lock:
            if self._snapshot is None or self._snapshot[0] != revision:
                self._snapshot = (revision, {
                    kind: self.store.list(kind)
                    for kind in ("Pod", "Namespace", "NetworkPolicy", "Service")})
            return self._snapshot[1]

    def note(self, now: float) -> None:
        """Record the cluster's state if a write moved it."""
        self.history.note(now)

    def container_log(self, pod: dict[str, Any], params: dict[str, str], now: float) -> str:
        """The log of one container of ``pod`` up to ``now``."""
        return container_log(pod, params, now, self.history)

    def follow_log(self, pod: dict[str, Any], params: dict[str, str],
                   clock: Callable[[], float], stop: threading.Event) -> Iterator[str]:
        """The log so far, then each new line until ``stop`` is set."""
        return follow_log(pod, params, clock, stop, self.history)

    def run_exec(self, pod: dict[str, Any], command: list[str],
                 stop: threading.Event) -> ExecResult:
        """Run ``command`` in ``pod`` against the current state."""
        return run_in_pod(self._objects(), pod, command, stop)
