"""Legitimate configuration the prompt does not describe, drawn per query from its seed.

Real machines carry more than an inventory says: port-forwards, NAT, policy routing, static
routes, bogon blackholes, host firewalls, commented rules, shapers, service addresses, kernel
settings. Each network gets a seeded mix of such ``Item``s (the router always carries a
route, address or rule of its own), applied after the intent. None of it changes which pairs
answer; an agent that rebuilds a machine from the prompt wipes it, and the collateral diff
(``collateral.py``) sees that.

Every machine also runs the judge's TCP and UDP services on the query's ports (disclosed);
some items add services of their own. The design's own blocks and harmless fault-shaped
objects (``twins.py``) land among the items as faults do. Addresses, priorities and
comments are drawn as faults draw theirs (``blocking.py``): no shape is a fault's alone.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from netarena.route.emulator import blocking
from netarena.route.emulator.blocking import COMMENTS, Record, draw_pref, draw_refusal, draw_rule
from netarena.route.emulator.intent import Intent, opens_a_path
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.targets import draw_range, unassigned
from netarena.route.emulator.twins import draw_twins, keeps_gateways

__all__ = ["Item", "Undisclosed", "draw_undisclosed", "DEFAULT_PORTS"]

DEFAULT_PORTS = (5001, 5002)
"""The judge's TCP and UDP ports when a network is built without a drawn configuration."""

_KINDS = ("vip", "static_route", "host_route", "bogons", "policy_routing", "filter_notes",
          "port_forward", "masquerade", "service_acl", "shaping", "sysctls")
_ROUTER_OWN = ("vip", "static_route", "bogons", "policy_routing")
_BOGONS = (("blackhole", "198.18.0.0/15"), ("unreachable", "192.0.2.0/24"),
           ("prohibit", "198.51.100.0/24"), ("blackhole", "203.0.113.0/24"),
           ("blackhole", "240.0.0.0/4"))
_NOTES = COMMENTS
_FIREWALLED = 0.5
"""Share of the hosts the intent does not guard that run a firewall of their own. With one
on one or two hosts, 30% of faults' blocking rules sat alone in an empty chain against 27%
of the design's, and after an allow-list none of faults' against 14% of the design's (its
guarded hosts' final rules; 1,200 static instances, seed 61)."""


@dataclass(frozen=True)
class Item:
    """One piece of undisclosed configuration on one machine."""

    kind: str
    """What it is (``port_forward``, ``policy_routing``...)."""
    node: str
    """The machine it lives on."""
    ip: tuple[str, ...] = ()
    """``ip -batch`` lines (``route add ...``)."""
    filter: tuple[str, ...] = ()
    """``iptables-restore --noflush`` lines of the filter table (``-A ...``)."""
    nat: tuple[str, ...] = ()
    """``iptables-restore --noflush`` lines of the nat table."""
    tc: tuple[str, ...] = ()
    """``tc -batch`` lines."""
    sysctls: tuple[tuple[str, str], ...] = ()
    """``(key, value)`` kernel settings (``net.ipv4.conf.h1-eth0.rp_filter``, ``2``)."""
    tcp_services: tuple[int, ...] = ()
    """TCP ports this item has the machine listen on."""
    published: tuple[str, ...] = ()
    """``address:port`` pairs another machine forwards to these services (a port-forward's
    public side); empty when clients reach them at the machine's own address."""
    clients: str = ""
    """The only network these services accept connections from (empty: any)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        """Inverse of ``asdict``."""
        data = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**data | {"sysctls": tuple(tuple(kv) for kv in data.get("sysctls", ()))})


@dataclass(frozen=True)
class Undisclosed:
    """The judge's service ports and the undisclosed items of one network."""

    tcp_port: int = DEFAULT_PORTS[0]
    """Every machine's judged TCP service."""
    udp_port: int = DEFAULT_PORTS[1]
    """Every machine's judged UDP service."""
    items: tuple[Item, ...] = field(default_factory=tuple)
    """Undisclosed configuration, in the order it is applied."""
    twins: tuple[Record, ...] = field(default_factory=tuple)
    """The design's blocks and harmless fault-shaped objects (``twins.py``), applied after items."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form (for ``Query.truth``)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Undisclosed:
        """Inverse of ``to_dict``; ``None`` (an older query) gives an empty configuration."""
        if not data:
            return cls()
        items = tuple(Item.from_dict(i) for i in data["items"])
        return cls(data["tcp_port"], data["udp_port"], items, tuple(data.get("twins", ())))

    def on(self, node: str) -> list[Item]:
        """The items of ``node``."""
        return [i for i in self.items if i.node == node]

    def tcp_services(self, node: str) -> list[int]:
        """Extra TCP ports ``node`` listens on."""
        return [p for i in self.on(node) for p in i.tcp_services]


class _Draw:
    """The state one drawing needs: the plan, the rng and the numbers already used."""

    def __init__(self, rng: random.Random, plan: NetworkPlan, intent: Intent) -> None:
        self.rng, self.plan, self.intent = rng, plan, intent
        off = {b.host for b in intent.blocks if b.kind == "host_off"}
        cut = intent.cut_subnets
        self.hosts = [h for h in plan.hosts if h.name not in off and h.subnet not in cut]
        self.subnets = [s for s in plan.subnets if s.index not in cut]
        self.ports: set[int] = set()
        self.ranges = {b.network for b in intent.blocks if b.network}
        self.octets: set[int] = set()
        self.tables: set[int] = set()

    def port(self) -> int:
        while (port := self.rng.randrange(2000, 9900)) in self.ports:
            pass
        self.ports.add(port)
        return port

    def octet(self) -> int:
        while (octet := self.rng.randrange(1, 250)) in self.octets:
            pass
        self.octets.add(octet)
        return octet

    def metric(self) -> str:
        """A route's metric clause (none, or a metric drawn as faults draw theirs)."""
        metric = blocking.draw_metric(self.rng)
        return f" metric {metric}" if metric else ""

    def spare(self, subnet: int | None = None) -> str | None:
        """An unused range of ``subnet`` (or any), not yet taken (a quarantine's, an item's).

        Items route a range outside the inventory's subnets only when none is left: such
        routes were the design's alone (no fault can route a range no probe crosses), and
        the audit ranked them as the design's with certainty.
        """
        for _ in range(8):
            index = self.rng.choice(self.plan.subnets).index if subnet is None else subnet
            net = draw_range(self.rng, self.plan, index, False)
            if net is not None and net not in self.ranges:
                self.ranges.add(net)
                return net
        return None

    def host(self) -> Any:
        return self.rng.choice(self.hosts)

    def node(self) -> str:
        return ROUTER if self.rng.random() < 0.5 else self.host().name

    def intf(self, node: str) -> str:
        if node == ROUTER:
            return self.rng.choice(self.subnets).router_intf
        return self.plan.host(node).intf

    def router_side(self, host: Any) -> str:
        return self.plan.subnet(host.subnet).router_intf


