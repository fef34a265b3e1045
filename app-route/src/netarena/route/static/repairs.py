"""What the reference solver would change on a machine, given one diagnostic output.

The diagnostic is ``readings.NODE_READ`` (links, addresses, routes of every table, policy
rules, packet filters, queues, forwarding settings), the command any agent could send.
Every object is judged by its effect on the flows that must pass (``inventory.must_work``:
the expected matrix, on ICMP, TCP and UDP), never by its looks: the network's owners block
traffic with the same objects faults are made of (``twins.py``), so a DROP rule, a refusing
policy rule, an interface down, an empty queue, a route to nowhere or an odd address is
repaired only when a flow that must pass runs into it. What breaks nothing stays.

Fixes come in a safe order: links up, a right address under a wrong length removed (and the
routes through it put back), missing addresses added, stolen addresses removed, then
routes, policy rules, forwarding, packet filters and queues.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from netarena.route.static.filters import filter_fixes
from netarena.route.static.inventory import Inventory, must_work
from netarena.route.static.readings import NODE_READ, sections

__all__ = ["ROUTER_DIAGNOSTIC", "HOST_DIAGNOSTIC", "router_fixes", "host_fixes", "node_fixes"]

ROUTER_DIAGNOSTIC = NODE_READ
"""The reference's look at the router (the read every machine gets)."""
HOST_DIAGNOSTIC = NODE_READ
"""The reference's look at a host."""
_REFUSING = ("prohibit", "unreachable", "blackhole")

Pairs = set[tuple[str, str]]


def _net(text: str) -> ipaddress.IPv4Network:
    return ipaddress.IPv4Network("0.0.0.0/0" if text in ("default", "all") else text,
                                 strict=False)


def _carrying(inv: Inventory, machine: str, pairs: Pairs) -> dict[str, str]:
    """The machine's inventory interfaces that carry a flow that must pass → wanted address."""
    if machine != "r0":
        intf, ip, switch = inv.hosts[machine]
        length = _net(inv.subnets[switch][0]).prefixlen
        busy = any(machine in pair for pair in pairs)
        return {intf: f"{ip}/{length}"} if busy else {}
    found = {}
    for switch, (net, gateway, intf) in inv.subnets.items():
        inside = {h for h, (_, _, sw) in inv.hosts.items() if sw == switch}
        if any((a in inside) != (b in inside) for a, b in pairs):
            found[intf] = f"{gateway}/{_net(net).prefixlen}"
    return found


def prefix_works(inv: Inventory, cidr: str, router: bool = False) -> bool:
    """Whether a machine's own address under this prefix still reaches its whole subnet.

    Narrower: the gateway and every machine of the subnet stay inside; wider: no other
    subnet meets it (never on the router); and no machine's address becomes its network or
    broadcast address.
    """
    switch = inv.subnet_of(cidr.split("/")[0])
    if switch is None:
        return False
    own = _net(inv.subnets[switch][0])
    span = _net(cidr)
    needed = {ipaddress.IPv4Address(inv.subnets[switch][1])} | {
        ipaddress.IPv4Address(ip) for _, ip, sw in inv.hosts.values() if sw == switch}
    if {span.network_address, span.broadcast_address} & needed:
        return False
    if span.prefixlen > own.prefixlen:
        return all(a in span for a in needed)
    if router:  # a wider connected route would lose to a more specific one through another
        return False  # interface (a backup route to the subnet)
    others = [_net(n) for sw, (n, _, _) in inv.subnets.items() if sw != switch]
    return not any(o.overlaps(span) for o in others)


def _owner(inv: Inventory, ip: str) -> str | None:
    if any(gw == ip for _, gw, _ in inv.subnets.values()):
        return "r0"
    return next((h for h, (_, a, _) in inv.hosts.items() if a == ip), None)


def _steals(inv: Inventory, machine: str, ip: str, pairs: Pairs, active: set[str]) -> bool:
    """Whether ``machine`` holding another machine's address takes traffic that must pass.

    Holding it answers the owner's subnet's ARP for it (beside the owner) and keeps the
    holder's own packets for it local (its connections to a service the router forwards
    there too); a router holding it keeps everything routed to it.
    """
    owner = _owner(inv, ip)
    if owner in (None, machine):
        return False
    own_switch = inv.hosts[machine][2] if machine != "r0" else None
    if owner == "r0":
        return ip in (inv.router_ip, *inv.published) or (
            own_switch is not None and ip == inv.subnets[own_switch][1])
    if owner not in active:
        return False
    return machine == "r0" or inv.hosts[owner][2] == own_switch or bool(
        {(machine, owner), (owner, machine)} & pairs)


