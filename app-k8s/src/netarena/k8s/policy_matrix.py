"""The connectivity matrix: every probed service pair, expected versus actual.

Expected comes from the application model; actual from the ``PolicyEngine`` over the
live objects. The mismatch report built here is what the agent sees every turn.

A probe dials the destination by its Service name, as clients (and operators' ``nc``,
``wget`` and ``curl``) do, so it also needs the name resolved: the source's egress must
let UDP 53 reach the cluster's CoreDNS pods. An egress policy that allows the destination
but not DNS therefore fails the probe, as it fails the real client.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netarena.k8s.apiserver.coredns import DNS_PORT
from netarena.k8s.dns import coredns_pods
from netarena.k8s.model import AppModel
from netarena.k8s.policy import PodView, PolicyEngine
from netarena.k8s.reachability import OTHER_PORT

__all__ = ["ProbeResult", "Connectivity", "compute_connectivity", "ConnectivityCache",
           "resolves", "UNINTENDED", "Address", "Mismatch", "parse_report",
           "parse_unintended"]

Obj = Mapping[str, Any]
UNINTENDED = "connections accepted that must be refused (port and protocol not reported)"
"""The report's words for a source the destination admits against the intent."""
_OTHER = "other"
"""How a report writes (and its parser reads) the port no policy names (``OTHER_PORT``)."""
Mismatch = tuple[str, str, int, str, bool]
"""A differing probe read back from a report: source, destination, port, protocol, expected."""
_REPORT_LINE = re.compile(r"^(\S+) → (\S+):(\{[^}]*\}|\S+) \(Expected: (True|False), Actual: "
                          r"(?:True|False)\)(?:: .*)?$", re.MULTILINE)
_UNINTENDED_LINE = re.compile(rf"^(\S+) → (\S+): {re.escape(UNINTENDED)}$", re.MULTILINE)


@dataclass(frozen=True)
class ProbeResult:
    """One probe: ``source`` opening TCP to ``dest``'s Service port."""

    source: str
    dest: str
    port: int
    """Service port dialled (the policy sees the container port behind it)."""
    expected: bool
    actual: bool
    protocol: str = "TCP"
    """Transport protocol of the probe."""

    @property
    def ok(self) -> bool:
        """Actual equals expected."""
        return self.expected == self.actual

    def line(self) -> str:
        """``frontend → adservice:9555 (Expected: True, Actual: False)``.

        A protocol other than TCP follows the port (``redis-cart:6379/UDP``); port 0
        stands for every port no object names (``:other``).
        """
        return (f"{self.source} → {self.dest}:{_port_text(self)} "
                f"(Expected: {self.expected}, Actual: {self.actual})")


@dataclass(frozen=True)
class Connectivity:
    """The whole matrix for one cluster state."""

    results: tuple[ProbeResult, ...]
    checked: int | None = None
    """How many probes were compared when ``results`` holds only the differing ones."""

    @property
    def mismatches(self) -> list[ProbeResult]:
        """Probes whose actual reachability differs from the intended one."""
        return [r for r in self.results if not r.ok]

    def actual_set(self) -> frozenset[tuple[str, str]]:
        """Pairs that can currently connect (compare states with this)."""
        return frozenset((r.source, r.dest) for r in self.results if r.actual)

    def report(self, address: Address | None = None) -> str:
        """The mismatch report shown to agents, or a line saying all probes match.

        A probe that must answer and does not is listed with its port and protocol (the
        call its caller makes fails), and, given ``address``, with the caller's error and
        the address it dialled (the Service's for a Service port, else the pod's): what
        the caller's own log says. Connections that answer but must be refused are listed
        once per client workload and destination, as a flow log shows them, without the
        port or protocol: which rule admits them is for the operator to find in the
        policies (the exact list would be the repair itself). Neither names a label or a
        rule.

        Args:
            address: ``(destination, port) -> "ip:port"`` as the cluster resolves it;
                ``None`` for the short form an alert carries.
        """
        bad = self.mismatches
        total = len(self.results) if self.checked is None else self.checked
        if not bad:
            return f"All {total} probes match the intended connectivity."
        head = f"{len(bad)} of {total} probes do not match the intended connectivity:"
        groups: dict[tuple[str, str, bool], list[ProbeResult]] = {}
        for r in bad:
            groups.setdefault((r.source, r.dest, r.expected), []).append(r)
        lines = []
        for (src, dst, expected), probes in groups.items():
            if not expected:
                lines.append(f"{src} → {dst}: {UNINTENDED}")
                continue
            error = "" if address is None else ": " + _error(probes, address)
            if len(probes) == 1:
                lines.append(probes[0].line() + error)
                continue
            ports = ",".join(_port_text(r) for r in probes)
            lines.append(f"{src} → {dst}:{{{ports}}} (Expected: {expected}, "
                         f"Actual: {not expected}){error}")
        return "\n".join([head, *lines])


