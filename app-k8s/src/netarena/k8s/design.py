"""Drawing one cluster's design: the detail its healthy policies carry (``detail``).

Everything here is drawn from the query's seed. The design is deliberately as varied as
the faults that will be injected into it (``faults`` draws its values from the same
pools), so no fault has a shape of its own:

* **Other teams' namespaces** (two, labelled with their team) hold running workloads (a
  batch job, a canary, a worker) and CronJobs between runs (their labels exist in the
  template, no pod does now), each labelled ``app`` plus a role, track or tier.
* **Extra peers** of a service's main rule: another team's workload (its namespace, by name
  or by team, AND some of its labels), a whole namespace, a partner's range (with or
  without an ``except``), or a CronJob's labels that select no pod at the moment.
* **Extra ports and rules**: entries beside the service port and admin or debug rules for
  callers, other services of the application and other teams, their ports drawn from the
  ports the cluster uses (every service's port, metrics and admin ports): TCP mostly, UDP
  and SCTP too (the service port for UDP as well, sometimes), ranges with ``endPort``.
* **Locked-down egress**: beside the services with an external dependency, some services'
  egress is limited to their callees and DNS, to DNS, or closed.
"""

from __future__ import annotations

import ipaddress
import random
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from netarena.k8s.detail import (
    ClusterDetail,
    ExternalEgress,
    Monitoring,
    PolicyExtras,
    Workload,
)
from netarena.k8s.policy import NS_NAME_LABEL as NS_NAME

if TYPE_CHECKING:
    from netarena.k8s.model import AppModel

__all__ = ["ServiceFacts", "draw_detail", "port_pool", "public_ip", "ADMIN_PORTS", "TEAM_LABEL",
           "except_cut", "external_range", "foreign_peer", "partner_range", "port_entry",
           "port_pool_of"]

TEAM_LABEL = "team"
"""The label another team's namespace carries with the team's name."""
ADMIN_PORTS = (6060, 8081, 8443, 9901, 5005, 15090, 4317, 8125, 514, 7946, 9000, 10250)
"""Admin, debug, tracing and sidecar ports teams open beside a service's own."""
_TEAMS = ("storefront", "payments", "checkout", "catalog", "growth", "fulfillment",
          "identity", "notifications", "search", "platform", "commerce", "marketing")
_TOOLS = ("kustomize", "helm", "argocd", "flux")
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
_DNS_UDP_ONLY = 0.3
"""Share of services whose DNS egress rule allows UDP only (many real policies do; without
any, a DNS rule left with UDP alone was a fault's in every case: ``netarena audit k8s``)."""
_DNS_FIRST = 0.5
"""Share of services whose restricted egress lists its DNS rule before its callees' rule.

With DNS always last, egress faults (which break calls, so land in the callees' rule) sat
in the first of two rules twice as often as the design's rules (``netarena audit k8s``)."""
_GENERIC_PROVIDERS = (("a partner API", 443), ("a SaaS webhook endpoint", 8443),
                      ("an LDAP directory", 636), ("a message broker", 5671))
_JOB_NAMES = ("report-builder", "cache-warmer", "catalog-sync", "invoice-export", "feed-import",
              "price-indexer", "stock-audit", "search-reindex", "ledger-close", "image-resizer")
_SPACES = ("batch", "jobs", "reporting", "analytics", "etl", "ops", "data", "backoffice")
_ROLES = (("role", "batch"), ("track", "canary"), ("tier", "worker"), ("role", "etl"))


@dataclass(frozen=True)
class ServiceFacts:
    """What the design needs to know of one service of the application."""

    name: str
    anyone: bool
    """Open to every pod (the public entry point)."""
    port: int | None
    """Container port (``None``: a client only)."""
    callees: tuple[str, ...] = ()
    """Services it may call."""
    callers: tuple[str, ...] = ()
    """Services the runbook lets call it."""


def public_ip(rng: random.Random) -> ipaddress.IPv4Address:
    """A global unicast IPv4 address."""
    while True:
        ip = ipaddress.IPv4Address(rng.randrange(1 << 24, 223 << 24))
        if ip.is_global and not ip.is_multicast:
            return ip


