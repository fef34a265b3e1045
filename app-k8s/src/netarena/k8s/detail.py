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

import ipaddress
import random
import string
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ClusterDetail", "ExternalEgress", "Monitoring", "PolicyExtras", "Workload",
           "draw_detail", "DNS_PORTS",
           "KUBE_DNS_LABELS", "DEPLOYERS"]

KUBE_DNS_LABELS = {"k8s-app": "kube-dns"}
"""Labels of the cluster DNS pods (CoreDNS) in ``kube-system``."""
DNS_PORTS = ({"port": 53, "protocol": "UDP"}, {"port": 53, "protocol": "TCP"})
"""The ports a restricted egress opens for name resolution."""
_TEAMS = ("storefront", "payments", "checkout", "catalog", "growth", "fulfillment",
          "identity", "notifications", "search", "platform", "commerce", "marketing")
_TOOLS = ("kustomize", "helm", "argocd", "flux")
DEPLOYERS = {"kustomize": ("kubectl", True), "helm": ("helm", False),
             "argocd": ("argocd-controller", True), "flux": ("kustomize-controller", True)}
"""Tool in ``app.kubernetes.io/managed-by`` → the field manager its writes carry, and whether
it applies server-side (``kubectl apply --server-side -k``, Argo CD's and Flux's
controllers) or writes as an update (Helm). None of them leaves a last-applied
annotation, as ``kubectl apply`` without ``--server-side`` would."""
_MON_NAMESPACES = ("monitoring", "observability", "prometheus", "metrics", "telemetry")
_METRICS_PORTS = (9090, 9102, 9464, 8888, 9100, 2112, 9091, 9187, 8081, 9404)
_PROVIDERS = {
    "paymentservice": ("the card processor", 443),
    "emailservice": ("the SMTP relay", 587),
    "currencyservice": ("the exchange-rate feed", 443),
    "shippingservice": ("the carrier's quote API", 443),
    "adservice": ("the ad exchange", 443),
    "recommendationservice": ("the ML feature store", 443),
}
_GENERIC_PROVIDERS = (("a partner API", 443), ("a SaaS webhook endpoint", 8443),
                      ("an LDAP directory", 636), ("a message broker", 5671))


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

    @property
    def namespaces(self) -> tuple[str, ...]:
        """Further namespaces whose workloads the healthy policies name."""
        return tuple(dict.fromkeys(w.namespace for w in self.workloads))

    @property
    def deployer(self) -> tuple[str, bool]:
        """The field manager that deployed the application, and whether it applied."""
        tool = next(iter(self.labels.values()), {}).get("app.kubernetes.io/managed-by", "")
        return DEPLOYERS.get(tool, ("kubectl-client-side-apply", False))

    def egress_of(self, service: str) -> list[ExternalEgress]:
        """External ranges ``service`` may reach."""
        return [e for e in self.egress if e.service == service]


def _public_ip(rng: random.Random) -> ipaddress.IPv4Address:
    while True:
        ip = ipaddress.IPv4Address(rng.randrange(1 << 24, 223 << 24))
        if ip.is_global and not ip.is_multicast:
            return ip


def _external(service: str, purpose: str, port: int, rng: random.Random) -> ExternalEgress:
    prefix = rng.choice((24, 26, 27, 28, 29))
    net = ipaddress.IPv4Network(f"{_public_ip(rng)}/{prefix}", strict=False)
    inside = net.network_address + rng.randrange(1, net.num_addresses - 1)
    outside = _public_ip(rng)
    while outside in net:
        outside = _public_ip(rng)
    return ExternalEgress(service, purpose, str(net), port, str(inside), str(outside))


