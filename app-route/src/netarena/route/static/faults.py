"""The five fault types, their methods, and the commands that inject each.

Generation is pure: ``sample_fault(rng, plan, intent, kind)`` draws a method and concrete
targets from the addressing plan. Each fault slot of a query carries several candidates
(attempt 0, 1, ...) drawn from sub-seeds, so ``open()`` can skip candidates that turn out
to have no effect in the live emulator and still end up with the same faults everywhere.

Method notes (measured on this kernel): ``tc netem`` is missing, so the "heavy delay"
method of ``drop_traffic_to_from_subnet`` is a zero-length ``pfifo`` queue (every packet
leaving the interface is dropped). An MTU of 68 breaks pings because probes are standard
84-byte echo packets and veth drops oversized frames on receive.
"""

from __future__ import annotations

import random

from netarena.route.emulator.blocking import commands, draw_metric
from netarena.route.emulator.intent import Intent
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.targets import Policy, Target, draw_range, draw_record
from netarena.route.emulator.undisclosed import DEFAULT_PORTS
from netarena.route.static.fault_forms import Fault, as_the_designs, toward, with_drops_beside
from netarena.route.static.looks import NO_LOOKS, DesignLooks

__all__ = [
    "FAULT_TYPES",
    "METHODS",
    "LEVEL_LABELS",
    "CANDIDATES_PER_FAULT",
    "Fault",
    "sample_fault",
    "fault_candidates",
    "injection_commands",
]

FAULT_TYPES = {
    "DR": "disable_routing",
    "DI": "disable_interface",
    "RI": "remove_ip",
    "DT": "drop_traffic_to_from_subnet",
    "WR": "wrong_routing_table",
}
"""Label code → fault type name."""

METHODS: dict[str, tuple[str, ...]] = {
    "DR": ("ip_forward_off", "forward_policy_drop", "rule_prohibit", "forward_drop_subnet"),
    "DI": ("ifconfig_down", "link_down", "mtu_too_small"),
    "RI": ("flush", "wrong_ip", "wrong_prefix", "duplicate_ip"),
    "DT": (
        "iptables_drop",
        "iptables_reject",
        "icmp_drop",
        "tc_zero_queue",
        "tcp_service_drop",
        "udp_reject",
    ),
    "WR": ("wrong_interface", "unreachable_gateway", "metric_loses", "loop"),
}
"""Injection methods per fault type."""

_WEIGHTS = {"icmp_drop": 0.45, "tcp_service_drop": 0.6, "udp_reject": 0.45, "metric_loses": 0.5,
            "wrong_ip": 1.4, "wrong_prefix": 0.55}
"""How often a method is drawn against its type's others (1 when not named here), so that
faults' objects come in the shapes and shares the design's do (measurements: docs/validity.md).

- The methods refusing one protocol, TCP 0.6, ICMP and UDP 0.45. Drawn uniformly they made
  half of the faults' blocking rules, refusing one protocol 53% of the time against the
  design's 36%, in shorter chains and nearer their top; now every protocol is refused in
  67% of faults' rules against the design's 63%.
- ``wrong_ip`` 1.4, ``wrong_prefix`` 0.55: with the design's looks held back
  (``_ANOTHER_LOOK``), an unassigned address was 27% of faults' addresses against 37.5%
  of the design's, a host's own under another length 28% against 20.5%.
- ``metric_loses``, 0.5: it writes two routes to one destination (the right one losing on
  metric), as the design's routes with a backup do. Drawn uniformly, 38% of the faults'
  routes were such a pair against 23% of the design's; now 25%."""
_METHOD_WEIGHTS = {kind: [_WEIGHTS.get(m, 1.0) for m in methods]
                   for kind, methods in METHODS.items()}

LEVEL_LABELS: dict[int, tuple[str, ...]] = {
    1: ("DR", "DI", "RI", "DT", "WR"),
    2: ("DR+DI", "DR+RI", "DR+DT", "DR+WR", "RI+WR"),
    3: ("DT+WR", "DI+DT", "DI+WR", "RI+DT", "DI+RI"),
}
"""The brief's fault combinations per level."""

CANDIDATES_PER_FAULT = 10
"""Candidates stored per fault slot; open() takes the first that breaks connectivity."""

