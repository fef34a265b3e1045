"""What the reference solver would change on a machine, given one diagnostic output.

Each function reads the output of the solver's diagnostic command (sections ``#link``,
``#addr``, ``#route``, ``#rule``, ``#filter``, ``#fwd``, ``#qdisc``) and returns the shell
commands that turn what it saw into what the inventory and the intent say, in a safe
order: links up, a right address under a wrong length removed (and the routes through it
put back), correct addresses added before other wrong ones are removed, then routes, rules,
forwarding, filters and queues. Firewall rules are kept when they block only
traffic the intent forbids (the expected matrix's X pairs): those are the owners' rules.

It diagnoses rather than rebuilds: what the prompt does not describe is kept unless it
breaks an intended flow (ICMP, TCP or UDP). Addresses outside the inventory's subnets
(service addresses), routes to other networks, policy rules that only look up a table or
refuse traffic to networks outside the inventory, queues that pass traffic, and filter
rules that drop no intended flow all stay.
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
    f"{HOST_DIAGNOSTIC}; echo '#tables'; ip -4 route show table all | grep ' table ' | "
    "grep -v ' table local'; echo '#rule'; ip rule show; echo '#filter'; iptables -S; "
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
    ports: tuple[int, int] = (5001, 5002)
    """The TCP and UDP service ports every machine listens on."""

    def in_subnets(self, ip: str) -> bool:
        """Whether ``ip`` lies in one of the inventory's subnets."""
        address = ipaddress.ip_address(ip)
        return any(address in ipaddress.ip_network(n) for n, _, _ in self.subnets.values())


@dataclass(frozen=True)
class Flow:
    """One packet direction of an intended ping, as the router's filter sees it."""

    chain: str
    src: str
    dst: str
    in_intf: str | None
    out_intf: str | None
    reply: bool
    proto: str = "icmp"
    sport: int | None = None
    """Source port (``None``: ICMP, or an ephemeral port no rule names)."""
    dport: int | None = None


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


def _interface_fixes(
    sections: dict[str, list[str]], wanted: dict[str, str], inv: Inventory
) -> list[str]:
    """Links, MTUs and addresses; ``wanted`` maps interface → ``address/len``.

    An address is removed only when it is the wanted one with a wrong length or lies in
    an inventory subnet; others are undisclosed service addresses and stay.
    """
    links = {}
    for line in sections.get("link", []):
        parts = line.split()
        if len(parts) == 3:
            links[parts[0].rstrip(":").split("@")[0]] = (parts[1], parts[2])
    inets: dict[str, list[str]] = {}
    for line in sections.get("addr", []):
        name, cidr = line.split()[:2]
        inets.setdefault(name, []).append(cidr)
    ups, renumbers, adds, dels = [], [], [], []
    for intf, cidr in wanted.items():
        flags, mtu = links.get(intf, ("", "1500"))
        if "UP" not in flags.strip("<>").split(","):
            ups.append(f"ip link set {intf} up")
        if mtu != "1500":
            ups.append(f"ip link set {intf} mtu 1500")
        present = inets.get(intf, [])
        if cidr not in present:
            adds.append(f"ip addr add {cidr} brd + dev {intf}")
        own = cidr.split("/")[0]
        wrong = [
            a for a in present
            if a != cidr and (a.split("/")[0] == own or inv.in_subnets(a.split("/")[0]))
        ]
        # the right address under a wrong length goes first: added beside it, the right
        # one would inherit kernel state of the wrong one (TCP to a neighbour that the
        # wrong length made a broadcast address keeps failing)
        renumber = [f"ip addr del {a} dev {intf}" for a in wrong if a.split("/")[0] == own]
        renumbers += renumber
        dels += [f"ip addr del {a} dev {intf}" for a in wrong if a.split("/")[0] != own]
        if renumber:  # the kernel drops routes through the interface with its address
            adds += _routes_through(sections, intf)
    return ups + renumbers + adds + dels


def _routes_through(sections: dict[str, list[str]], intf: str) -> list[str]:
    """``ip route replace`` of every route seen through a gateway on ``intf``."""
    found = []
    for line in sections.get("route", []) + sections.get("tables", []):
        tokens = [t for t in line.split() if t not in ("linkdown", "dead", "onlink")]
        if "via" in tokens and f"dev {intf}" in " ".join(tokens):
            found.append("ip route replace " + " ".join(tokens))
    return found


def _rule_refuses(line: str, inv: Inventory) -> bool:
    """Whether an ``ip rule`` line refuses traffic that may be the inventory's.

    Rules that look up a table fall through when it has no route (they keep the
    owners' policy routing); refusals aimed only outside the inventory are bogon filters.
    """
    words = line.split()
    if not {"prohibit", "unreachable", "blackhole"} & set(words):
        return False
    for selector in ("to", "from"):
        if selector in words:
            target = words[words.index(selector) + 1]
            if target != "all" and not _overlaps(target, inv):
                return False
    return True