def _interface_fixes(sec: dict[str, list[str]], wanted: dict[str, str], inv: Inventory,
                     machine: str, pairs: Pairs) -> list[str]:
    links = {}
    for line in sec.get("link", []):
        parts = line.split()
        if len(parts) == 3:
            links[parts[0].rstrip(":").split("@")[0]] = (parts[1], parts[2])
    inets: dict[str, list[str]] = {}
    for line in sec.get("addr", []):
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "inet":
            inets.setdefault(parts[0], []).append(parts[2])
    active = {m for pair in pairs for m in pair}
    ups, renumbers, adds, dels = [], [], [], []
    for intf, cidr in wanted.items():
        flags, mtu = links.get(intf, ("", "1500"))
        if "UP" not in flags.strip("<>").split(","):
            ups.append(f"ip link set {intf} up")
        if mtu.isdigit() and int(mtu) < 1500:
            ups.append(f"ip link set {intf} mtu 1500")
        own = cidr.split("/")[0]
        present = inets.get(intf, [])
        mine = [a for a in present if a.split("/")[0] == own]
        wrong = [a for a in mine if a != cidr and not prefix_works(inv, a, machine == "r0")]
        renumbers += [f"ip addr del {a} dev {intf}" for a in wrong]
        if not mine or wrong:
            adds.append(f"ip addr add {cidr} brd + dev {intf}")
        if wrong:  # the kernel dropped the routes through the interface with its address
            adds += _routes_through(sec, intf)
    for intf, present in inets.items():
        for a in present:
            if _steals(inv, machine, a.split("/")[0], pairs, active):
                dels.append(f"ip addr del {a} dev {intf}")  # another machine's address
    return ups + renumbers + adds + dels


def _routes_through(sec: dict[str, list[str]], intf: str) -> list[str]:
    """``ip route replace`` of every route seen through a gateway on ``intf``."""
    found = []
    for line in sec.get("route", []):
        tokens = [t for t in line.split() if t not in ("linkdown", "dead", "onlink")]
        if "via" in tokens and f"dev {intf}" in " ".join(tokens):
            found.append("ip route replace " + " ".join(tokens))
    return found


@dataclass(frozen=True)
class _Route:
    kind: str
    dst: str
    via: str | None
    dev: str | None
    metric: int
    line: str

    def delete(self, table: str = "main") -> str:
        kind = "" if self.kind == "unicast" else f"{self.kind} "
        via = f" via {self.via}" if self.via else ""
        dev = f" dev {self.dev}" if self.dev else ""
        where = "" if table == "main" else f" table {table}"
        return f"ip route del {kind}{self.dst}{via}{dev} metric {self.metric}{where}"


def _table_routes(sec: dict[str, list[str]], table: str = "main") -> list[_Route]:
    """The routes of one table, as ``ip -4 route show table all`` printed them."""
    found = []
    for line in sec.get("route", []):
        words = line.split()
        shown = words[words.index("table") + 1] if "table" in words else "main"
        if shown != table or not words:
            continue
        kind = words.pop(0) if words[0] in (*_REFUSING, "throw") else "unicast"
        if not words:
            continue
        opts = dict(zip(words[1::2], words[2::2], strict=False))
        found.append(_Route(kind, words[0], opts.get("via"), opts.get("dev"),
                            int(opts.get("metric", "0")), line))
    return found


def _connected(sec: dict[str, list[str]], inv: Inventory, machine: str, pairs: Pairs
               ) -> list[_Route]:
    """The connected routes the interface fixes bring back (the kernel makes those)."""
    found = []
    down = {line.split()[0].rstrip(":").split("@")[0] for line in sec.get("link", [])
            if "UP" not in line.split()[1].strip("<>").split(",")}
    for intf, cidr in _carrying(inv, machine, pairs).items():
        own = cidr.split("/")[0]
        mine = [line.split()[2] for line in sec.get("addr", [])
                if line.split()[:2] == [intf, "inet"] and line.split()[2].split("/")[0] == own]
        kept = [a for a in mine if a == cidr or prefix_works(inv, a, machine == "r0")]
        if kept and intf not in down:
            continue  # nothing changes there: the routes are as read
        span = str(_net(kept[0] if kept else cidr))
        found.append(_Route("unicast", span, None, intf, 0, f"{span} dev {intf}"))
    return found