def _vip(d: _Draw) -> list[Item]:
    host = d.host()
    via = f"via {host.ip} " if d.rng.random() < 0.5 else ""  # or on the link itself
    # a service address inside the host's own subnet (one outside the inventory, as a
    # carrier-grade NAT one, was the design's alone: no fault can route one)
    vip, pool = unassigned(d.rng, d.plan, host.subnet), None
    if d.rng.random() < 0.5:  # held by the router, on that subnet's side (a VRRP-like VIP)
        return [Item("vip", ROUTER, ip=(f"addr add {vip}/32 dev {d.router_side(host)}",))]
    # or one of the host's pool, a free block of its subnet routed to it whole (a route to
    # one unassigned address was the design's alone: no fault routes one)
    if (pool := d.spare(host.subnet)) is not None:
        vip = str(d.rng.choice(list(ipaddress.IPv4Network(pool).hosts())))
    return [Item("vip", host.name, ip=(f"addr add {vip}/32 dev {host.intf}",)),
            Item("vip", ROUTER, ip=(f"route add {pool or vip + '/32'} {via}dev "
                                    f"{d.router_side(host)}{d.metric()}",))]


def _static_route(d: _Draw) -> list[Item]:
    """A range (or a host) the router reaches on a link, at times with a backup path."""
    host = d.host()
    net = d.spare() or f"100.80.{d.octet()}.0/24"  # an unused part of a subnet
    via = f"via {host.ip} " if d.rng.random() < 0.15 else ""  # or on the link itself
    pinned = d.rng.random() < 0.5  # or the host itself, pinned to its link (no backup: a
    if pinned:  # fault that takes the link down drops the pin, and the backup would win)
        net, via = f"{host.ip}/32", ""
    side = d.router_side(host)
    others = [s.router_intf for s in d.subnets if s.router_intf != side]
    if others and not pinned and d.rng.random() < 0.6:
        low, high = blocking.draw_metrics(d.rng)
        return [Item("static_route", ROUTER, ip=(
            f"route add {net} {via}dev {side} metric {low}",
            f"route add {net} dev {d.rng.choice(others)} metric {high}"))]
    return [Item("static_route", ROUTER, ip=(f"route add {net} {via}dev {side}{d.metric()}",))]


def _host_route(d: _Draw) -> list[Item]:
    host = d.host()  # a gateway long gone, for a range nothing uses any more (through the
    # host's own gateway was the design's alone: it breaks nothing, so no fault writes one)
    gateway = unassigned(d.rng, d.plan, host.subnet)
    net = d.spare() or f"100.100.{d.octet()}.0/24"  # an unused part of a subnet
    line = f"route add {net} via {gateway} dev {host.intf}{d.metric()}"
    return [Item("host_route", host.name, ip=(line,))]