_INTERFACE = {"host": 4, "subnet": 1}
_LINK = {"host": 7, "subnet": 1}
_FILTER = {"host": 8, "subnet": 3, "pair": 1, "range": 3}
_ROUTE = {"host": 8, "subnet": 5, "range": 8}
_ONE_PROTOCOL = {"host": 3, "subnet": 3, "pair": 1, "range": 1}
_SUBNET_OR_RANGE = {"subnet": 5, "range": 8}
_AIMS: dict[str, dict[str, int]] = {
    "ip_forward_off": {"subnet": 1},
    "ifconfig_down": _LINK,
    "link_down": _LINK,
    "mtu_too_small": _LINK,
    "tc_zero_queue": {"host": 3, "subnet": 1},
    "wrong_ip": {"host": 1, "subnet": 1},
    "wrong_prefix": {"host": 1},
    "duplicate_ip": {"host": 7, "subnet": 1},
    "forward_policy_drop": {"host": 3, "subnet": 2},
    "rule_prohibit": {"host": 3, "subnet": 1, "range": 4},
    "forward_drop_subnet": {"host": 1, "subnet": 2, "pair": 2, "range": 3},
    "iptables_drop": _FILTER,
    "iptables_reject": _FILTER,
    "icmp_drop": _ONE_PROTOCOL,
    "tcp_service_drop": {"host": 16, "subnet": 1, "pair": 1, "range": 1},
    "udp_reject": _ONE_PROTOCOL,
    "wrong_interface": _ROUTE,
    "unreachable_gateway": {"host": 3, "subnet": 2, "range": 3},
    "metric_loses": _SUBNET_OR_RANGE,
    "loop": _SUBNET_OR_RANGE,
}
"""The aims each method takes, weighted so that faults' objects sit where the design's do
(each weight's measurements, before and after: docs/validity.md, the route rounds).

- Interfaces, links, queues and addresses: mostly a host's, as out-of-service hosts are
  the commonest block; a wrong address aims at a router port as often as at a host (the
  design's service addresses sit on both), a wrong length at a host alone (the design
  renumbers hosts alone), a duplicate at a host seven times in eight.
- Filters: a host's INPUT first (host refusals mostly land in a firewall,
  ``_IN_A_FIREWALL``; a host's TCP drop is mostly a service's ACL, ``targets._ACL``),
  then a range, a subnet (into it, ``fault_forms.toward``) and, least, a pair of subnets, as the
  design's blocking rules split; a subnet's forwarding dropped for one machine (on the
  router's FORWARD alone) seldom takes a host (rules naming one machine on the router's
  FORWARD were 30% of faults' blocking rules there against the design's 18%; now 12%).
- Routes: a loop and a losing right route (``metric_loses``) never aim at one host (the
  design's routes to one machine are device routes; its pairs of routes a range's and
  its backup's); a wrong interface does more often (a device route to one machine was
  2.4% of faults' routes against 7.6% of the design's at host 2 of 15); a refusing rule
  names a part of a subnet more often than one machine (47% of faults' named one machine
  against 36% at host 3 of 7)."""


def _aim(rng: random.Random, plan: NetworkPlan, intent: Intent, method: str,
         avoid: frozenset[str] = frozenset(), kind: str | None = None,
         prefer: frozenset[str] = frozenset()) -> Target:
    """A target whose traffic must flow: no host out of service, no subnet cut off.

    ``avoid``: hosts not to aim at; ``kind``: the aim's kind (else drawn by ``_AIMS``);
    ``prefer``: hosts to aim at when one of them may be.
    """
    off = {b.host for b in intent.blocks if b.kind == "host_off"}
    cut = intent.cut_subnets
    hosts = [h for h in plan.hosts if h.name not in off and h.subnet not in cut]
    subnets = sorted({h.subnet for h in hosts})
    hosts = [h for h in hosts if h.name not in avoid]
    aims = _AIMS.get(method, _INTERFACE)
    kinds = [k for k in aims if k != "pair" or len(subnets) >= 2]
    kind = kind or rng.choices(kinds, weights=[aims[k] for k in kinds])[0]
    if kind == "host" and hosts:
        host = rng.choice([h for h in hosts if h.name in prefer] or hosts)
        return Target("host", host.subnet, host.name)
    subnet = rng.choice(subnets or [s.index for s in plan.subnets])
    if kind == "pair":
        other = rng.choice([i for i in subnets if i != subnet])
        return Target("pair", subnet, other=other)
    if kind == "range":
        network = draw_range(rng, plan, subnet, with_hosts=True)
        if network is not None:
            return Target("range", subnet, network=network)
    # half the time the router too: a subnet's ICMP drop then also has a rule on the
    # router's INPUT, which the design's rules rarely have (6% of faults' rules, 1%)
    router = method != "ip_forward_off" and (
        method not in ("rule_prohibit", "icmp_drop") or rng.random() < 0.5)
    return Target("subnet", subnet, router=router)


