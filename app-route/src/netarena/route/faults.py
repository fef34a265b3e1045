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
from typing import Any

from netarena.route.blocking import commands
from netarena.route.intent import Intent
from netarena.route.plan import ROUTER, NetworkPlan
from netarena.route.targets import Target, draw_range, draw_record
from netarena.route.undisclosed import DEFAULT_PORTS

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

LEVEL_LABELS: dict[int, tuple[str, ...]] = {
    1: ("DR", "DI", "RI", "DT", "WR"),
    2: ("DR+DI", "DR+RI", "DR+DT", "DR+WR", "RI+WR"),
    3: ("DT+WR", "DI+DT", "DI+WR", "RI+DT", "DI+RI"),
}
"""The brief's fault combinations per level."""

CANDIDATES_PER_FAULT = 8
"""Candidates stored per fault slot; open() takes the first that breaks connectivity."""

Fault = dict[str, Any]


_TARGETS: dict[str, tuple[str, ...]] = {
    "ip_forward_off": ("subnet",),
    "forward_policy_drop": ("host", "subnet"),
    "rule_prohibit": ("host", "subnet", "pair", "range"),
    "forward_drop_subnet": ("host", "subnet", "pair", "range"),
    "iptables_drop": ("host", "subnet", "pair", "range"),
    "iptables_reject": ("host", "subnet", "pair", "range"),
    "icmp_drop": ("host", "subnet", "pair"),
    "tcp_service_drop": ("host", "subnet", "pair"),
    "udp_reject": ("host", "subnet", "pair"),
    "wrong_interface": ("subnet", "range"),
    "unreachable_gateway": ("host", "subnet", "range"),
    "metric_loses": ("subnet",),
    "loop": ("subnet", "range"),
}
"""The aims each method may take (interface and address methods: a host or a subnet)."""
_WEIGHTS = {"host": 3, "subnet": 4, "pair": 2, "range": 2}


def _aim(rng: random.Random, plan: NetworkPlan, intent: Intent, method: str) -> Target:
    """A target whose traffic must flow: no host out of service, no subnet cut off."""
    off = {b.host for b in intent.blocks if b.kind == "host_off"}
    cut = {b.subnet for b in intent.blocks if b.kind == "subnet_cut"}
    hosts = [h for h in plan.hosts if h.name not in off and h.subnet not in cut]
    subnets = sorted({h.subnet for h in hosts})
    kinds = [k for k in _TARGETS.get(method, ("host", "subnet"))
             if k != "pair" or len(subnets) >= 2]
    kind = rng.choices(kinds, weights=[_WEIGHTS[k] for k in kinds])[0]
    if kind == "host" and hosts:
        host = rng.choice(hosts)
        return Target("host", host.subnet, host.name)
    subnet = rng.choice(subnets or [s.index for s in plan.subnets])
    if kind == "pair":
        other = rng.choice([i for i in subnets if i != subnet])
        return Target("pair", subnet, other=other)
    if kind == "range":
        network = draw_range(rng, plan, subnet, with_hosts=True)
        if network is not None:
            return Target("range", subnet, network=network)
    return Target("subnet", subnet, router=method != "ip_forward_off")


def sample_fault(
    rng: random.Random,
    plan: NetworkPlan,
    intent: Intent,
    kind: str,
    method: str | None = None,
    tcp_port: int = DEFAULT_PORTS[0],
) -> Fault:
    """Draw one concrete fault of type ``kind`` (``DR``, ``DI``, ...).

    The method's object is drawn by ``targets.draw_record``, as the design's own blocks
    are, aimed at traffic that must flow. ``tcp_port`` is the machines' TCP service port
    (a filter may drop only that).

    Returns:
        A JSON-able record: ``type``, ``method``, ``node``, ``intf``, ``subnet``, ``other``,
        the target, and the method's parameters (``blocking.commands`` renders it).
    """
    method = method or rng.choice(METHODS[kind])
    target = _aim(rng, plan, intent, method)
    fault = draw_record(rng, plan, target, method, (tcp_port, DEFAULT_PORTS[1]))
    if fault["method"] == "unreachable_gateway" and fault["node"] != ROUTER:
        restricted = intent.restricted
        if restricted is not None and restricted.subnet == target.subnet:
            fault["route"] = plan.subnet(rng.choice(restricted.peers)).network
    return fault


def fault_candidates(
    seed: int,
    slot: int,
    plan: NetworkPlan,
    intent: Intent,
    kind: str,
    tcp_port: int = DEFAULT_PORTS[0],
) -> list[Fault]:
    """The candidate list of one fault slot, each drawn from its own sub-seed."""
    return [
        sample_fault(
            random.Random(f"route/{seed}/{slot}/{attempt}"), plan, intent, kind, None, tcp_port
        )
        for attempt in range(CANDIDATES_PER_FAULT)
    ]


def injection_commands(fault: Fault, plan: NetworkPlan) -> list[tuple[str, list[str]]]:
    """The ``(node, argv)`` commands that inject ``fault`` (run by us, not the agent)."""
    return commands(fault, plan)