def _bogons(d: _Draw) -> list[Item]:
    chosen = d.rng.sample(_BOGONS, d.rng.randint(1, 3))
    return [Item("bogons", ROUTER, ip=tuple(f"route add {kind} {net}" for kind, net in chosen))]


_TABLES = ((1, 2, 3, 4), (65, 26, 7, 2))
"""Tables of the router's policy routing and their weights: its lookups count as a Poisson
does (from 1 or 2 tables, networks with one were 45% against a Poisson's 36%)."""


def _policy_routing(d: _Draw) -> list[Item]:
    subnet = d.rng.choice(d.subnets)
    lines: tuple[str, ...] = ()
    for _ in range(d.rng.choices(*_TABLES)[0]):  # ranges in tables of their own
        lines += _policy_table(d, subnet.network)
    spare = d.spare()
    if spare is not None and d.rng.random() < 0.4:
        lines += (f"rule add to {spare} {draw_refusal(d.rng)} pref {draw_pref(d.rng)}",)
    return [Item("policy_routing", ROUTER, ip=lines)]


def _policy_table(d: _Draw, source: str) -> tuple[str, str]:
    """A rule for ``source`` (all, to a subnet, to a range) or every source, and its route."""
    host = d.host()
    while (table := d.rng.randrange(100, 250)) in d.tables:
        pass
    d.tables.add(table)
    pref, net = draw_pref(d.rng), d.spare() or f"100.96.{d.octet()}.0/24"
    every = d.rng.random() < 0.18  # with the twins, as a third of faults' rules select all
    chosen = net if every else blocking.draw_policy_to(d.rng, d.plan, net)
    to = "" if chosen is None else f" to {chosen}"
    draw = d.rng.random()  # through a host, a gateway long gone (as faults'), or on the link
    gone = unassigned(d.rng, d.plan, host.subnet) if 0.4 <= draw < 0.55 else None
    via = f"via {host.ip} " if draw < 0.4 else f"via {gone} " if gone else ""
    return (f"rule add from {'all' if every else source}{to} lookup {table} pref {pref}",
            f"route add {net} {via}dev {d.router_side(host)}{d.metric()} table {table}")


def _filter_notes(d: _Draw) -> list[Item]:
    node = d.node()
    lines = []
    for _ in range(d.rng.randint(1, 3)):
        note = d.rng.choice(_NOTES)
        style = d.rng.choice(("count", "log", "ssh"))
        if style == "count":
            net = d.rng.choice(d.plan.subnets).network
            chain = "FORWARD" if node == ROUTER else "INPUT"
            lines.append(f'-A {chain} -s {net} -m comment --comment "{note}"')
        elif style == "log":
            lines.append(f'-A INPUT -p tcp --dport {d.port()} -m limit --limit 2/min '
                         f'-j LOG --log-prefix "{note[:20]}: "')
        else:
            lines.append(f'-A INPUT -p tcp --dport 22 -m comment --comment "{note}" -j ACCEPT')
    return [Item("filter_notes", node, filter=tuple(lines))]


def _host_firewall(d: _Draw) -> list[Item]:
    """Firewalls that keep state and let operators in (refusing nothing), on unguarded hosts.

    Half hold an allow-list staged before its final rule. Hosts out of service have none:
    with one, their own traffic would come back as established.
    """
    items = []
    guarded = {p.host for p in d.intent.protected}
    for host in [h for h in d.hosts if h.name not in guarded]:
        if d.rng.random() >= _FIREWALLED:
            continue
        state = d.rng.choice(("-m state --state", "-m conntrack --ctstate"))
        lines = ["-A INPUT -i lo -j ACCEPT", f"-A INPUT {state} RELATED,ESTABLISHED -j ACCEPT"]
        if d.rng.random() < 0.5:
            lines.append(f'-A INPUT -p tcp --dport 22 -m comment --comment "{d.rng.choice(_NOTES)}"'
                         " -j ACCEPT")
        others = [s.index for s in d.plan.subnets if s.index != host.subnet]
        if others and d.rng.random() < 0.5:
            staged = {host.subnet, *d.rng.sample(others, d.rng.randint(0, len(others) - 1))}
            lines += [f"-A INPUT -s {d.plan.subnet(i).network} -j ACCEPT" for i in sorted(staged)]
        if d.rng.random() < 0.5:
            lines.append(f"-A INPUT -p tcp --dport {d.port()} -m limit --limit 2/min -j LOG")
        items.append(Item("host_firewall", host.name, filter=tuple(lines)))
    return items