def draw_detail(services: list[tuple[str, bool, int | None]], policies: list[str],
                rng: random.Random) -> ClusterDetail:
    """Draw one cluster's detail.

    Args:
        services: ``(name, open_to_anyone, container_port)`` per service.
        policies: Every policy name (ownership is drawn for each).
        rng: Source of every choice.
    """
    scrapable = [(n, p) for n, anyone, p in services if p is not None and not anyone]
    k = rng.randint(max(1, len(scrapable) // 3), max(1, len(scrapable)))
    ports: dict[str, int] = {}
    for name, own_port in sorted(rng.sample(scrapable, min(k, len(scrapable)))):
        ports[name] = rng.choice([p for p in _METRICS_PORTS if p != own_port])
    monitoring = Monitoring(rng.choice(_MON_NAMESPACES), {"app.kubernetes.io/name": "prometheus"},
                            {"app.kubernetes.io/name": "grafana"}, ports)
    servers = [n for n, _, p in services if p is not None]
    known = [n for n in servers if n in _PROVIDERS]
    pool = known if len(known) >= 2 else servers
    chosen = sorted(rng.sample(pool, rng.randint(1, min(3, len(pool)))))
    egress = tuple(_external(n, *(_PROVIDERS.get(n) or rng.choice(_GENERIC_PROVIDERS)), rng)
                   for n in chosen)
    teams = rng.sample(_TEAMS, 4)
    tool, app = rng.choice(_TOOLS), rng.choice(("online-boutique", "shop", "boutique"))
    labels, notes = {}, {}
    for name in policies:
        team = "platform" if name == "deny-all" else rng.choice(teams)
        labels[name] = {"app.kubernetes.io/part-of": app, "app.kubernetes.io/managed-by": tool,
                        "team": team}
        notes[name] = {"owner": f"{team}@example.com",
                       "policy.example.com/ticket": f"NET-{rng.randint(1000, 9999)}"}
        if rng.random() < 0.4:
            notes[name]["policy.example.com/reviewed-by"] = rng.choice(
                ("alice", "bilal", "chen", "dara", "emeka", "farah", "goran", "hana"))
    stranger = _public_ip(rng)
    while any(stranger in ipaddress.IPv4Network(e.cidr) for e in egress):
        stranger = _public_ip(rng)
    workloads, extras = _extras(services, rng)
    excepts = {}
    for e in egress:
        net = ipaddress.IPv4Network(e.cidr)
        if net.prefixlen <= 28 and rng.random() < 0.5:
            sub = list(net.subnets(new_prefix=net.prefixlen + 2))
            cut = rng.choice([s for s in sub if ipaddress.IPv4Address(e.inside_ip) not in s])
            excepts[e.service] = str(cut)
    return ClusterDetail(monitoring, egress, labels, notes, str(stranger), tuple(workloads),
                         extras, excepts)


_JOB_NAMES = ("report-builder", "cache-warmer", "catalog-sync", "invoice-export", "feed-import",
              "price-indexer", "stock-audit", "search-reindex", "ledger-close", "image-resizer")
_SPACES = ("batch", "jobs", "reporting", "analytics", "etl", "ops", "data", "backoffice")


def _token(rng: random.Random, n: int = 5) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def _extras(services: list[tuple[str, bool, int | None]],
            rng: random.Random) -> tuple[list[Workload], dict[str, PolicyExtras]]:
    """Another team's namespace with a batch job and a canary, and each policy's extras."""
    space = f"{rng.choice(_SPACES)}-{_token(rng, 4)}"
    job = Workload(space, "job", {"app": f"{rng.choice(_JOB_NAMES)}-{_token(rng, 4)}",
                                  "role": "batch"})
    canary = Workload(space, "canary", {"app": f"canary-{_token(rng, 5)}", "track": "canary"})
    ns_sel = {"matchLabels": {"kubernetes.io/metadata.name": space}}
    extras: dict[str, PolicyExtras] = {}
    for name, anyone, port in services:
        if anyone or port is None:
            continue
        peers: list[dict[str, Any]] = []
        roll = rng.random()
        if roll < 0.3:
            peers.append({"namespaceSelector": ns_sel,
                          "podSelector": {"matchLabels": dict(job.labels)}})
        elif roll < 0.5:
            peers.append({"namespaceSelector": ns_sel,
                          "podSelector": {"matchLabels": {"track": "canary"}}})
        elif roll < 0.65:
            net = ipaddress.IPv4Network(f"{_public_ip(rng)}/{rng.choice((22, 23, 24))}",
                                        strict=False)
            cut = rng.choice(list(net.subnets(new_prefix=net.prefixlen + 3)))
            peers.append({"ipBlock": {"cidr": str(net), "except": [str(cut)]}})
        ports: list[dict[str, Any]] = []
        roll = rng.random()
        if roll < 0.25:
            ports.append({"protocol": "TCP", "port": rng.randrange(20000, 40000)})
        elif roll < 0.45:
            start = rng.randrange(40000, 60000)
            ports.append({"protocol": "TCP", "port": start,
                          "endPort": start + rng.randrange(2, 40)})
        extras[name] = PolicyExtras(tuple(peers), tuple(ports), rng.random() < 0.35,
                                    rng.random() < 0.5, rng.randrange(1 << 30),
                                    rng.random() < 0.5)
    return [job, canary], extras
