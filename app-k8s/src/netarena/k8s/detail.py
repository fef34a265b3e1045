"""What a real team's policies carry beyond the service graph: the detail no spec rebuilds.

A connectivity specification ("frontend may call cartservice on 7070") regenerates only
the main rule of each policy. Real policies also hold what other teams put there, and an
operator who re-deploys from a spec instead of troubleshooting wipes it out:

* **Monitoring**: Prometheus in its own namespace scrapes some services' metrics port
  (a rule whose peer is that namespace AND the Prometheus pods; Grafana, in the same
  namespace, must stay out).
* **External dependencies**: some services reach providers outside the cluster (a card
  processor, an SMTP relay) through a restricted egress: their callees, DNS, and one
  external range on one port; the rest of the internet stays closed.
* **Ownership**: labels and annotations other teams own (team, ticket, reviewer).
* **Rules the runbook does not show** (``PolicyExtras``): a batch job and a canary in a
  namespace of their own let in by namespaceSelector (with or without a podSelector), a
  partner's range by ``ipBlock`` with an ``except``, an admin port or an ``endPort`` range
  beside the service port, the service port written by name, external ranges with an
  ``except``, and the monitoring rule sometimes before the main rule. Every value is drawn
  from a large space (namespace and job names, ports, CIDRs), so nothing is at a fixed place.

Everything is drawn from the query's seed, so two seeds give different clusters; the
judge turns each item into probes (``judge``) and ownership checks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterDetail", "ExternalEgress", "Monitoring", "PolicyExtras", "Workload",
           "DNS_PORTS", "KUBE_DNS_LABELS", "DEPLOYERS", "lock_note", "locked_to_callees"]

KUBE_DNS_LABELS = {"k8s-app": "kube-dns"}
"""Labels of the cluster DNS pods (CoreDNS) in ``kube-system``."""
DNS_PORTS = ({"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"})
"""The ports a restricted egress opens for name resolution."""
_LOCK_NOTES = {"callees": "it may reach only the services it calls and the cluster DNS.",
               "dns": "it may only resolve names (cluster DNS); it makes no other connection.",
               "none": "it makes no outbound connection at all."}


def lock_note(service: str, lock: str) -> str:
    """The platform note saying how ``service``'s egress is locked down."""
    return f"- {service}'s egress is locked down: {_LOCK_NOTES[lock]}"


def locked_to_callees(text: str) -> set[str]:
    """The services whose egress the notes in ``text`` lock to their callees and DNS."""
    note = re.escape(lock_note("SERVICE", "callees")).replace("SERVICE", r"(\S+)")
    return set(re.findall(f"^{note}$", text, re.MULTILINE))


DEPLOYERS = {"kustomize": ("kubectl", True), "helm": ("helm", False),
             "argocd": ("argocd-controller", True), "flux": ("kustomize-controller", True)}
"""Tool in ``app.kubernetes.io/managed-by`` → the field manager its writes carry, and whether
it applies server-side (``kubectl apply --server-side -k``, Argo CD's and Flux's
controllers) or writes as an update (Helm). None of them leaves a last-applied
annotation, as ``kubectl apply`` without ``--server-side`` would."""


@dataclass(frozen=True)
class ExternalEgress:
    """A service's allowed egress to one range outside the cluster."""

    service: str
    purpose: str
    """The provider in words (``the card processor``)."""
    cidr: str
    port: int
    inside_ip: str
    """An address in ``cidr`` that must be reachable on ``port``."""
    outside_ip: str
    """An address outside ``cidr`` that must stay unreachable on ``port``."""


@dataclass(frozen=True)
class Monitoring:
    """Prometheus's namespace and which services it scrapes on which port."""

    namespace: str
    scraper_labels: dict[str, str]
    other_labels: dict[str, str]
    """Labels of another monitoring pod (Grafana) that must not reach metrics ports."""
    metrics_ports: dict[str, int]
    """Scraped service → its metrics container port."""


