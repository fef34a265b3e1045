"""The five fault types, their methods, and how each is injected into a live network.

Generation is pure: ``sample_fault(rng, spec, kind)`` draws a method and concrete targets.
Each fault slot of a query carries several candidates (attempt 0, 1, ...) drawn from
sub-seeds, so ``open()`` can skip candidates that turn out to have no effect in the live
emulator and still end up with the same faults on every machine.

Method notes (measured on this kernel): ``tc netem`` and ``tbf`` are missing, so the
"heavy delay" method of ``drop_traffic_to_from_subnet`` is replaced by a zero-length
``pfifo`` queue (every packet leaving the interface is dropped). An MTU of 68 breaks
pings because the probe sends standard 84-byte echo packets and veth drops oversized
frames on receive.
"""

from __future__ import annotations

import random
from typing import Any

from netarena.route.topology import TopologySpec

__all__ = [
    "FAULT_TYPES",
    "METHODS",
    "LEVEL_LABELS",
    "sample_fault",
    "fault_candidates",
    "injection_commands",
    "CANDIDATES_PER_FAULT",
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
    "DT": ("iptables_drop", "iptables_reject", "icmp_drop", "tc_zero_queue"),
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


def _pick_interface(rng: random.Random, spec: TopologySpec, subnet: int) -> tuple[str, str]:
    """A node and interface in ``subnet``: the router's side or one of its hosts."""
    if rng.random() < 0.5:
        return "r0", spec.router_intf(subnet)
    host = rng.choice(spec.hosts_in(subnet))
    return host, spec.host_intf(host)


def sample_fault(
    rng: random.Random, spec: TopologySpec, kind: str, method: str | None = None
) -> Fault:
    """Draw one concrete fault of type ``kind`` (``DR``, ``DI``, ...).

    Returns:
        A JSON-able record: ``type``, ``method``, ``node``, ``intf`` and method parameters.
    """
    method = method or rng.choice(METHODS[kind])
    n = spec.num_subnets
    subnet = rng.randint(1, n)
    other = rng.choice([j for j in range(1, n + 1) if j != subnet])
    fault: Fault = {"type": kind, "method": method, "subnet": subnet, "other": other}
    if kind in ("DR", "DT"):
        fault.update(node="r0", intf=spec.router_intf(subnet))
    elif kind in ("DI", "RI"):
        node, intf = _pick_interface(rng, spec, subnet)
        fault.update(node=node, intf=intf)
        if method == "wrong_ip":
            fault["value"] = f"192.168.{subnet}.{rng.choice([*range(2, 100), *range(200, 254)])}"
        elif method == "wrong_prefix":
            fault["value"] = rng.choice([16, 28, 30])
        elif method == "duplicate_ip":
            if node == "r0":
                fault["value"] = spec.gateway(other)
            else:
                fault["value"] = spec.host_ip(rng.choice(spec.hosts_in(other)))
    else:  # WR
        on_host = method == "unreachable_gateway" and rng.random() < 0.5
        if on_host:
            host = rng.choice(spec.hosts_in(subnet))
            fault.update(node=host, intf=spec.host_intf(host))
        else:
            fault.update(node="r0", intf=spec.router_intf(subnet))
        if method == "loop":
            fault["via"] = rng.choice(spec.hosts_in(other))
    return fault


def fault_candidates(seed: int, slot: int, spec: TopologySpec, kind: str) -> list[Fault]:
    """The candidate list of one fault slot, each drawn from its own sub-seed."""
    return [
        sample_fault(random.Random(f"route/{seed}/{slot}/{attempt}"), spec, kind)
        for attempt in range(CANDIDATES_PER_FAULT)
    ]


def _net(subnet: int) -> str:
    return f"192.168.{subnet}.0/24"


def injection_commands(fault: Fault, spec: TopologySpec) -> list[tuple[str, list[str]]]:
    """The ``(node, argv)`` commands that inject ``fault`` (run by us, not the agent)."""
    node, intf, method = fault["node"], fault["intf"], fault["method"]
    i = fault["subnet"]
    net_i = _net(i)
    table: dict[str, list[str]] = {
        "ip_forward_off": ["sysctl", "-w", "net.ipv4.ip_forward=0"],
        "forward_policy_drop": ["iptables", "-P", "FORWARD", "DROP"],
        "rule_prohibit": ["ip", "rule", "add", "to", net_i, "prohibit", "pref", "100"],
        "forward_drop_subnet": ["iptables", "-A", "FORWARD", "-s", net_i, "-j", "DROP"],
        "ifconfig_down": ["ifconfig", intf, "down"],
        "link_down": ["ip", "link", "set", intf, "down"],
        "mtu_too_small": ["ip", "link", "set", intf, "mtu", "68"],
        "flush": ["ip", "addr", "flush", "dev", intf],
        "tc_zero_queue": ["tc", "qdisc", "add", "dev", intf, "root", "pfifo", "limit", "0"],
    }
    if method in table:
        return [(node, table[method])]
    own_ip = spec.gateway(i) if node == "r0" else spec.host_ip(node)
    delete_own = ["ip", "addr", "del", f"{own_ip}/24", "dev", intf]
    if method == "wrong_ip":
        return [
            (node, delete_own),
            (node, ["ip", "addr", "add", f"{fault['value']}/24", "dev", intf]),
        ]
    if method == "wrong_prefix":
        new = f"{own_ip}/{fault['value']}"
        return [(node, delete_own), (node, ["ip", "addr", "add", new, "dev", intf])]
    if method == "duplicate_ip":
        return [
            (node, delete_own),
            (node, ["ip", "addr", "add", f"{fault['value']}/24", "dev", intf]),
        ]
    if method in ("iptables_drop", "iptables_reject"):
        target = "DROP" if method == "iptables_drop" else "REJECT"
        return [
            ("r0", ["iptables", "-A", "FORWARD", "-s", net_i, "-j", target]),
            ("r0", ["iptables", "-A", "FORWARD", "-d", net_i, "-j", target]),
        ]
    if method == "icmp_drop":
        return [
            ("r0", ["iptables", "-A", "INPUT", "-s", net_i, "-p", "icmp", "-j", "DROP"]),
            ("r0", ["iptables", "-A", "FORWARD", "-s", net_i, "-p", "icmp", "-j", "DROP"]),
        ]
    return _wrong_route(fault, spec)


def _wrong_route(fault: Fault, spec: TopologySpec) -> list[tuple[str, list[str]]]:
    node, method = fault["node"], fault["method"]
    i, j = fault["subnet"], fault["other"]
    net_i, right, wrong = _net(i), spec.router_intf(i), spec.router_intf(j)
    del_connected = ("r0", ["ip", "route", "del", net_i, "dev", right])
    if method == "wrong_interface":
        return [del_connected, ("r0", ["ip", "route", "add", net_i, "dev", wrong])]
    if method == "unreachable_gateway":
        if node != "r0":
            gw = f"192.168.{i}.254"
            return [(node, ["ip", "route", "replace", "default", "via", gw])]
        gw = f"192.168.{j}.254"
        return [del_connected, ("r0", ["ip", "route", "add", net_i, "via", gw])]
    if method == "metric_loses":
        return [
            del_connected,
            ("r0", ["ip", "route", "add", net_i, "dev", right, "metric", "500"]),
            ("r0", ["ip", "route", "add", net_i, "dev", wrong, "metric", "10"]),
        ]
    if method == "loop":
        via = fault["via"]
        return [
            (via, ["sysctl", "-w", "net.ipv4.ip_forward=1"]),
            del_connected,
            ("r0", ["ip", "route", "add", net_i, "via", spec.host_ip(via)]),
        ]
    raise ValueError(f"unknown fault method {method!r}")