def sample_fault(
    rng: random.Random,
    plan: NetworkPlan,
    intent: Intent,
    kind: str,
    method: str | None = None,
    tcp_port: int = DEFAULT_PORTS[0],
    firewalled: frozenset[str] = frozenset(),
    held: DesignLooks = NO_LOOKS,
) -> Fault:
    """Draw one concrete fault of type ``kind`` (``DR``, ``DI``, ...).

    The method's object is drawn by ``targets.draw_record``, as the design's own blocks
    are, aimed at traffic that must flow. ``tcp_port`` is the machines' TCP service port
    (a filter may drop only that); ``firewalled`` are the hosts running an undisclosed
    stateful firewall (``undisclosed._host_firewall``; ``_inside_a_firewall``); ``held``
    the looks of the design's one-of-a-kind objects (``_ANOTHER_LOOK``).

    Returns:
        A JSON-able record: ``type``, ``method``, ``node``, ``intf``, ``subnet``, ``other``,
        the target, and the method's parameters (``blocking.commands`` renders it).
    """
    for _ in range(_REDRAWS):
        fault = _one_fault(rng, plan, intent, kind, method, tcp_port, firewalled)
        if not held.holds(fault) or rng.random() >= _ANOTHER_LOOK:
            break
    return fault


def _one_fault(rng: random.Random, plan: NetworkPlan, intent: Intent, kind: str,
               method: str | None, tcp_port: int, firewalled: frozenset[str]) -> Fault:
    method = method or rng.choices(METHODS[kind], _METHOD_WEIGHTS[kind])[0]
    guarded = frozenset(p.host for p in intent.protected)
    avoid: frozenset[str] = frozenset()
    aim: str | None = None
    prefer = firewalled - guarded if (
        method in _REFUSING_ALL and rng.random() < _IN_A_FIREWALL) else frozenset()
    for _ in range(_REDRAWS):  # another host of the same aim, if inside a firewall
        target = _aim(rng, plan, intent, method, avoid, aim, prefer)
        fault = draw_record(rng, plan, target, method, (tcp_port, DEFAULT_PORTS[1]),
                            policy=_POLICY)
        if not _inside_a_firewall(fault, guarded, firewalled):
            break
        avoid, aim = avoid | {fault["node"]}, target.kind
    if "rules" in fault:
        fault = as_the_designs(rng, fault, fault["node"] in firewalled)
    if method in _REFUSING_ALL and target.kind == "host" and (
            fault["node"] not in firewalled | guarded | {ROUTER}):
        fault = with_drops_beside(rng, plan, target, fault, (tcp_port, DEFAULT_PORTS[1]))
    if target.kind == "subnet" and fault["node"] == ROUTER and "rules" in fault:
        fault = toward(rng, plan.subnet(target.subnet).network, fault)
    if fault["method"] == "unreachable_gateway" and fault["node"] != ROUTER:
        restricted = intent.restricted
        if restricted is not None and restricted.subnet == target.subnet:
            fault["route"] = _part_of(rng, plan, rng.choice(restricted.peers))
        elif rng.random() < _HOST_ROUTE_SHARE:
            fault["route"] = _a_range(rng, plan, intent)
        if "route" in fault:  # as the design's hosts' routes (``undisclosed._host_route``)
            fault["metric"] = draw_metric(rng)
    return fault


_IN_A_FIREWALL = 0.75
"""Share of host refusals of everything aimed at a host running an undisclosed firewall
when there is one (its final rule then, ``fault_forms.as_the_designs``), as the design's refusals on
hosts mostly are. Aimed at any host, a refusal sat alone on a host's INPUT, or as one rule
per protocol, in 41% of faults' host blocking rules against 12% of the design's."""
_REFUSING_ALL = frozenset({"iptables_drop", "iptables_reject"})
_REDRAWS = 10
"""Draws of a fault's aim and object before one that is not ``_inside_a_firewall``."""
_ANOTHER_LOOK = 0.8
"""Chance that a fault whose object's look (``looks.DesignLooks.holds``) the design already
holds is drawn again. The design's addresses and refusing policy rules come one of a kind
(a service address, a held one, another length; a block's rule): 17% of its addresses
shared their class with another in the network against 50% of faults', and 25% of its
refusing rules their destination's against 52% (1,200 static instances, seed 61)."""