def _best(routes: list[_Route], ip: str) -> _Route | None:
    address = ipaddress.IPv4Address(ip)
    fits = [r for r in routes if address in _net(r.dst)]
    return min(fits, key=lambda r: (-_net(r.dst).prefixlen, r.metric), default=None)


def _route_fixes(sec: dict[str, list[str]], inv: Inventory, machine: str, pairs: Pairs
                 ) -> list[str]:
    """Routes a flow that must pass is sent astray by, deleted; the right route put back."""
    routes = _table_routes(sec) + _connected(sec, inv, machine, pairs)
    fixes: list[str] = []
    goals: dict[str, tuple[str, str, str | None]] = {}
    neighbours: dict[str, str] = {}  # a host's must-reach neighbours → its subnet
    if machine == "r0":
        for a, b in pairs:
            for x, y in ((a, b), (b, a)):
                if x != "r0" and (y == "r0" or inv.hosts[x][2] != inv.hosts[y][2]):
                    net, _, intf = inv.subnets[inv.hosts[x][2]]
                    goals[inv.hosts[x][1]] = (net, intf, None)
    else:
        intf, _, switch = inv.hosts[machine]
        net, gateway, _ = inv.subnets[switch]
        for a, b in pairs:
            if machine not in (a, b) or a == "r0":  # the router talks from the gateway
                continue
            ip = inv.address(b if a == machine else a)
            if inv.subnet_of(ip) != switch:
                target = "default"
                address = ipaddress.IPv4Address(ip)
                if switch in inv.restricted:
                    target = next((n for n in inv.restricted[switch] if address in _net(n)),
                                  net)
                goals[ip] = (target, intf, gateway)
            else:
                neighbours[ip] = net
    for ip, net in sorted(neighbours.items()):  # reached on the link: a narrower route
        # inside the subnet that sends it elsewhere goes
        while (best := _best(routes, ip)) is not None and _net(best.dst) != _net(net) and (
                _net(best.dst).subnet_of(_net(net))) and not (
                best.kind == "unicast" and best.via is None and best.dev == inv.hosts[machine][0]):
            if (fix := best.delete()) not in fixes:
                fixes.append(fix)
            routes.remove(best)
    for ip, (target, out, via) in sorted(goals.items()):
        right = f"ip route replace {target} {f'via {via} ' if via else ''}dev {out}"
        for _ in range(8):
            best = _best(routes, ip)
            if best is not None and best.kind == "unicast" and best.dev == out and best.via == via:
                break
            if best is None or best.dst == target and not best.metric:
                fix = right  # none, or the right destination sent astray: put it right
                if best is not None:
                    routes.remove(best)
                routes.append(_Route("unicast", target, via, out, 0, right))
            else:
                fix = best.delete()  # a better or more specific route that goes astray
                routes.remove(best)
            if fix not in fixes:
                fixes.append(fix)
    if machine != "r0" and inv.hosts[machine][2] in inv.restricted:
        if any(r.dst == "default" for r in routes):
            fixes.append("ip route del default")
    return fixes


def _rule_hits(words: list[str], src: str, dst: str, iif: str) -> bool:
    def ok(key: str, value: str) -> bool:
        if key not in words:
            return True
        spec = words[words.index(key) + 1]
        if key == "iif":
            return spec == iif
        return spec == "all" or ipaddress.IPv4Address(value) in _net(spec)

    return ok("from", src) and ok("to", dst) and ok("iif", iif) and "oif" not in words


def _decisions(inv: Inventory, pairs: Pairs) -> list[tuple[str, str, str]]:
    """(source, destination, incoming interface) of the router's decisions for must-pass flows."""
    decisions = []
    for a, b in pairs:
        for x, y in ((a, b), (b, a)):
            if x == "r0":
                y_ip = inv.address(y)
                sw = inv.subnet_of(y_ip)
                if sw is not None:
                    decisions += [(inv.subnets[sw][1], y_ip, "lo"), (inv.router_ip, y_ip, "lo")]
            elif y != "r0" and inv.hosts[x][2] != inv.hosts[y][2]:
                decisions.append((inv.hosts[x][1], inv.address(y), inv.subnets[inv.hosts[x][2]][2]))
    return decisions


def _rule_fixes(sec: dict[str, list[str]], inv: Inventory, pairs: Pairs) -> list[str]:
    """Refusing policy rules that stop a flow through the router that must pass."""
    decisions = _decisions(inv, pairs)
    fixes = []
    for line in sec.get("rule", []):
        pref, _, rest = line.partition(":")
        words = rest.split()
        if not pref.isdigit() or not set(words) & set(_REFUSING) or "not" in words:
            continue
        if any(_rule_hits(words, s, d, i) for s, d, i in decisions):
            fixes.append(f"ip rule del pref {pref} {' '.join(words)}")
    return fixes