def _overlaps(network: str, inv: Inventory) -> bool:
    net = ipaddress.ip_network(network, strict=False)
    return any(net.overlaps(ipaddress.ip_network(n)) for n, _, _ in inv.subnets.values())


def _route_ok(line: str, net: str, intf: str) -> bool:
    tokens = line.split()
    metric = tokens[tokens.index("metric") + 1] if "metric" in tokens else "0"
    return tokens[:1] == [net] and "via" not in tokens and f"dev {intf}" in line and metric == "0"


def _intents_flows(inv: Inventory, pairs: set[tuple[str, str]]) -> list[Flow]:
    """The request and reply of every intended flow (ICMP, TCP, UDP) at the router."""
    subnet_of = {sw: ipaddress.ip_network(net) for sw, (net, _, _) in inv.subnets.items()}

    def where(ip: str) -> str | None:
        return next((sw for sw, net in subnet_of.items() if ipaddress.ip_address(ip) in net), None)

    paths: list[tuple[str, str, str, str, str | None, str | None]] = []
    for src, dst in pairs:
        dst_ip = inv.router_ip if dst == "r0" else inv.hosts[dst][1]
        dst_sw = where(dst_ip)
        if src == "r0":
            if dst_sw is None:
                continue
            src_ip, intf = inv.subnets[dst_sw][1], inv.subnets[dst_sw][2]
            paths.append(("OUTPUT", "INPUT", src_ip, dst_ip, None, intf))
            continue
        src_ip, src_sw = inv.hosts[src][1], inv.hosts[src][2]
        in_intf = inv.subnets[src_sw][2]
        if dst == "r0":
            paths.append(("INPUT", "OUTPUT", src_ip, dst_ip, in_intf, None))
        elif dst_sw is not None and dst_sw != src_sw:
            out_intf = inv.subnets[dst_sw][2]
            paths.append(("FORWARD", "FORWARD", src_ip, dst_ip, in_intf, out_intf))
    flows = []
    services: dict[str, int | None] = {"icmp": None, "tcp": inv.ports[0], "udp": inv.ports[1]}
    for chain, back, src_ip, dst_ip, via_in, via_out in paths:
        for proto, port in services.items():
            flows.append(Flow(chain, src_ip, dst_ip, via_in, via_out, False, proto, None, port))
            flows.append(Flow(back, dst_ip, src_ip, via_out, via_in, True, proto, port, None))
    return flows


def _rule_matches(tokens: list[str], flow: Flow) -> bool:
    """Whether an ``iptables -S`` rule (as tokens) matches ``flow``.

    Matches it does not know are assumed to match: such a rule is then kept only if it
    blocks nothing intended. A port match never matches an ephemeral port.
    """
    values: dict[str, object] = {
        "-s": flow.src, "-d": flow.dst, "-i": flow.in_intf, "-o": flow.out_intf,
        "-p": flow.proto, "--sport": flow.sport, "--dport": flow.dport,
    }
    for i, token in enumerate(tokens[:-1]):
        if token not in values:
            continue
        value, have = tokens[i + 1], values[token]
        negated = i > 0 and tokens[i - 1] == "!"
        if token in ("-s", "-d"):
            hit = ipaddress.ip_address(str(have)) in ipaddress.ip_network(value, strict=False)
        elif token == "-p":
            hit = value in (flow.proto, "all")
        elif token in ("-i", "-o"):
            hit = have is None or value == have
        else:
            hit = have is not None and value == str(have)
        if hit == negated:
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
    fixes = _interface_fixes(sections, wanted, inv)
    routes = sections.get("route", [])
    for net, _, intf in inv.subnets.values():
        if not any(_route_ok(line, net, intf) for line in routes):
            fixes.append(f"ip route replace {net} dev {intf}")
    for line in sections.get("rule", []):
        pref = line.split(":", 1)[0]
        if pref.isdigit() and pref not in _DEFAULT_RULE_PREFS and _rule_refuses(line, inv):
            fixes.append(f"ip rule del pref {pref}")
    if sections.get("fwd", ["1"])[:1] == ["0"]:
        fixes.append("echo 1 > /proc/sys/net/ipv4/ip_forward")
    fixes += _filter_fixes(sections.get("filter", []), _intents_flows(inv, pairs))
    for line in sections.get("qdisc", []):
        m = re.match(r"^qdisc \S+ \S+ dev (\S+) root", line)
        if m and re.search(r" limit 0[pb]?\b", line):  # a queue that holds no packet
            fixes.append(f"tc qdisc del dev {m.group(1)} root")
    return fixes


def host_fixes(output: str, inv: Inventory, host: str) -> list[str]:
    """Fixes for ``host``: its link, address and routes (its firewall is the owners')."""
    intf, ip, switch = inv.hosts[host]
    net, gateway, _ = inv.subnets[switch]
    sections = _sections(output)
    fixes = _interface_fixes(
        sections, {intf: f"{ip}/{ipaddress.ip_network(net).prefixlen}"}, inv
    )
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