def _token(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(string.ascii_lowercase + string.digits) for _ in range(n))


def external_range(rng: random.Random) -> ipaddress.IPv4Network:
    """A provider's range, as a service's external egress names one."""
    prefix = rng.choice((24, 26, 27, 28, 29))
    return ipaddress.IPv4Network(f"{public_ip(rng)}/{prefix}", strict=False)


def except_cut(net: ipaddress.IPv4Network, rng: random.Random,
               keep: ipaddress.IPv4Address | None = None) -> str | None:
    """A quarter cut out of half the ranges of /28 or wider (not the quarter holding ``keep``)."""
    if net.prefixlen > 28 or rng.random() >= 0.5:
        return None
    return str(rng.choice([s for s in net.subnets(new_prefix=net.prefixlen + 2)
                           if keep is None or keep not in s]))


def _external(service: str, purpose: str, port: int, rng: random.Random) -> ExternalEgress:
    net = external_range(rng)
    inside = net.network_address + rng.randrange(1, net.num_addresses - 1)
    outside = public_ip(rng)
    while outside in net:
        outside = public_ip(rng)
    return ExternalEgress(service, purpose, str(net), port, str(inside), str(outside))


def port_pool(services: list[ServiceFacts], metrics: dict[str, int]) -> list[int]:
    """Every port the cluster uses: service ports, metrics ports and admin ports."""
    return sorted({*(f.port for f in services if f.port is not None), *metrics.values(),
                   *ADMIN_PORTS})


def port_pool_of(model: AppModel) -> list[int]:
    """``port_pool`` of a drawn application."""
    metrics = model.detail.monitoring.metrics_ports if model.detail else {}
    facts = [ServiceFacts(s.name, False, s.container_port) for s in model.services]
    return port_pool(facts, metrics)


def _draw_spaces(rng: random.Random) -> dict[str, str]:
    """Two other teams' namespaces → their team."""
    kinds = rng.sample(_SPACES, 2)
    teams = rng.sample(_TEAMS, 2)
    return {f"{kind}-{_token(rng, 4)}": team for kind, team in zip(kinds, teams, strict=True)}


def _draw_workloads(spaces: dict[str, str], rng: random.Random) -> list[Workload]:
    out: list[Workload] = []
    for space in spaces:
        for k in range(rng.randint(2, 3)):
            key, value = rng.choice(_ROLES)
            name = (f"canary-{_token(rng, 5)}" if value == "canary"
                    else f"{rng.choice(_JOB_NAMES)}-{_token(rng, 4)}")
            running = k == 0 or rng.random() < 0.6
            out.append(Workload(space, name, {"app": name, key: value}, running))
    return out


