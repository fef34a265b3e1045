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

import ipaddress
import random
from typing import Any

from netarena.route.intent import Intent
from netarena.route.plan import ROUTER, NetworkPlan
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


def _unused_address(rng: random.Random, plan: NetworkPlan, subnet: int) -> str:
    """An address of ``subnet`` that no machine of the plan holds."""
    net = ipaddress.ip_network(plan.subnet(subnet).network)
    taken = {plan.subnet(subnet).gateway, *(h.ip for h in plan.hosts_in(subnet))}
    free = [str(a) for a in net.hosts() if str(a) not in taken]
    return rng.choice(free)


def _pick_interface(rng: random.Random, plan: NetworkPlan, subnet: int) -> tuple[str, str]:
    """A node and interface in ``subnet``: the router's side or one of its hosts."""
    if rng.random() < 0.5:
        return ROUTER, plan.subnet(subnet).router_intf
    host = rng.choice(plan.hosts_in(subnet))
    return host.name, host.intf


def _address_value(
    rng: random.Random, plan: NetworkPlan, fault: Fault, node: str, other: int
) -> Any:
    method, subnet = fault["method"], fault["subnet"]
    if method == "wrong_ip":
        return _unused_address(rng, plan, subnet)
    if method == "wrong_prefix":
        length = plan.subnet(subnet).prefixlen
        return rng.choice([p for p in (length - 8, 16, 28, 30) if p != length and p >= 8])
    if method == "duplicate_ip":
        if node == ROUTER:
            return plan.subnet(other).gateway
        return rng.choice(plan.hosts_in(other)).ip
    return None


def sample_fault(
    rng: random.Random,
    plan: NetworkPlan,
    intent: Intent,
    kind: str,
    method: str | None = None,
    tcp_port: int = DEFAULT_PORTS[0],
) -> Fault:
    """Draw one concrete fault of type ``kind`` (``DR``, ``DI``, ...).

    ``tcp_port`` is the machines' TCP service port (a filter may drop only that).

    Returns:
        A JSON-able record: ``type``, ``method``, ``node``, ``intf``, ``subnet``, ``other``
        and method parameters (``value``, ``via``).
    """
    method = method or rng.choice(METHODS[kind])
    indices = [s.index for s in plan.subnets]
    subnet = rng.choice(indices)
    other = rng.choice([i for i in indices if i != subnet])
    fault: Fault = {"type": kind, "method": method, "subnet": subnet, "other": other}
    if kind in ("DR", "DT"):
        fault.update(node=ROUTER, intf=plan.subnet(subnet).router_intf)
        if method == "tcp_service_drop":
            fault["value"] = tcp_port
    elif kind in ("DI", "RI"):
        node, intf = _pick_interface(rng, plan, subnet)
        fault.update(node=node, intf=intf)
        value = _address_value(rng, plan, fault, node, other)
        if value is not None:
            fault["value"] = value
    elif method == "unreachable_gateway" and rng.random() < 0.5:
        host = rng.choice(plan.hosts_in(subnet))
        fault.update(node=host.name, intf=host.intf, value=_unused_address(rng, plan, subnet))
        if intent.restricted is not None and intent.restricted.subnet == subnet:
            fault["route"] = plan.subnet(rng.choice(intent.restricted.peers)).network
    else:
        fault.update(node=ROUTER, intf=plan.subnet(subnet).router_intf)
        if method == "unreachable_gateway":
            fault["value"] = _unused_address(rng, plan, other)
        elif method == "loop":
            fault["via"] = rng.choice(plan.hosts_in(other)).name
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


_FIXED: dict[str, list[str]] = {
    "ip_forward_off": ["sysctl", "-w", "net.ipv4.ip_forward=0"],
    "forward_policy_drop": ["iptables", "-P", "FORWARD", "DROP"],
    "rule_prohibit": ["ip", "rule", "add", "to", "{net}", "prohibit", "pref", "100"],
    "forward_drop_subnet": ["iptables", "-A", "FORWARD", "-s", "{net}", "-j", "DROP"],
    "ifconfig_down": ["ifconfig", "{intf}", "down"],
    "link_down": ["ip", "link", "set", "{intf}", "down"],
    "mtu_too_small": ["ip", "link", "set", "{intf}", "mtu", "68"],
    "flush": ["ip", "addr", "flush", "dev", "{intf}"],
    "tc_zero_queue": ["tc", "qdisc", "add", "dev", "{intf}", "root", "pfifo", "limit", "0"],
}