Address = Callable[[str, int], str]
"""``(destination, port) -> "ip:port"``: where a caller dials (``ip`` alone for any port)."""


def _error(probes: list[ProbeResult], address: Address) -> str:
    """The caller's error for calls that a dropped packet never answers."""
    dials = []
    for r in probes:
        where = address(r.dest, r.port)
        proto = r.protocol.lower()
        dials.append(f"dial {proto} {where}" if r.port else
                     f"dial {proto} {where} (every port no policy names)")
    return "; ".join(dials) + ": i/o timeout"


def _port_text(r: ProbeResult) -> str:
    port = _OTHER if r.port == OTHER_PORT else str(r.port)
    return port if r.protocol == "TCP" else f"{port}/{r.protocol}"


def _ports(text: str) -> list[tuple[int, str]]:
    out = []
    for item in text.strip("{}").split(","):
        port, _, proto = item.partition("/")
        out.append((OTHER_PORT if port == _OTHER else int(port), proto or "TCP"))
    return out


def parse_report(text: str) -> list[Mismatch]:
    """The differing probes of a probe report (grouped lines expanded)."""
    out = []
    for src, dst, ports, expected in _REPORT_LINE.findall(text):
        out += [(src, dst, port, proto, expected == "True") for port, proto in _ports(ports)]
    return out


def parse_unintended(text: str) -> set[tuple[str, str]]:
    """The (source, destination) pairs a probe report says connect but must not."""
    return set(_UNINTENDED_LINE.findall(text))


def resolves(engine: PolicyEngine, pod: PodView, dns: Sequence[PodView]) -> bool:
    """Whether ``pod`` can resolve names: UDP 53 to every CoreDNS pod is allowed.

    kube-proxy spreads queries over all CoreDNS endpoints, so one blocked endpoint already
    makes lookups fail (intermittently on a cluster; here, always).
    """
    return bool(dns) and all(engine.allowed(pod, server, DNS_PORT, "UDP") for server in dns)


def compute_connectivity(model: AppModel, pods: Sequence[Obj], namespaces: Sequence[Obj],
                         policies: Sequence[Obj],
                         dns_pods: Sequence[Obj] | None = None) -> Connectivity:
    """Probe every pair of ``model.pairs()`` against the given objects.

    A service's pods are the pods of the model's namespace labelled ``app=<service>``; a
    pair connects when every source pod resolves the destination's name and reaches every
    destination pod (a service with no pods reaches nothing and is reached by nothing).

    Args:
        model: Intended connectivity and pod membership.
        pods: The application's Pod objects.
        namespaces: Namespace objects (for namespace selectors).
        policies: NetworkPolicy objects.
        dns_pods: The cluster's CoreDNS pods; None means a fresh cluster's
            (``dns.coredns_pods``).
    """
    engine = PolicyEngine(list(pods), list(namespaces), list(policies))
    dns = [PodView.from_obj(p) for p in (coredns_pods() if dns_pods is None else dns_pods)]
    members: dict[str, list[PodView]] = {name: [] for name in model.names}
    for view in engine.views:
        app = view.labels.get("app")
        if view.namespace == model.namespace and app in members:
            members[app].append(view)
    named = {name: all(resolves(engine, a, dns) for a in views) for name, views in members.items()}
    results = []
    for src, dst in model.pairs():
        spec = model.service(dst)
        assert spec.port is not None and spec.container_port is not None
        cport = spec.container_port
        srcs, dsts = members[src], members[dst]
        actual = bool(srcs and dsts) and named[src] and all(
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