def _port_forward(d: _Draw) -> list[Item]:
    """A service published where its clients may reach its host anyway (``opens_a_path``)."""
    host = d.host()
    front = d.rng.choice(d.subnets)
    if opens_a_path(d.plan, d.intent, host.name, front.gateway):
        front = d.rng.choice([s for s in d.subnets
                              if not opens_a_path(d.plan, d.intent, host.name, s.gateway)])
    outside, inside = d.port(), d.port()
    rule = (f"-A PREROUTING -d {front.gateway}/32 -p tcp -m tcp --dport {outside} "
            f'-m comment --comment "{host.name} service" -j DNAT --to-destination '
            f"{host.ip}:{inside}")
    published = (f"{front.gateway}:{outside}",)
    return [Item("port_forward", ROUTER, nat=(rule,)),
            Item("port_forward", host.name, tcp_services=(inside,), published=published)]


def _masquerade(d: _Draw) -> list[Item]:
    subnet = d.rng.choice(d.plan.subnets)
    uplink = f"100.72.{d.octet()}.0/24"
    rule = f"-A POSTROUTING -s {subnet.network} -d {uplink} -j MASQUERADE"
    return [Item("masquerade", ROUTER, nat=(rule,))]


def _service_acl(d: _Draw) -> list[Item]:
    """A service only one subnet may reach: its port, or a block of ports holding it."""
    host, port = d.host(), d.port()
    allowed = d.rng.choice(d.plan.subnets).network
    record = draw_rule(d.rng, "INPUT", [], "tcp")
    verdict = " ".join(record["verdict"])
    note = f' -m comment --comment "{record["comment"]}"' if record["comment"] else ""
    span = blocking.draw_port_span(d.rng, port, d.ports - {port})
    d.ports.update(range(span[0], span[1] + 1))  # later draws keep out of it
    rule = (f"-I INPUT -p tcp --dport {blocking.span_words(span)} ! -s {allowed}{note}"
            f" -j {verdict}")
    return [Item("service_acl", host.name, filter=(rule,), tcp_services=(port,), clients=allowed)]


def _shaping(d: _Draw) -> list[Item]:
    if d.rng.random() < 0.75:
        return []  # most networks shape nothing
    node = d.node()
    intf = d.intf(node)
    if d.rng.random() < 0.6:
        rate = d.rng.choice((100, 200, 500, 1000))
        line = f"qdisc add dev {intf} root tbf rate {rate}mbit burst 256kb latency 50ms"
    else:
        line = f"qdisc add dev {intf} root pfifo limit {d.rng.choice((100, 500, 1000))}"
    return [Item("shaping", node, tc=(line,))]


def _sysctls(d: _Draw) -> list[Item]:
    items = []
    for node in dict.fromkeys(d.node() for _ in range(d.rng.randint(1, 3))):
        intf = d.intf(node)
        conf = f"net.ipv4.conf.{intf}"
        choices = [
            (f"{conf}.rp_filter", d.rng.choice(("1", "2"))),
            (f"{conf}.arp_ignore", "1"),
            (f"{conf}.arp_announce", "2"),
            (f"{conf}.accept_redirects", "0"),
            (f"{conf}.log_martians", "1"),
        ]
        if node == ROUTER:
            choices.append((f"{conf}.send_redirects", "0"))
        else:
            choices.append(("net.ipv4.conf.all.accept_redirects", "0"))
        picked = d.rng.sample(choices, d.rng.randint(1, len(choices)))
        items.append(Item("sysctls", node, sysctls=tuple(sorted(picked))))
    return items


_DRAWERS = {"vip": _vip, "static_route": _static_route, "host_route": _host_route,
            "bogons": _bogons, "policy_routing": _policy_routing, "filter_notes": _filter_notes,
            "port_forward": _port_forward, "masquerade": _masquerade,
            "service_acl": _service_acl, "shaping": _shaping, "sysctls": _sysctls}


def draw_undisclosed(rng: random.Random, plan: NetworkPlan, intent: Intent) -> Undisclosed:
    """Draw the service ports and 3 to 7 kinds of undisclosed configuration for ``plan``.

    At least one kind gives the router a route, address or rule of its own.
    """
    d = _Draw(rng, plan, intent)
    tcp_port, udp_port = d.port(), d.port()
    kinds = [rng.choice(_ROUTER_OWN)]
    others = [k for k in _KINDS if k not in kinds]
    kinds += rng.sample(others, rng.randint(2, 6))
    items = [*_host_firewall(d), *(item for kind in kinds for item in _DRAWERS[kind](d))]
    restricted = intent.restricted.subnet if intent.restricted else None
    public = {p.rpartition(":")[0] for item in items for p in item.published}
    twins = draw_twins(rng, plan, intent.blocks, (tcp_port, udp_port), restricted, public)
    twins = [t for t in twins
             if keeps_gateways(t, plan, [x for i in items if i.node == t["node"] for x in i.ip])]
    return Undisclosed(tcp_port, udp_port, tuple(items), tuple(twins))