def injection_commands(
    fault: Fault, plan: NetworkPlan
) -> list[tuple[str, list[str]]]:
    """The ``(node, argv)`` commands that inject ``fault`` (run by us, not the agent)."""
    node, intf, method = fault["node"], fault["intf"], fault["method"]
    subnet = plan.subnet(fault["subnet"])
    if method in _FIXED:
        argv = [a.format(net=subnet.network, intf=intf) for a in _FIXED[method]]
        return [(node, argv)]
    if method in ("wrong_ip", "wrong_prefix", "duplicate_ip"):
        own = subnet.gateway if node == ROUTER else plan.host(node).ip
        new = (
            f"{own}/{fault['value']}"
            if method == "wrong_prefix"
            else f"{fault['value']}/{subnet.prefixlen}"
        )
        return [
            (node, ["ip", "addr", "del", f"{own}/{subnet.prefixlen}", "dev", intf]),
            (node, ["ip", "addr", "add", new, "brd", "+", "dev", intf]),  # as typed
        ]
    if method in ("iptables_drop", "iptables_reject"):
        target = "DROP" if method == "iptables_drop" else "REJECT"
        return [
            (ROUTER, ["iptables", "-A", "FORWARD", "-s", subnet.network, "-j", target]),
            (ROUTER, ["iptables", "-A", "FORWARD", "-d", subnet.network, "-j", target]),
        ]
    if method == "tcp_service_drop":
        rule = ["-d", subnet.network, "-p", "tcp", "--dport", str(fault["value"]), "-j", "DROP"]
        return [(ROUTER, ["iptables", "-A", "FORWARD", *rule])]
    if method == "udp_reject":
        rule = ["-s", subnet.network, "-p", "udp", "-j", "REJECT"]
        return [(ROUTER, ["iptables", "-A", "FORWARD", *rule])]
    if method == "icmp_drop":
        net = subnet.network
        return [
            (ROUTER, ["iptables", "-A", "INPUT", "-s", net, "-p", "icmp", "-j", "DROP"]),
            (ROUTER, ["iptables", "-A", "FORWARD", "-s", net, "-p", "icmp", "-j", "DROP"]),
        ]
    return _wrong_route(fault, plan)


def _wrong_route(fault: Fault, plan: NetworkPlan) -> list[tuple[str, list[str]]]:
    node, method = fault["node"], fault["method"]
    subnet, other = plan.subnet(fault["subnet"]), plan.subnet(fault["other"])
    net, right, wrong = subnet.network, subnet.router_intf, other.router_intf
    del_connected = (ROUTER, ["ip", "route", "del", net, "dev", right])
    if method == "wrong_interface":
        return [del_connected, (ROUTER, ["ip", "route", "add", net, "dev", wrong])]
    if method == "unreachable_gateway":
        if node != ROUTER:
            target = fault.get("route", "default")
            return [(node, ["ip", "route", "replace", target, "via", fault["value"]])]
        return [del_connected, (ROUTER, ["ip", "route", "add", net, "via", fault["value"]])]
    if method == "metric_loses":
        return [
            del_connected,
            (ROUTER, ["ip", "route", "add", net, "dev", right, "metric", "500"]),
            (ROUTER, ["ip", "route", "add", net, "dev", wrong, "metric", "10"]),
        ]
    if method == "loop":
        via = fault["via"]
        return [
            (via, ["sysctl", "-w", "net.ipv4.ip_forward=1"]),
            del_connected,
            (ROUTER, ["ip", "route", "add", net, "via", plan.host(via).ip]),
        ]
    raise ValueError(f"unknown fault method {method!r}")
