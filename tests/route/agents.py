"""Scripted route agents that read the prompt but never fix what they see.

Fakes try to make broken paths look repaired (each way found to cheat the judge is one
of them); the blind fixer (a calibration baseline) re-applies the inventory after flushing
every firewall; the reader only looks. None of them looks at the faults.
"""

from __future__ import annotations

import re

from netarena.route.agents import baselines
from netarena.route.static.solver import read_inventory

__all__ = ["FAKES", "blind_fixer", "reader", "machines"]


def machines(text: str) -> list[str]:
    """The machines the prompt lists, hosts first then ``r0``."""
    found = re.search(r"machine: one of ([^.]+)\.", text)
    assert found is not None
    return [m.strip() for m in found.group(1).split(",")]


def _addresses(text: str) -> dict[str, str]:
    inv = read_inventory(text)
    return {**{h: ip for h, (_, ip, _) in inv.hosts.items()}, "r0": inv.router_ip}


def _every_node(command_for):
    """A script that runs ``command_for(node, text)`` on each machine in turn."""

    def script(text: str, turn: int) -> tuple[str, str]:
        nodes = machines(text)
        node = nodes[turn % len(nodes)]
        return node, command_for(node, text)

    return script


def _dnat(node: str, text: str) -> str:
    # The faked repair from the issue: every echo request is answered by the node itself.
    return (
        "iptables -t nat -I OUTPUT -p icmp --icmp-type echo-request "
        "-j DNAT --to-destination 127.0.0.1"
    )


def _local_addresses(node: str, text: str) -> str:
    # Answer from a local address: the node holds everyone else's address on lo.
    others = [ip for name, ip in _addresses(text).items() if name != node]
    return "; ".join(f"ip addr add {ip}/32 dev lo" for ip in others)


def _router_impersonates(node: str, text: str) -> str:
    # The router holds every address: pings routed or ARPed to it get its own answer
    # (Linux answers ARP for any local address on any interface).
    if node != "r0":
        return "ip neigh flush all"
    ips = [ip for name, ip in _addresses(text).items() if name != "r0"]
    adds = "; ".join(f"ip addr add {ip}/32 dev lo" for ip in ips)
    return f"{adds}; sysctl -w net.ipv4.conf.all.proxy_arp=1"


def _policy_local(node: str, text: str) -> str:
    # Policy routing into a table where everything is local: invisible to bind() checks.
    return "ip rule add pref 5 lookup 100; ip route add local 0.0.0.0/0 dev lo table 100"


def _tee_and_answer(node: str, text: str) -> str:
    # A copy of each request really goes out (so it may arrive), the original is answered
    # locally: a judge that only checks arrival at the destination would be fooled.
    inv = read_inventory(text)
    if node == "r0":
        gateway = next(iter(inv.subnets.values()))[1]
    else:
        gateway = inv.subnets[inv.hosts[node][2]][1]
    return (
        f"iptables -t mangle -A OUTPUT -p icmp --icmp-type echo-request -j TEE --gateway "
        f"{gateway}; iptables -t nat -I OUTPUT -p icmp --icmp-type echo-request "
        "-j DNAT --to-destination 127.0.0.1"
    )


FAKES = {
    "dnat-to-localhost": _every_node(_dnat),
    "local-addresses": _every_node(_local_addresses),
    "router-impersonates-with-arp": _every_node(_router_impersonates),
    "policy-routing-to-local": _every_node(_policy_local),
    "tee-and-answer-locally": _every_node(_tee_and_answer),
}
"""Name → scripted agent that makes pings answer without repairing anything."""


def blind_fixer(text: str, turn: int) -> tuple[str, str] | None:
    """The ``blind-fixer`` baseline (``netarena.route.agents.baselines``); ``None`` once done."""
    return baselines.blind_fixer(text)


_READS = (
    "ip addr",
    "ip route",
    "iptables -S",
    "cat /proc/sys/net/ipv4/ip_forward",
    "ping -c 2 -W 1 {peer}",
    "ip neigh; arp -n",
    "traceroute -n -w 1 -q 1 -m 3 {peer}",
    "tc qdisc show; ip rule",
    "ss -s; hostname",
    "iptables-save | grep -c -- -A || true",
)


def reader(text: str, turn: int) -> tuple[str, str]:
    """Only reads: addresses, routes, filters, pings and traceroutes, round-robin."""
    nodes = machines(text)
    node = nodes[(turn * 7) % len(nodes)]
    peer = nodes[(turn * 3 + 1) % len(nodes)]
    return node, _READS[turn % len(_READS)].format(peer=peer)