@dataclass(frozen=True)
class Workload:
    """A pod of another team in ``ClusterDetail.namespaces`` (a batch job, a canary)."""

    namespace: str
    name: str
    labels: dict[str, str]
    running: bool = True
    """False for a CronJob between runs: its labels exist (in the template), no pod does."""


@dataclass(frozen=True)
class PolicyExtras:
    """What one service's policy carries beyond the runbook's main rule."""

    peers: tuple[dict[str, Any], ...] = ()
    """Extra peers of the main rule (namespaceSelector, ipBlock with except)."""
    ports: tuple[dict[str, Any], ...] = ()
    """Extra port entries of the main rule (an admin port, an ``endPort`` range)."""
    named_port: bool = False
    """The main rule names the service port (``grpc``) instead of its number."""
    monitoring_first: bool = False
    """The monitoring rule comes before the main rule."""
    shuffle: int = 0
    """Seed of the order of the main rule's peers and ports, and of the rules."""
    split_callers: bool = False
    """Each caller (and each extra peer) has a rule of its own."""
    rules: tuple[dict[str, Any], ...] = ()
    """Further rules: admin and debug ports for services and other teams' workloads."""


@dataclass(frozen=True)
class ClusterDetail:
    """Everything a healthy policy holds beyond the service graph."""

    monitoring: Monitoring
    egress: tuple[ExternalEgress, ...] = ()
    labels: dict[str, dict[str, str]] = field(default_factory=dict)
    """Policy name → labels other teams own."""
    annotations: dict[str, dict[str, str]] = field(default_factory=dict)
    """Policy name → annotations other teams own."""
    stranger_ip: str = "198.51.100.23"
    """An address on the internet outside every external range: it must reach no service
    that is not open to anyone, and no locked-down service may reach it on any port."""
    workloads: tuple[Workload, ...] = ()
    """Other teams' pods the healthy policies let in (batch jobs, canaries)."""
    extras: dict[str, PolicyExtras] = field(default_factory=dict)
    """Service → what its policy carries beyond the runbook."""
    except_cidrs: dict[str, str] = field(default_factory=dict)
    """Service → a range cut out of its external egress range (``ipBlock.except``)."""
    teams: dict[str, str] = field(default_factory=dict)
    """Namespace of another team → the team (its ``team`` label)."""
    admin_ports: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    """Service → further container ports its pods declare (``admin``, ``debug``...)."""
    public_port_only: bool = False
    """The public entry point's open rule names its port (anyone may call that port only)."""
    default_deny: tuple[str, ...] = ("Ingress", "Egress")
    """The directions the ``deny-all`` policy isolates (many clusters deny ingress only)."""
    locks: dict[str, str] = field(default_factory=dict)
    """Service → how its egress is locked down without an external dependency: ``callees``
    (its callees and DNS), ``dns`` (DNS only) or ``none`` (no egress at all)."""
    dns_udp_only: frozenset[str] = frozenset()
    """Services whose DNS egress rule allows UDP 53 only (as many real policies write it;
    the others allow UDP and TCP)."""
    dns_first: frozenset[str] = frozenset()
    """Services whose restricted egress lists cluster DNS before the callees (rule order is
    the author's habit; it means nothing to the API)."""

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Further namespaces whose workloads the healthy policies name."""
        return tuple(dict.fromkeys([*self.teams, *(w.namespace for w in self.workloads)]))

    @property
    def deployer(self) -> tuple[str, bool]:
        """The field manager that deployed the application, and whether it applied."""
        tool = next(iter(self.labels.values()), {}).get("app.kubernetes.io/managed-by", "")
        return DEPLOYERS.get(tool, ("kubectl-client-side-apply", False))

    def declared(self, service: str) -> list[tuple[str, int]]:
        """``(name, port)`` of the container ports ``service`` declares beside its own."""
        metrics = self.monitoring.metrics_ports.get(service)
        return [*((("metrics", metrics),) if metrics is not None else ()),
                *self.admin_ports.get(service, ())]

    def egress_of(self, service: str) -> list[ExternalEgress]:
        """External ranges ``service`` may reach."""
        return [e for e in self.egress if e.service == service]
