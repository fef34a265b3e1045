"""The reference solver: repairs any generated fault from the observation text alone.

It never sees ``Query.truth``; it reads the intended configuration from the prompt, the
ping matrix, and the outputs of its own earlier diagnostic commands from the history, so
it is stateless and works the same when served as a remote A2A agent.

Plan: inspect ``r0`` (addresses, routes, rules, filters, forwarding, queues), then every
host that still drops pings, most broken first. For each diagnostic it computes the fixes
that turn what it saw into the intended state, issues those not yet issued, and re-runs a
diagnostic only when a fix of another kind may have changed what it shows (a link brought
up restores routes). Fixes only ever add what is missing before removing what is wrong,
so no step loses a working pair.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from netarena.common.agents import Observation
from netarena.route.probe import PingMatrix, parse_pingall

__all__ = ["ReferenceRouteAgent", "plan_next", "ROUTER_DIAGNOSTICS", "HOST_DIAGNOSTICS"]

ROUTER_DIAGNOSTICS = (
    "ip addr",
    "ip route",
    "ip rule",
    "iptables-save",
    "sysctl net.ipv4.ip_forward",
    "tc qdisc show",
)
HOST_DIAGNOSTICS = ("ip addr", "ip route")
# Which diagnostics a fix of each kind can make stale.
_STALES = {"link": {"ip route"}, "addr": {"ip route"}}

_ENTRY = re.compile(r"^\[turn (\d+)\] (\S+) \$ (.*)$")
_EXIT = re.compile(r"^\[exit (-?\d+)\]$")
_IFACE = re.compile(r"^\d+: ([^:@\s]+)(?:@\S+)?: <([^>]*)> mtu (\d+)")
_INTENT_R0 = re.compile(r"^\s+(r0-eth\d+) (\d+\.\d+\.\d+\.\d+)/24")
_INTENT_HOST = re.compile(
    r"^(h\d+): (h\d+-eth0) (\d+\.\d+\.\d+\.\d+)/24 on s\d+, default via (\S+)"
)


@dataclass(frozen=True)
class _Entry:
    index: int
    machine: str
    command: str
    output: str


@dataclass(frozen=True)
class _Intent:
    router: dict[str, str]
    """r0 interface → address."""
    hosts: dict[str, tuple[str, str, str]]
    """host → (interface, address, gateway)."""


def _parse_intent(text: str) -> _Intent:
    router, hosts = {}, {}
    for line in text.splitlines():
        if m := _INTENT_R0.match(line):
            router[m.group(1)] = m.group(2)
        elif m := _INTENT_HOST.match(line):
            hosts[m.group(1)] = (m.group(2), m.group(3), m.group(4))
    return _Intent(router, hosts)


def _parse_history(text: str) -> list[_Entry]:
    section = text.split("## History of your commands", 1)[-1]
    entries: list[_Entry] = []
    current: tuple[str, str] | None = None
    lines: list[str] = []
    for line in section.splitlines():
        if m := _ENTRY.match(line):
            current, lines = (m.group(2), m.group(3)), []
        elif current is not None and _EXIT.match(line):
            entries.append(_Entry(len(entries), current[0], current[1], "\n".join(lines)))
            current = None
        elif current is not None:
            lines.append(line)
    return entries


def _kind(command: str) -> str:
    if command.startswith(("ip link", "ifconfig")):
        return "link"
    if command.startswith("ip addr"):
        return "addr"
    return command.split()[0]


def _addr_fixes(output: str, wanted: dict[str, str]) -> list[str]:
    """Fixes for ``ip addr`` output: bring links up, restore MTU, add/remove addresses."""
    blocks: dict[str, tuple[str, int, list[str]]] = {}
    name = None
    for line in output.splitlines():
        if m := _IFACE.match(line):
            name = m.group(1)
            blocks[name] = (m.group(2), int(m.group(3)), [])
        elif name and (m := re.match(r"^\s+inet (\S+)", line)):
            blocks[name][2].append(m.group(1))
    fixes: list[str] = []
    for intf, ip in wanted.items():
        if intf not in blocks:
            continue
        flags, mtu, inets = blocks[intf]
        if "UP" not in flags.split(","):
            fixes.append(f"ip link set {intf} up")
        if mtu != 1500:
            fixes.append(f"ip link set {intf} mtu 1500")
        if f"{ip}/24" not in inets:
            fixes.append(f"ip addr add {ip}/24 dev {intf}")
        fixes += [f"ip addr del {a} dev {intf}" for a in inets if a != f"{ip}/24"]
    return fixes


def _route_ok(line: str, dev: str) -> bool:
    tokens = line.split()
    metric = tokens[tokens.index("metric") + 1] if "metric" in tokens else "0"
    return "via" not in tokens and f"dev {dev}" in line and metric == "0"


def _router_route_fixes(output: str, wanted: dict[str, str]) -> list[str]:
    lines = output.splitlines()
    fixes = []
    for intf, ip in wanted.items():
        net = ip.rsplit(".", 1)[0] + ".0/24"
        if not any(ln.split()[:1] == [net] and _route_ok(ln, intf) for ln in lines):
            fixes.append(f"ip route replace {net} dev {intf}")
    return fixes


def _host_route_fixes(output: str, intf: str, ip: str, gateway: str) -> list[str]:
    lines = output.splitlines()
    fixes = []
    net = ip.rsplit(".", 1)[0] + ".0/24"
    if not any(ln.split()[:1] == [net] and _route_ok(ln, intf) for ln in lines):
        fixes.append(f"ip route replace {net} dev {intf}")
    if not any(ln.startswith(f"default via {gateway} ") for ln in lines):
        fixes.append(f"ip route replace default via {gateway} dev {intf}")
    return fixes


def _rule_fixes(output: str) -> list[str]:
    prefs = [m.group(1) for ln in output.splitlines() if (m := re.match(r"^(\d+):", ln))]
    return [f"ip rule del pref {p}" for p in prefs if p not in ("0", "32766", "32767")]


def _iptables_fixes(output: str) -> list[str]:
    fixes, rules = [], []
    for line in output.splitlines():
        if m := re.match(r"^:(INPUT|FORWARD|OUTPUT) (DROP|REJECT)", line):
            fixes.append(f"iptables -P {m.group(1)} ACCEPT")
        elif m := re.match(r"^-A (\S+) (.*-j (?:DROP|REJECT).*)$", line):
            rules.append(f"iptables -D {m.group(1)} {m.group(2)}")
    return fixes + rules


def _fixes(machine: str, diag: str, output: str, intent: _Intent) -> list[str]:
    if machine == "r0":
        if diag == "ip addr":
            return _addr_fixes(output, intent.router)
        if diag == "ip route":
            return _router_route_fixes(output, intent.router)
        if diag == "ip rule":
            return _rule_fixes(output)
        if diag == "iptables-save":
            return _iptables_fixes(output)
        if diag.startswith("sysctl"):
            return ["sysctl -w net.ipv4.ip_forward=1"] if re.search(r"=\s*0", output) else []
        if diag.startswith("tc"):
            devs = re.findall(r"^qdisc (?!noqueue)\S+ \S+ dev (\S+) root", output, re.M)
            return [f"tc qdisc del dev {d} root" for d in devs]
        return []
    intf, ip, gateway = intent.hosts[machine]
    if diag == "ip addr":
        return _addr_fixes(output, {intf: ip})
    return _host_route_fixes(output, intf, ip, gateway)


def _suspects(matrix: PingMatrix, hosts: list[str]) -> list[str]:
    """Hosts involved in dropped pairs, most involved first."""
    count = {h: 0 for h in hosts}
    for s, d in matrix.pairs:
        if (s, d) not in matrix.ok:
            for node in (s, d):
                if node in count:
                    count[node] += 1
    return sorted((h for h in hosts if count[h]), key=lambda h: (-count[h], int(h[1:])))


def _node_step(
    machine: str, diags: tuple[str, ...], history: list[_Entry], intent: _Intent
) -> str | None:
    """The next command for ``machine``, or ``None`` when it needs nothing more."""
    mine = [e for e in history if e.machine == machine]
    for diag in diags:
        runs = [e for e in mine if e.command == diag]
        if not runs:
            return diag
        last = runs[-1]
        later = [e.command for e in mine if e.index > last.index and e.command not in diags]
        if any(diag in _STALES.get(_kind(c), ()) for c in later):
            return diag
        pending = [f for f in _fixes(machine, diag, last.output, intent) if f not in later]
        if pending:
            return pending[0]
    return None


def plan_next(text: str) -> tuple[str, str]:
    """Choose ``(machine, command)`` from an observation's text alone."""
    intent = _parse_intent(text)
    state = text.split("## Current connectivity", 1)[-1].split("## History", 1)[0]
    matrix = parse_pingall(state)
    history = _parse_history(text)
    order = [("r0", ROUTER_DIAGNOSTICS)] + [
        (h, HOST_DIAGNOSTICS) for h in _suspects(matrix, list(intent.hosts))
    ]
    for machine, diags in order:
        if (command := _node_step(machine, diags, history, intent)) is not None:
            return machine, command
    # Everything looked right when last seen: look again where fixes were made.
    for machine, diags in order:
        mine = [e for e in history if e.machine == machine]
        for diag in diags:
            runs = [e for e in mine if e.command == diag]
            if runs and any(e.index > runs[-1].index and e.command not in diags for e in mine):
                return machine, diag
    return "r0", "ip route"


class ReferenceRouteAgent:
    """Stateless reference solver for the route app (no LLM)."""

    name = "route-reference"

    async def act(self, observation: Observation) -> str:
        """Answer with the next diagnostic or fix as ``{"machine", "command"}`` JSON."""
        machine, command = plan_next(observation.text)
        return json.dumps({"machine": machine, "command": command})
