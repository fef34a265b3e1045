"""What the reference solver would change on a machine, given one diagnostic output.

Each function reads the output of the solver's diagnostic command (sections ``#link``,
``#addr``, ``#route``, ``#rule``, ``#filter``, ``#fwd``, ``#qdisc``) and returns the shell
commands that turn what it saw into what the inventory and the intent say, in a safe
order: links up, correct addresses added before wrong ones are removed, then routes,
rules, forwarding, filters and queues. Firewall rules are kept when they block only
traffic the intent forbids (the expected matrix's X pairs): those are the owners' rules.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

__all__ = [
    "Inventory",
    "Flow",
    "ROUTER_DIAGNOSTIC",
    "HOST_DIAGNOSTIC",
    "router_fixes",
    "host_fixes",
]

_LINK_AWK = "awk '{print $2, $3, $5}'"
_ADDR_AWK = "awk '{print $2, $4}'"
HOST_DIAGNOSTIC = (
    f"echo '#link'; ip -o link show | {_LINK_AWK}; "
    f"echo '#addr'; ip -o -4 addr show | {_ADDR_AWK}; "
    "echo '#route'; ip -4 route show"
)
"""One command showing a host's links (flags, MTU), IPv4 addresses and routes."""
ROUTER_DIAGNOSTIC = (
    f"{HOST_DIAGNOSTIC}; echo '#rule'; ip rule show; echo '#filter'; iptables -S; "
    "echo '#fwd'; cat /proc/sys/net/ipv4/ip_forward; "
    "echo '#qdisc'; tc qdisc show | grep -v noqueue"
)
"""The host diagnostic plus policy rules, packet filters, forwarding and queues."""
_DEFAULT_RULE_PREFS = {"0", "32766", "32767"}


@dataclass(frozen=True)
class Inventory:
    """What the prompt says about the network (read by the solver)."""

    subnets: dict[str, tuple[str, str, str]]
    """switch → (network, gateway, router interface)."""
    hosts: dict[str, tuple[str, str, str]]
    """host → (interface, address, switch)."""
    restricted: dict[str, list[str]]
    """restricted switch → networks its hosts are routed to."""
    router_ip: str
    """The address pingall uses for the router."""


@dataclass(frozen=True)
class Flow:
    """One packet direction of an intended ping, as the router's filter sees it."""

    chain: str
    src: str
    dst: str
    in_intf: str | None
    out_intf: str | None
    reply: bool


