"""The connectivity matrix: every probed service pair, expected versus actual.

Expected comes from the application model; actual from the ``PolicyEngine`` over the
live objects. The mismatch report built here is what the agent sees every turn.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netarena.k8s.model import AppModel
from netarena.k8s.policy import PodView, PolicyEngine

__all__ = ["ProbeResult", "Connectivity", "compute_connectivity", "ConnectivityCache"]

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ProbeResult:
    """One probe: ``source`` opening TCP to ``dest``'s Service port."""

    source: str
    dest: str
    port: int
    """Service port dialled (the policy sees the container port behind it)."""
    expected: bool
    actual: bool

    @property
    def ok(self) -> bool:
        """Actual equals expected."""
        return self.expected == self.actual

    def line(self) -> str:
        """``frontend → adservice:9555 (Expected: True, Actual: False)``."""
        return (f"{self.source} → {self.dest}:{self.port} "
                f"(Expected: {self.expected}, Actual: {self.actual})")


@dataclass(frozen=True)
class Connectivity:
    """The whole matrix for one cluster state."""

    results: tuple[ProbeResult, ...]

    @property
    def mismatches(self) -> list[ProbeResult]:
        """Probes whose actual reachability differs from the intended one."""
        return [r for r in self.results if not r.ok]

    def actual_set(self) -> frozenset[tuple[str, str]]:
        """Pairs that can currently connect (compare states with this)."""
        return frozenset((r.source, r.dest) for r in self.results if r.actual)

    def report(self) -> str:
        """The mismatch report shown to agents, or a line saying all probes match."""
        bad = self.mismatches
        if not bad:
            return f"All {len(self.results)} probes match the intended connectivity."
        head = f"{len(bad)} of {len(self.results)} probes do not match the intended connectivity:"
        return "\n".join([head, *(r.line() for r in bad)])


def compute_connectivity(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
                         policies: Sequence[Obj]) -> Connectivity:
    """Probe every pair of ``model.pairs()`` against the given objects.

    A service's pods are the pods of the model's namespace labelled ``app=<service>``; a
    pair connects when every source pod reaches every destination pod (a service with no
    pods reaches nothing and is reached by nothing).
    """
    engine = PolicyEngine(list(pods), list(namespaces), list(policies))
    members: dict[str, list[PodView]] = {name: [] for name in model.names}
    for view in engine.views:
        app = view.labels.get("app")
        if view.namespace == model.namespace and app in members:
            members[app].append(view)
    results = []
    for src, dst in model.pairs():
        spec = model.service(dst)
        assert spec.port is not None and spec.container_port is not None
        cport = spec.container_port
        srcs, dsts = members[src], members[dst]
        actual = bool(srcs and dsts) and all(
            engine.allowed(a, b, cport, "TCP") for a in srcs for b in dsts
        )
        results.append(ProbeResult(src, dst, spec.port, model.expected(src, dst), actual))
    return Connectivity(tuple(results))


class ConnectivityCache:
    """Recomputes the matrix only when the store's revision moved.

    Args:
        model: The application model (expected side and pod membership).
        revision: Returns the store's current write counter.
        snapshot: Returns ``(pods, namespaces, policies)`` as API objects.
    """

    def __init__(self, model: AppModel, revision: Callable[[], int],
                 snapshot: Callable[[], tuple[Sequence[Obj], ...]]) -> None:
        self.model = model
        self._revision = revision
        self._snapshot = snapshot
        self._cached: tuple[int, Connectivity] | None = None
        self.recomputations = 0
        """How many times the matrix was actually recomputed (for tests and benchmarks)."""

    def get(self) -> Connectivity:
        """The matrix for the current state."""
        rev = self._revision()
        if self._cached is None or self._cached[0] != rev:
            pods, namespaces, policies = self._snapshot()
            self._cached = (rev, compute_connectivity(self.model, pods, namespaces, policies))
            self.recomputations += 1
        return self._cached[1]
