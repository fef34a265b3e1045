"""What a blocking object aims at, and the object each method makes for an aim.

A ``Target`` is a host, a subnet (with or without the router's own traffic to it), a pair
of subnets, or a range inside a subnet. ``draw_record`` makes one method's object for a
target, with every parameter drawn by ``blocking.py``. Faults aim at targets whose traffic
must flow (``faults.py``); the design's own blocks aim at targets the intent keeps apart
(``twins.py``); both call this, so a fault and a legitimate block differ only in their aim.
"""

from __future__ import annotations

import ipaddress
import random
from dataclasses import asdict, dataclass
from typing import Any

from netarena.route.emulator import blocking as b
from netarena.route.emulator.plan import ROUTER, NetworkPlan

__all__ = [
    "Target",
    "Policy",
    "draw_record",
    "draw_range",
    "prefix_lengths",
    "quiet_lengths",
    "unassigned",
    "METHOD_TYPE",
]

METHOD_TYPE = {
    "ip_forward_off": "DR", "forward_policy_drop": "DR", "rule_prohibit": "DR",
    "forward_drop_subnet": "DR", "ifconfig_down": "DI", "link_down": "DI",
    "mtu_too_small": "DI", "flush": "RI", "wrong_ip": "RI", "wrong_prefix": "RI",
    "duplicate_ip": "RI", "iptables_drop": "DT", "iptables_reject": "DT", "icmp_drop": "DT",
    "tc_zero_queue": "DT", "tcp_service_drop": "DT", "udp_reject": "DT",
    "wrong_interface": "WR", "unreachable_gateway": "WR", "metric_loses": "WR", "loop": "WR",
    "refusing_route": "WR", "forwarding_on": "DR",
}
"""Method → the fault type it belongs to (the design's blocks use the same methods)."""


@dataclass(frozen=True)
class Target:
    """What a blocking object aims at."""

    kind: str
    """``host``, ``subnet``, ``pair`` or ``range``."""
    subnet: int
    """The host's subnet, the subnet, the pair's first subnet, the range's subnet."""
    host: str | None = None
    """The host (``host`` targets)."""
    other: int | None = None
    """The pair's second subnet."""
    network: str | None = None
    """The range (``range`` targets)."""
    router: bool = True
    """A ``subnet`` target: whether the router's own traffic with it is aimed at too."""

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return asdict(self)


def draw_range(rng: random.Random, plan: NetworkPlan, subnet: int, with_hosts: bool
               ) -> str | None:
    """A block inside ``subnet`` holding a host (or none, nor the gateway); ``None``: none.

    Both kinds take their length by one law: the first, in a shuffled order, at which a
    block free of machines exists. A range holding a host was once any length alike, while
    a free one is seldom half its subnet (a machine sits in each half): faults' ranges,
    which hold a host, were told from the design's free ones by their length alone (the
    audit's ``prefix_delta``: one bit longer than the subnet 9% of faults' routes against
    1% of the design's).
    """
    net = ipaddress.IPv4Network(plan.subnet(subnet).network)
    taken = {ipaddress.IPv4Address(h.ip) for h in plan.hosts_in(subnet)}
    busy = taken | {ipaddress.IPv4Address(plan.subnet(subnet).gateway)}
    lengths = list(range(net.prefixlen + 1, 31))
    rng.shuffle(lengths)
    for length in lengths:
        blocks = list(net.subnets(new_prefix=length))
        rng.shuffle(blocks)
        free = next((b for b in blocks if not any(a in b for a in busy)), None)
        if free is None:
            continue
        if not with_hosts:
            return str(free)
        return next((str(b) for b in blocks if any(a in b for a in taken)), None)
    return None


def prefix_lengths(length: int) -> list[int]:
    """Other prefix lengths an address of a ``/length`` subnet may be given (both sides)."""
    return [p for p in range(max(8, length - 3), min(30, length + 3) + 1) if p != length]