def _sections(output: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if re.fullmatch(r"#[a-z]+", line.strip()):
            current = line.strip()[1:]
            sections[current] = []
        elif current is not None and line.strip():
            sections[current].append(line.strip())
    return sections


def _interface_fixes(sections: dict[str, list[str]], wanted: dict[str, str]) -> list[str]:
    """Links, MTUs and addresses; ``wanted`` maps interface → ``address/len``."""
    links = {}
    for line in sections.get("link", []):
        parts = line.split()
        if len(parts) == 3:
            links[parts[0].rstrip(":").split("@")[0]] = (parts[1], parts[2])
    inets: dict[str, list[str]] = {}
    for line in sections.get("addr", []):
        name, cidr = line.split()[:2]
        inets.setdefault(name, []).append(cidr)
    ups, adds, dels = [], [], []
    for intf, cidr in wanted.items():
        flags, mtu = links.get(intf, ("", "1500"))
        if "UP" not in flags.strip("<>").split(","):
            ups.append(f"ip link set {intf} up")
        if mtu != "1500":
            ups.append(f"ip link set {intf} mtu 1500")
        present = inets.get(intf, [])
        if cidr not in present:
            adds.append(f"ip addr add {cidr} brd + dev {intf}")
        dels += [f"ip addr del {a} dev {intf}" for a in present if a != cidr]
    return ups + adds + dels


def _route_ok(line: str, net: str, intf: str) -> bool:
    tokens = line.split()
    metric = tokens[tokens.index("metric") + 1] if "metric" in tokens else "0"
    return tokens[:1] == [net] and "via" not in tokens and f"dev {intf}" in line and metric == "0"


def _intents_flows(inv: Inventory, pairs: set[tuple[str, str]]) -> list[Flow]:
    """The request and reply of every intended ping, where the router filters them."""
    subnet_of = {sw: ipaddress.ip_network(net) for sw, (net, _, _) in inv.subnets.items()}

    def where(ip: str) -> str | None:
        return next((sw for sw, net in subnet_of.items() if ipaddress.ip_address(ip) in net), None)

    flows = []
    for src, dst in pairs:
        dst_ip = inv.router_ip if dst == "r0" else inv.hosts[dst][1]
        dst_sw = where(dst_ip)
        if src == "r0":
            if dst_sw is None:
                continue
            src_ip, intf = inv.subnets[dst_sw][1], inv.subnets[dst_sw][2]
            flows += [Flow("OUTPUT", src_ip, dst_ip, None, intf, False)]
            flows += [Flow("INPUT", dst_ip, src_ip, intf, None, True)]
            continue
        src_ip, src_sw = inv.hosts[src][1], inv.hosts[src][2]
        in_intf = inv.subnets[src_sw][2]
        if dst == "r0":
            flows += [Flow("INPUT", src_ip, dst_ip, in_intf, None, False)]
            flows += [Flow("OUTPUT", dst_ip, src_ip, None, in_intf, True)]
        elif dst_sw is not None and dst_sw != src_sw:
            out_intf = inv.subnets[dst_sw][2]
            flows += [Flow("FORWARD", src_ip, dst_ip, in_intf, out_intf, False)]
            flows += [Flow("FORWARD", dst_ip, src_ip, out_intf, in_intf, True)]
    return flows


def _rule_matches(tokens: list[str], flow: Flow) -> bool:
    """Whether an ``iptables -S`` rule (as tokens) matches ``flow``.

    Matches it does not know are assumed to match: such a rule is then kept only if it
    blocks nothing intended.
    """
    checks = {"-s": flow.src, "-d": flow.dst}
    for i, token in enumerate(tokens[:-1]):
        value = tokens[i + 1]
        if token in checks:
            if ipaddress.ip_address(checks[token]) not in ipaddress.ip_network(value, strict=False):
                return False
        elif token == "-p" and value not in ("icmp", "all"):
            return False
        elif token == "-i" and flow.in_intf is not None and value != flow.in_intf:
            return False
        elif token == "-o" and flow.out_intf is not None and value != flow.out_intf:
            return False
    return True


def _filter_fixes(lines: list[str], flows: list[Flow]) -> list[str]:
    policies, deletes = [], []
    established: dict[str, int] = {}
    rules = [line.split() for line in lines if line.startswith("-A ")]
    for index, tokens in enumerate(rules):
        if "ESTABLISHED" in " ".join(tokens) and tokens[-1] == "ACCEPT":
            established.setdefault(tokens[1], index)
    for line in lines:
        m = re.match(r"^-P (INPUT|FORWARD|OUTPUT) DROP$", line)
        if m and any(f.chain == m.group(1) for f in flows):
            policies.append(f"iptables -P {m.group(1)} ACCEPT")
    for index, tokens in enumerate(rules):
        target = tokens[tokens.index("-j") + 1] if "-j" in tokens else ""
        if target not in ("DROP", "REJECT"):
            continue
        shielded = established.get(tokens[1], len(rules)) < index
        blocks = [
            f
            for f in flows
            if f.chain == tokens[1] and not (f.reply and shielded) and _rule_matches(tokens, f)
        ]
        if blocks:
            deletes.append("iptables -D " + " ".join(tokens[1:]))
    return policies + deletes


def router_fixes(output: str, inv: Inventory, pairs: set[tuple[str, str]]) -> list[str]:
    """Fixes for the router from its diagnostic output (see module docstring)."""
    sections = _sections(output)
    wanted = {
        intf: f"{gw}/{ipaddress.ip_network(net).prefixlen}"
        for net, gw, intf in inv.subnets.values()
    }
    fixes = _interface_fixes(sections, wanted)
    routes = sections.get("route", [])
    for net, _, intf in inv.subnets.values():
        if not any(_route_ok(line, net, intf) for line in routes):
            fixes.append(f"ip route replace {net} dev {intf}")
    for line in sections.get("rule", []):
        pref = line.split(":", 1)[0]
        if pref.isdigit() and pref not in _DEFAULT_RULE_PREFS:
            fixes.append(f"ip rule del pref {pref}")
    if sections.get("fwd", ["1"])[:1] == ["0"]:
        fixes.append("echo 1 > /proc/sys/net/ipv4/ip_forward")
    fixes += _filter_fixes(sections.get("filter", []), _intents_flows(inv, pairs))
    for line in sections.get("qdisc", []):
        if m := re.match(r"^qdisc \S+ \S+ dev (\S+) root", line):
            fixes.append(f"tc qdisc del dev {m.group(1)} root")
    return fixes


def host_fixes(output: str, inv: Inventory, host: str) -> list[str]:
    """Fixes for ``host``: its link, address and routes (its firewall is the owners')."""
    intf, ip, switch = inv.hosts[host]
    net, gateway, _ = inv.subnets[switch]
    sections = _sections(output)
    fixes = _interface_fixes(sections, {intf: f"{ip}/{ipaddress.ip_network(net).prefixlen}"})
    routes = sections.get("route", [])
    if not any(_route_ok(line, net, intf) for line in routes):
        fixes.append(f"ip route replace {net} dev {intf}")
    targets = inv.restricted.get(switch, ["default"])
    for target in targets:
        if not any(line.startswith(f"{target} via {gateway} ") for line in routes):
            fixes.append(f"ip route replace {target} via {gateway} dev {intf}")
    if switch in inv.restricted and any(line.startswith("default ") for line in routes):
        fixes.append("ip route del default")
    return fixes
