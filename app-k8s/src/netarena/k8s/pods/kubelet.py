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
        self.history = LogHistory(self._objects, lambda: store.revision)
        """The states the cluster went through, for logs written from each of them."""

    def _objects(self) -> dict[str, list[dict[str, Any]]]:
        """The objects containers see (read-only: the store's shared copies).

        Copying every pod, policy and service took 90% of an exec's time, and after each
        write (``ObjectStore.shared``): the store copies a kind again only once it changed.
        """
        return {kind: self.store.shared(kind)
                for kind in ("Pod", "Namespace", "NetworkPolicy", "Service")}

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