def quiet_lengths(plan: NetworkPlan, subnet: int, address: str) -> list[int]:
    """The other prefix lengths under which ``address`` still reaches its whole subnet.

    Narrower: the gateway and every machine stay inside; wider: no other subnet meets it;
    and no machine's address becomes the network's or broadcast address.
    """
    own = plan.subnet(subnet)
    net = ipaddress.IPv4Network(own.network)
    needed = {ipaddress.IPv4Address(a) for a in (own.gateway, *(h.ip for h in plan.hosts_in(
        subnet)))}
    others = [ipaddress.IPv4Network(s.network) for s in plan.subnets if s.index != subnet]
    fits = []
    for length in prefix_lengths(net.prefixlen):
        span = ipaddress.IPv4Network(f"{address}/{length}", strict=False)
        if {span.network_address, span.broadcast_address} & needed:
            continue
        if length > net.prefixlen and not all(a in span for a in needed):
            continue
        if length < net.prefixlen and any(o.overlaps(span) for o in others):
            continue
        fits.append(length)
    return fits


_ON_HOST = 0.9
"""Share of a host's filter objects on its own INPUT rather than the router's FORWARD (at
0.6, 22% of faults' blocking rules sat on a host's INPUT against 37% of the design's, and
13% named one machine on the router's FORWARD against 9%; at 0.75, one machine 17% against
9%, 1,200 static instances, seed 61)."""


_ACL = 0.9
"""Share of a host's TCP filter objects that are a service's ACL (``! -s`` one subnet, a
port or a block of ports holding the TCP service), as 70% of the design's TCP blocking
rules are (``undisclosed._service_acl``): faults' had none, the audit's strongest filter
field after the eighth round (9% of the design's blocking rules, 0% of faults'); at 0.8,
with faults' other aims, 38% of their TCP blocking rules were ACLs against the design's
72%. A fault's ACL names a block of ports starting below the machines' TCP service, never
that port alone or first: the design's name another service's port, and faults' rules on
hosts naming the disclosed port were 1.9% of their blocking rules against 0.1% of the
design's (1,200 static instances, seed 61)."""


def _net(plan: NetworkPlan, t: Target) -> str:
    if t.kind == "host" and t.host:
        return f"{plan.host(t.host).ip}/32"
    if t.kind == "range" and t.network:
        return t.network
    return plan.subnet(t.subnet).network


def _matches(plan: NetworkPlan, t: Target) -> list[list[str]]:
    """The two directions of a target as iptables matches on the router's FORWARD chain."""
    if t.kind == "pair" and t.other is not None:
        a, o = plan.subnet(t.subnet).network, plan.subnet(t.other).network
        return [["-s", a, "-d", o], ["-s", o, "-d", a]]
    net = _net(plan, t)
    return [["-s", net], ["-d", net]]


def unassigned(rng: random.Random, plan: NetworkPlan, subnet: int) -> str:
    """An address of ``subnet`` no machine of the plan holds."""
    net = ipaddress.IPv4Network(plan.subnet(subnet).network)
    taken = {plan.subnet(subnet).gateway, *(h.ip for h in plan.hosts_in(subnet))}
    return str(rng.choice([a for a in net.hosts() if str(a) not in taken]))


def _intf(plan: NetworkPlan, t: Target) -> tuple[str, str]:
    if t.kind == "host" and t.host:
        return t.host, plan.host(t.host).intf
    return ROUTER, plan.subnet(t.subnet).router_intf


def _rules(rng: random.Random, plan: NetworkPlan, t: Target, method: str,
           ports: tuple[int, int], on_host: bool) -> dict[str, Any]:
    """Filter rules: on the target host's INPUT (``on_host``), else on the router."""
    proto: list[str] = []
    if method == "icmp_drop":
        proto = ["-p", "icmp"]
    elif method == "tcp_service_drop":  # every TCP port, or the service's (which the
        # design's rules seldom name: named half the time, it was in 5% of faults'
        # blocking rules against 0.5% of the design's), never on a host's INPUT (none of
        # the design's host rules names it)
        named = not on_host and rng.random() < 0.25
        proto = ["-p", "tcp", *(["--dport", str(ports[0])] if named else [])]
    elif method == "udp_reject":
        proto = ["-p", "udp"]
    name = proto[1] if proto else None
    acl = on_host and method == "tcp_service_drop" and rng.random() < _ACL
    if acl:  # as the design's service ACLs: everyone but one subnet, inserted first
        span = b.draw_port_span(rng, ports[0])
        while span[0] == ports[0]:  # a block from below it, as the design's ACLs name
            span = b.draw_port_span(rng, ports[0])  # another service's port first (_ACL)
        proto = ["-p", "tcp", "--dport", b.span_words(span)]
        match = [*proto, "!", "-s", rng.choice(plan.subnets).network]
        rules = [b.draw_rule(rng, "INPUT", match, name) | {"at": "first"}]
        node = str(t.host)
    elif on_host and t.host:  # everyone: the shape of the design's other host rules (an
        # out-of-service host's); never "-s" one subnet, which none has
        rules = [b.draw_rule(rng, "INPUT", proto, name)]
        if method in ("iptables_drop", "iptables_reject"):
            rules = b.refusing_everything(rng, rules[0])
        node = t.host
    else:
        both = _matches(plan, t)
        pick = both if method in ("iptables_drop", "iptables_reject") else [rng.choice(both)]
        rules = [b.draw_rule(rng, "FORWARD", [*m, *proto], name) for m in pick]
        if method == "icmp_drop" and t.kind == "subnet" and t.router:
            rules.append(b.draw_rule(rng, "INPUT", ["-s", _net(plan, t), *proto], name))
        node = ROUTER
    for rule in rules:
        if method == "iptables_drop" or (
                method == "tcp_service_drop" and not acl and rng.random() < 0.6):
            rule["verdict"] = ["DROP"]
        elif method in ("iptables_reject", "udp_reject") and rule["verdict"] == ["DROP"]:
            rule["verdict"] = ["REJECT", "--reject-with", "icmp-port-unreachable"]
    return {"node": node, "rules": rules}