_ONE_PROTOCOL_METHODS = frozenset({"icmp_drop", "udp_reject", "tcp_service_drop"})
"""Methods whose filter refuses one protocol."""


def _inside_a_firewall(fault: Fault, guarded: frozenset[str], firewalled: frozenset[str]
                       ) -> bool:
    """Whether ``fault`` writes a host's firewall where the design never refuses anything.

    Below a stateful firewall's shortcut, the design refuses only in a guarded host's final
    rule (``intent.host_rules``), for every protocol; its hosts out of service run no
    firewall, and a service's ACL is inserted above everything. So a fault may not write
    below a guarded host's shortcut (appended after the final rule, it would refuse
    nothing), nor refuse one protocol below an undisclosed firewall's (a refusal of
    everything is appended there: ``fault_forms.as_the_designs``). Drawn anywhere, faults' ICMP, TCP
    or UDP rules inside firewalls were a third of their blocking rules on hosts and none
    of the design's (1,200 static instances, seed 61; the audit's ``filter_block`` within
    hosts 0.805).
    """
    inside = [r for r in fault.get("rules", ()) if r["chain"] == "INPUT" and r.get("at") != "first"]
    return bool(inside) and (fault["node"] in guarded or (
        fault["node"] in firewalled and fault["method"] in _ONE_PROTOCOL_METHODS))


_POLICY = Policy(share=0.7, sources=True)
"""A router's wrong route often sits in a policy-routing table, for traffic from one subnet
or from all: the design's own policy tables hold routes (``undisclosed.py``), and faults
that never did were told apart by their table alone (the audit's ``table=other``). Only
routes to a part of a subnet go there, as in the design's tables (a fault's whole subnet in
a table was 6% of fault routes against 0.4% of the design's; 44% of the design's routes to
a part of a subnet sit in a table, 16% of faults' at a share of 0.3 over all routes, 24% at
0.45 over parts only)."""

_HOST_ROUTE_SHARE = 0.9
"""Share of a host's dead-gateway faults that add a route to a part of one subnet rather
than replace its default route. The design's hosts hold such routes (ranges
reached through another gateway), while a host's default route unlike the prompt's was
mostly a fault's: the audit's strongest route feature (240 queries: 6 of 97 route faults,
5 of 731 design routes). To a part (``_a_range``), as the design's hosts route
parts, and aimed at a host more often than the router (``_AIMS``): a host's route to a part
through a dead gateway was 0.6% of faults' routes against 4.3% of the design's, 3.0% now
(400 queries, seed 21)."""


def _a_range(rng: random.Random, plan: NetworkPlan, intent: Intent) -> str:
    """A part of a subnet (the host's own or another), holding a host the host must reach.

    The design's hosts route parts of any subnet, their own too, never a whole one: a host's
    route to a whole subnet was 2.3% of faults' routes and none of the design's (seeds
    43-44); to a part of its own subnet, none of faults' against 38% of the design's hosts'
    routes through a gateway long gone (1,200 queries, seed 61).
    """
    live = [s.index for s in plan.subnets if s.index not in intent.cut_subnets]
    return _part_of(rng, plan, rng.choice(live)) if live else "default"


def _part_of(rng: random.Random, plan: NetworkPlan, subnet: int) -> str:
    """A part of ``subnet`` holding one of its hosts (the whole subnet if none can be)."""
    return draw_range(rng, plan, subnet, with_hosts=True) or plan.subnet(subnet).network


def fault_candidates(
    seed: int,
    slot: int,
    plan: NetworkPlan,
    intent: Intent,
    kind: str,
    tcp_port: int = DEFAULT_PORTS[0],
    firewalled: frozenset[str] = frozenset(),
    held: DesignLooks = NO_LOOKS,
) -> list[Fault]:
    """The candidate list of one fault slot, each drawn from its own sub-seed."""
    return [
        sample_fault(random.Random(f"route/{seed}/{slot}/{attempt}"), plan, intent, kind, None,
                     tcp_port, firewalled, held)
        for attempt in range(CANDIDATES_PER_FAULT)
    ]


def injection_commands(fault: Fault, plan: NetworkPlan) -> list[tuple[str, list[str]]]:
    """The ``(node, argv)`` commands that inject ``fault`` (run by us, not the agent)."""
    return commands(fault, plan)
