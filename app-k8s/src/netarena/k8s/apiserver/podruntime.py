"""What the API server asks of the nodes: container logs and ``exec``, injected by the app.

A real API server stores pods and leaves running them to the kubelets: ``kubectl logs`` and
``kubectl exec`` are proxied to the node the pod runs on. The embedded server does the same
through a ``PodRuntime`` its caller passes in, so the control plane knows no workload: what a
container prints and answers (an application's log lines, its images' tools, the network
probes) belongs to the app that deploys it (``netarena.k8s.pods``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["ExecResult", "PodRuntime"]


@dataclass(frozen=True)
class ExecResult:
    """The outcome of one command in a container."""

    stdout: str
    stderr: str
    exit_code: int
    wait_s: float = 0.0
    """How long the real tool would have blocked before answering (timeouts)."""


class PodRuntime(Protocol):
    """The kubelets' side of the API: what runs inside the pods the store holds."""

    def note(self, now: float) -> None:
        """The cluster may have changed at ``now`` (the server started, or a write ended)."""
        ...

    def container_log(self, pod: dict[str, Any], params: dict[str, str], now: float) -> str:
        """The log of one container of ``pod`` up to ``now`` (``GET .../pods/NAME/log``).

        Raises:
            ApiError: Unknown container, or a log that does not exist (``previous``).
        """
        ...

    def follow_log(self, pod: dict[str, Any], params: dict[str, str],
                   clock: Callable[[], float], stop: threading.Event) -> Iterator[str]:
        """``kubectl logs -f``: the log so far, then new lines until ``stop`` is set."""
        ...

    def run_exec(self, pod: dict[str, Any], command: list[str],
                 stop: threading.Event) -> ExecResult:
        """Run ``command`` in ``pod``, blocking as the tool would (``stop`` cuts a wait short).

        An ``exit_code`` of -1 means the process never started (the runtime's error is in
        ``stderr``).
        """
        ...