def _policy_fixes(sec: dict[str, list[str]], inv: Inventory, pairs: Pairs) -> list[str]:
    """Routes of policy tables that send a flow that must pass astray, deleted.

    The kernel follows the rules in priority order; a ``lookup`` rule that matches the
    decision and whose table holds a route to the destination decides it (a table with
    none, or a ``throw`` route, passes the decision to the next rule, ``main`` last).
    """
    lookups = []
    for line in sec.get("rule", []):
        pref, _, rest = line.partition(":")
        words = rest.split()
        table = words[words.index("lookup") + 1] if "lookup" in words else "main"
        if pref.isdigit() and table not in ("main", "local", "default") and "not" not in words:
            lookups.append((int(pref), words, table))
    tables = {table: _table_routes(sec, table) for _, _, table in lookups}
    fixes: list[str] = []
    for src, dst, iif in _decisions(inv, pairs):
        sw = inv.subnet_of(dst)
        right = inv.subnets[sw][2] if sw is not None else None
        for _, words, table in sorted(lookups, key=lambda rule: rule[0]):
            if not _rule_hits(words, src, dst, iif):
                continue
            best = _best(tables[table], dst)
            while best is not None and best.kind != "throw" and not (
                    best.kind == "unicast" and best.via is None and best.dev == right):
                if (fix := best.delete(table)) not in fixes:
                    fixes.append(fix)
                tables[table].remove(best)
                best = _best(tables[table], dst)
            if best is not None and best.kind != "throw":
                break  # decided by this table, rightly
    return fixes


def _forwarding_fixes(sec: dict[str, list[str]], inv: Inventory, pairs: Pairs) -> list[str]:
    """Router interfaces that refuse to forward what must arrive through them."""
    off = set()
    for line in sec.get("sysctl", []):
        if line.startswith("forwarding "):
            off = {p.split("=")[0] for p in line.split()[1:] if p.endswith("=0")}
    fixes = []
    for switch, (_, _, intf) in inv.subnets.items():
        inside = {h for h, (_, _, sw) in inv.hosts.items() if sw == switch}
        crosses = any((a in inside) != (b in inside) and "r0" not in (a, b) for a, b in pairs)
        if intf in off and crosses:
            fixes.append(f"sysctl -qw net.ipv4.conf.{intf}.forwarding=1")
    return fixes


def _tiny_burst(line: str) -> bool:
    """A token bucket whose burst is smaller than a ping's frame (98 bytes): it drops them all."""
    m = re.search(r" burst (\d+)b\b", line)
    return m is not None and int(m.group(1)) < 98


def _queue_fixes(sec: dict[str, list[str]], wanted: dict[str, str]) -> list[str]:
    fixes = []
    for line in sec.get("qdisc", []):
        m = re.match(r"^qdisc \S+ \S+ dev (\S+) root", line)
        empty = re.search(r" limit 0[pb]?\b", line) or _tiny_burst(line)
        if m and m.group(1) in wanted and empty:
            fixes.append(f"tc qdisc del dev {m.group(1)} root")  # a queue that passes nothing
    return fixes


def node_fixes(output: str, inv: Inventory, machine: str, pairs: Pairs) -> list[str]:
    """Fixes for ``machine`` from its diagnostic output (see the module docstring)."""
    sec = sections(output)
    wanted = _carrying(inv, machine, pairs)
    fixes = _interface_fixes(sec, wanted, inv, machine, pairs)
    fixes += _route_fixes(sec, inv, machine, pairs)
    if machine == "r0":
        fixes += _rule_fixes(sec, inv, pairs) + _policy_fixes(sec, inv, pairs)
        fixes += _forwarding_fixes(sec, inv, pairs)
    fixes += filter_fixes(sec.get("filter", []), must_work(inv, machine, pairs))
    fixes += _queue_fixes(sec, wanted)
    if sec.get("cache"):  # routes learnt from redirects while a route was wrong
        fixes.append("ip route flush cache")
    return fixes


def router_fixes(output: str, inv: Inventory, pairs: Pairs) -> list[str]:
    """Fixes for the router (``node_fixes``)."""
    return node_fixes(output, inv, "r0", pairs)


def host_fixes(output: str, inv: Inventory, host: str, pairs: Pairs) -> list[str]:
    """Fixes for ``host`` (``node_fixes``)."""
    return node_fixes(output, inv, host, pairs)