def _namespace_selector(space: str, spaces: dict[str, str], rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.35:
        return {"matchLabels": {TEAM_LABEL: spaces[space]}}
    return {"matchLabels": {NS_NAME: space}}


def _pod_selector(w: Workload, rng: random.Random) -> dict[str, Any]:
    keys = sorted(w.labels)
    pick = rng.choice([["app"], [k for k in keys if k != "app"], keys])
    return {"matchLabels": {k: w.labels[k] for k in pick}}


def foreign_peer(spaces: dict[str, str], workloads: list[Workload],
                 rng: random.Random) -> dict[str, Any]:
    """A peer for another team: its workload, a whole namespace, or a partner's range."""
    roll = rng.random()
    if roll < 0.55:
        w = rng.choice(workloads)
        peer = {"namespaceSelector": _namespace_selector(w.namespace, spaces, rng),
                "podSelector": _pod_selector(w, rng)}
        if rng.random() < 0.15:  # written without the namespace: it selects no pod here
            del peer["namespaceSelector"]
        return peer
    if roll < 0.75:
        return {"namespaceSelector": _namespace_selector(rng.choice(sorted(spaces)), spaces, rng)}
    return {"ipBlock": partner_range(rng)}


def partner_range(rng: random.Random) -> dict[str, Any]:
    """A partner's range as another team's rule admits it (an ``ipBlock``, often cut)."""
    net = ipaddress.IPv4Network(f"{public_ip(rng)}/{rng.choice((20, 22, 23, 24, 26))}",
                                strict=False)
    block: dict[str, Any] = {"cidr": str(net)}
    if rng.random() < 0.6:
        block["except"] = [str(rng.choice(list(net.subnets(new_prefix=net.prefixlen + 3))))]
    return block


def port_entry(pool: list[int], declared: list[int], rng: random.Random) -> dict[str, Any]:
    """One extra port entry: a port the pods declare or one the cluster uses, maybe a range.

    Half the time a declared port (mostly TCP), else any port of the cluster (TCP, UDP or
    SCTP).
    """
    if declared and rng.random() < 0.5:
        return {"protocol": rng.choices(("TCP", "UDP"), (0.8, 0.2))[0],
                "port": rng.choice(declared)}
    port = rng.choice(pool)
    entry: dict[str, Any] = {"protocol": rng.choices(("TCP", "UDP", "SCTP"), (0.55, 0.35, 0.1))[0],
                             "port": port}
    if rng.random() < 0.15 and port < 65000:
        entry["endPort"] = port + rng.randint(1, 40)
    return entry


def _admin_rule(f: ServiceFacts, services: list[ServiceFacts], spaces: dict[str, str],
                workloads: list[Workload], pool: list[int], declared: list[int],
                rng: random.Random) -> dict[str, Any]:
    others = [s.name for s in services if s.name != f.name]
    peers: list[dict[str, Any]] = []
    for _ in range(rng.choice((1, 1, 2))):
        roll = rng.random()
        if roll < 0.35 and f.callers:
            peers.append({"podSelector": {"matchLabels": {"app": rng.choice(f.callers)}}})
        elif roll < 0.65:
            peers.append({"podSelector": {"matchLabels": {"app": rng.choice(others)}}})
        else:
            peers.append(foreign_peer(spaces, workloads, rng))
    ports = [port_entry(pool, declared, rng) for _ in range(rng.choice((1, 1, 2)))]
    if rng.random() < 0.5:  # written for one protocol
        proto = rng.choices(("TCP", "UDP", "SCTP"), (0.55, 0.35, 0.1))[0]
        ports = [{**e, "protocol": proto} for e in ports]
    return {"from": peers, "ports": ports}


def _draw_admin_ports(services: list[ServiceFacts], metrics: dict[str, int],
                      rng: random.Random) -> dict[str, tuple[tuple[str, int], ...]]:
    """Further container ports some services' pods declare (admin, debug, health)."""
    out: dict[str, tuple[tuple[str, int], ...]] = {}
    for f in services:
        if f.port is None or rng.random() < 0.4:
            continue
        taken = {f.port, metrics.get(f.name)}
        ports = rng.sample([p for p in ADMIN_PORTS if p not in taken], rng.choice((1, 1, 2)))
        names = rng.sample(("admin", "debug", "health", "grpc-admin", "profiler"), len(ports))
        out[f.name] = tuple(zip(names, sorted(ports), strict=True))
    return out


def _draw_extras(services: list[ServiceFacts], spaces: dict[str, str],
                 workloads: list[Workload], pool: list[int],
                 declared: dict[str, list[int]],
                 rng: random.Random) -> dict[str, PolicyExtras]:
    extras: dict[str, PolicyExtras] = {}
    for f in services:
        if f.anyone or f.port is None:
            continue
        own = declared.get(f.name, [])
        peers = tuple(foreign_peer(spaces, workloads, rng)
                      for _ in range(rng.choices((0, 1, 2), (0.35, 0.45, 0.2))[0]))
        ports = tuple(port_entry(pool, own, rng)
                      for _ in range(rng.choices((0, 1, 2), (0.4, 0.4, 0.2))[0]))
        rules = tuple(_admin_rule(f, services, spaces, workloads, pool, own, rng)
                      for _ in range(rng.choices((0, 1, 2, 3), (0.3, 0.35, 0.25, 0.1))[0]))
        extras[f.name] = PolicyExtras(peers, ports, rng.random() < 0.35, rng.random() < 0.5,
                                      rng.randrange(1 << 30), rng.random() < 0.5, rules)
    return extras


def _draw_locks(services: list[ServiceFacts], external: set[str],
                rng: random.Random) -> dict[str, str]:
    """Each service's egress lock (``open`` ones left out).

    A service that dials others (a client dials the public entry point) is never cut off
    from them: the healthy application works.
    """
    public = {f.name for f in services if f.anyone}
    locks: dict[str, str] = {}
    for f in services:
        if f.name in external or f.anyone:
            continue
        lock = rng.choices(("open", "callees", "dns", "none"), (0.5, 0.26, 0.12, 0.12))[0]
        dials = [c for c in f.callees if f.port is None or c not in public]
        if dials and lock in ("dns", "none"):
            lock = "callees"
        if lock != "open":
            locks[f.name] = lock
    return locks


def _ownership(policies: list[str], rng: random.Random
               ) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
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
    return labels, notes


def draw_detail(services: list[ServiceFacts], policies: list[str],
                rng: random.Random) -> ClusterDetail:
    """Draw one cluster's detail.

    Args:
        services: What the design knows of each service.
        policies: Every policy name (ownership is drawn for each).
        rng: Source of every choice.
    """
    scrapable = [(f.name, f.port) for f in services if f.port is not None and not f.anyone]
    k = rng.randint(max(1, len(scrapable) // 3), max(1, len(scrapable)))
    metrics: dict[str, int] = {}
    for name, own_port in sorted(rng.sample(scrapable, min(k, len(scrapable)))):
        metrics[name] = rng.choice([p for p in _METRICS_PORTS if p != own_port])
    monitoring = Monitoring(rng.choice(_MON_NAMESPACES), {"app.kubernetes.io/name": "prometheus"},
                            {"app.kubernetes.io/name": "grafana"}, metrics)
    servers = [f.name for f in services if f.port is not None]
    known = [n for n in servers if n in _PROVIDERS]
    pool = known if len(known) >= 2 else servers
    chosen = sorted(rng.sample(pool, rng.randint(1, min(3, len(pool)))))
    egress = tuple(_external(n, *(_PROVIDERS.get(n) or rng.choice(_GENERIC_PROVIDERS)), rng)
                   for n in chosen)
    labels, notes = _ownership(policies, rng)
    stranger = public_ip(rng)
    while any(stranger in ipaddress.IPv4Network(e.cidr) for e in egress):
        stranger = public_ip(rng)
    spaces = _draw_spaces(rng)
    workloads = _draw_workloads(spaces, rng)
    admin = _draw_admin_ports(services, metrics, rng)
    declared = {f.name: [p for p in (f.port, metrics.get(f.name), *(q for _, q in
                                                                    admin.get(f.name, ())))
                         if p is not None] for f in services}
    extras = _draw_extras(services, spaces, workloads, port_pool(services, metrics), declared,
                          rng)
    locks = _draw_locks(services, {e.service for e in egress}, rng)
    excepts = {}
    for e in egress:
        cut = except_cut(ipaddress.IPv4Network(e.cidr), rng, ipaddress.IPv4Address(e.inside_ip))
        if cut:
            excepts[e.service] = cut
    deny = rng.choices((("Ingress", "Egress"), ("Ingress",), ("Egress",)), (0.6, 0.25, 0.15))[0]
    public_port_only = rng.random() < 0.5
    udp_only = frozenset(f.name for f in services if rng.random() < _DNS_UDP_ONLY)
    dns_first = frozenset(f.name for f in services if rng.random() < _DNS_FIRST)
    return ClusterDetail(monitoring, egress, labels, notes, str(stranger), tuple(workloads),
                         extras, excepts, spaces, admin, public_port_only, deny, locks,
                         udp_only, dns_first)