def _route(rng: random.Random, plan: NetworkPlan, t: Target, method: str,
           avoid: frozenset[int], policy: Policy) -> dict[str, Any]:
    others = [s.index for s in plan.subnets if s.index != t.subnet and s.index not in avoid]
    other = rng.choice(others or [s.index for s in plan.subnets if s.index != t.subnet])
    dst = _net(plan, t)
    whole = dst == plan.subnet(t.subnet).network
    rec: dict[str, Any] = {"node": ROUTER, "intf": plan.subnet(t.subnet).router_intf,
                           "dst": dst, "replace": whole,
                           "out": plan.subnet(other).router_intf, "other": other}
    low, high = b.draw_metrics(rng)
    if method == "metric_loses":
        rec |= {"metric": low, "right_metric": high, "replace": whole}
    elif not whole:
        rec["metric"] = rng.choice((0, low, high))
    else:  # as the design's backups behind a subnet's route (without one: a fault's, 30:1)
        rec["metric"] = rng.choice((low, high))
    if method == "unreachable_gateway":
        rec["value"] = unassigned(rng, plan, other)
    elif method == "loop":
        via = rng.choice(plan.hosts_in(other))
        rec["value"] = via.ip
        if rng.random() < 0.5:
            rec["forwarding_host"] = via.name
    elif method == "refusing_route":
        rec["refusal"] = b.draw_refusal(rng)
    # a policy table routes a part of a subnet, as the design's tables do (undisclosed.py)
    if (method != "metric_loses" and not whole and not dst.endswith("/32") and policy.share
            and rng.random() < policy.share):  # the design's tables route ranges, not hosts
        rec |= _policy_table(rng, plan, others if policy.sources else [], dst)
    return rec


@dataclass(frozen=True)
class Policy:
    """Whether a route object goes in a policy-routing table, and whose traffic goes there."""

    share: float = 0.0
    """Share of route objects to a part of a subnet (never a backup's, never a whole
    subnet's) put in a table a rule sends traffic to."""
    sources: bool = False
    """Whether the rule may select one source subnet (a fault's: its target must be reached
    by all; a block's rule selects every source, as the block does)."""


def _policy_table(rng: random.Random, plan: NetworkPlan, sources: list[int], dst: str
                  ) -> dict[str, Any]:
    """A table, and a rule sending the target's traffic to it (from one subnet or from all).

    A rule for one source may select all its traffic (what the table lacks falls through to
    ``main``). The design's own policy tables are drawn alike (``undisclosed.py``).
    """
    source = rng.choice(sources) if sources and rng.random() < 0.7 else None
    table, pref = rng.randrange(100, 250), b.draw_pref(rng)
    to = dst if source is None else b.draw_policy_to(rng, plan, dst)
    return {"table": table, "pref": pref, "replace": False,
            "from": plan.subnet(source).network if source is not None else None, "to": to}


def _address(rng: random.Random, plan: NetworkPlan, t: Target, method: str) -> dict[str, Any]:
    node, intf = _intf(plan, t)
    subnet = plan.subnet(t.subnet)
    rec: dict[str, Any] = {"node": node, "intf": intf}
    if method == "wrong_ip":
        rec["value"] = unassigned(rng, plan, t.subnet)
    elif method == "duplicate_ip":
        mine = subnet.gateway if node == ROUTER else plan.host(node).ip
        owners = [h.ip for h in plan.hosts if h.ip != mine]  # the router takes a machine's,
        # as the design's router holds an out-of-service host's (twins._held_address); its
        # own address on another interface was a fault's alone (4% of address faults)
        if node != ROUTER and rng.random() < 0.45:  # a host given a gateway's address, as
            # the design's hosts hold one (twins._held: another subnet's, never the router's
            # first; a host given its own gateway's was a fault's alone, 9% of address faults;
            # at 0.55 with the design's looks held back, 18% of faults' against 14%)
            owners = [s.gateway for s in plan.subnets[1:] if s.index != t.subnet] or owners
        rec["value"] = rng.choice(owners)
    else:  # the design's own renumbered addresses take these lengths too (twins.py)
        mine = subnet.gateway if node == ROUTER else plan.host(node).ip
        fits = quiet_lengths(plan, t.subnet, mine)
        rec["value"] = rng.choice(fits or prefix_lengths(subnet.prefixlen))
    return rec


def draw_record(rng: random.Random, plan: NetworkPlan, t: Target, method: str,
                ports: tuple[int, int], avoid: frozenset[int] = frozenset(),
                policy: Policy = Policy()) -> b.Record:
    """One object of ``method`` aimed at ``t`` (see the module docstring).

    Args:
        rng: Where every parameter comes from.
        plan: The addressing plan.
        t: The aim.
        method: A fault method (``faults.METHODS``) or one of the design's extra ones
            (``refusing_route``, ``forwarding_on``).
        ports: The judged TCP and UDP service ports.
        avoid: Subnets a wrong route must not lead into (the design's: ones cut off).
        policy: Whether a route object may go in a policy-routing table (``Policy``).
    """
    node, intf = _intf(plan, t)
    rec: b.Record = {"type": METHOD_TYPE[method], "method": method, "subnet": t.subnet,
                     "other": t.other, "node": node, "intf": intf, "target": t.to_dict()}
    if method == "ip_forward_off":
        rec |= {"node": ROUTER, "intf": plan.subnet(t.subnet).router_intf}
    elif method == "forward_policy_drop":
        rec |= {"chain": "INPUT" if t.kind == "host" or rng.random() < 0.6 else "FORWARD"}
        rec["node"] = node if t.kind == "host" else ROUTER
    elif method == "rule_prohibit":
        net = _net(plan, t)
        if t.kind == "pair" and t.other is not None:  # never from the router's main side:
            ends = [net, plan.subnet(t.other).network]  # its replies come from there
            if t.subnet == plan.subnets[0].index:
                ends.reverse()
            selector = ["from", ends[0], "to", ends[1]]
        elif t.kind == "subnet" and not t.router:  # what arrives from it, not the router's
            selector = ["from", net, "iif", plan.subnet(t.subnet).router_intf]
        else:
            selector = ["to", net]
        rec |= {"node": ROUTER, "selector": selector, "refusal": b.draw_refusal(rng),
                "pref": b.draw_pref(rng)}
    elif method in ("forward_drop_subnet", "iptables_drop", "iptables_reject", "icmp_drop",
                    "tcp_service_drop", "udp_reject"):
        on_host = t.kind == "host" and method != "forward_drop_subnet" and rng.random() < _ON_HOST
        rec |= _rules(rng, plan, t, method, ports, on_host)
    elif method == "mtu_too_small":
        rec["mtu"] = b.draw_mtu(rng)
    elif method == "tc_zero_queue":
        rec["queue"] = b.draw_queue(rng)
    elif method in ("wrong_ip", "duplicate_ip", "wrong_prefix"):
        rec |= _address(rng, plan, t, method)
    elif method in ("wrong_interface", "unreachable_gateway", "metric_loses", "loop",
                    "refusing_route"):
        if t.kind == "host" and method == "unreachable_gateway":
            rec |= {"value": unassigned(rng, plan, t.subnet)}
        else:
            rec |= _route(rng, plan, t, method, avoid, policy)
    elif method == "forwarding_on" and t.host:
        rec |= {"node": t.host, "intf": None}
    return rec
