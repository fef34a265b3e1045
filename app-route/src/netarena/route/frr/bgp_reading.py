"""What the BGP reference reads: the runbook's intent, the ticket, and a router's state.

From the prompt: the ASes and how they relate, the sessions that must be up (addresses,
kind), the border routers that set next-hop-self, the stubs each router announces, the
local preference of each relationship; from the ticket: the sessions down, and the routers
the design sends each complaint's traffic across. From a router's look
(``BGP_DIAGNOSTIC``): its ``router bgp`` section (neighbours and their lines, ``network``
statements), its prefix-lists and route-maps, each session's state, and the prefixes its
BGP table holds with a valid best path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = [
    "BGP_DIAGNOSTIC",
    "Intent",
    "Look",
    "read_intent",
    "read_look",
]

BGP_DIAGNOSTIC = "vtysh -c 'show bgp summary' -c 'show running-config' -c 'show ip bgp'"
"""How the reference looks at a router."""

_ROUTERS = re.compile(r"^Routers (.*?) run FRR \(.*bgpd\)")
_AS = re.compile(r"^- AS (\d+): (.*)$")
_PROVIDER = re.compile(r"^- AS (\d+) is the transit provider of AS (\d+)")
_PEERS = re.compile(r"^- AS (\d+) and AS (\d+) are peers")
_PREF = re.compile(r"customer get local preference (\d+), from a peer (\d+), from a provider (\d+)")
_SESSION = re.compile(
    r"^- (\S+) (\S+) \(AS (\d+)\) <-> (\S+) (\S+) \(AS (\d+)\): (iBGP|eBGP over|eBGP between)"
)
_STUB = re.compile(r"^- (\S+) (\S+) on (\S+) behind (\S+) (\S+) (\S+)$")
_BORDERS = re.compile(r"^Border routers set themselves as next hop towards their iBGP peers: (.*)$")
_ALARM = re.compile(r"Alarm: BGP session (r\d+)\b.* - (r\d+)\b.* is down")
_PATHS = re.compile(r"router by router (\S+) ((?:r\d+ )+)(\S+)\.")
_SUMMARY = re.compile(r"^(\d+\.\d+\.\d+\.\d+)\s+4(?:\s+\d+){6}\s+\S+\s+(\S+(?: \(\w+\))?)")
_ROW = re.compile(
    r"^([ *>=sdhirSR]{0,3})\s*(\d+\.\d+\.\d+\.\d+/\d+)\s+(\d+\.\d+\.\d+\.\d+)\s"
)
"""A ``show ip bgp`` row: its status codes, prefix and next hop."""


@dataclass
class Intent:
    """What the runbook and the ticket say."""

    routers: list[str] = field(default_factory=list)
    asn: dict[str, int] = field(default_factory=dict)
    """Router → its AS."""
    relation: dict[tuple[int, int], str] = field(default_factory=dict)
    """``(mine, theirs)`` → what AS ``theirs`` is to AS ``mine``."""
    pref: dict[str, int] = field(default_factory=dict)
    """Relationship → the local preference its routes get."""
    neighbors: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    """Router → neighbour address → ``(the router there, session kind)``."""
    borders: set[str] = field(default_factory=set)
    """Routers that set next-hop-self towards their iBGP peers."""
    stub: dict[str, str] = field(default_factory=dict)
    """Router → the prefix it announces."""
    host_router: dict[str, str] = field(default_factory=dict)
    """Host → the router its stub is behind."""
    down: list[tuple[str, str]] = field(default_factory=list)
    """Sessions the ticket says are down."""
    paths: list[list[str]] = field(default_factory=list)
    """Routers the design sends each complaint's traffic across."""

    def own(self, asn: int) -> set[str]:
        """The prefixes AS ``asn``'s routers announce."""
        return {p for r, p in self.stub.items() if self.asn.get(r) == asn}

    def cone(self, asn: int) -> set[str]:
        """AS ``asn``'s own prefixes and its customers' cones."""
        found = self.own(asn)
        for (mine, theirs), rel in self.relation.items():
            if mine == asn and rel == "customer":
                found |= self.cone(theirs)
        return found


def read_intent(text: str) -> Intent:
    """The runbook's design and the ticket's symptoms, as the prompt states them."""
    intent = Intent()
    ticket, _, rest = text.partition("## Routing design")
    design = rest.split("## Task", 1)[0]
    for line in design.splitlines():
        if m := _ROUTERS.match(line):
            intent.routers = [r.strip() for r in m.group(1).split(",")]
        elif m := _AS.match(line):
            for name in re.findall(r"\b(r\d+)\b", m.group(2)):
                intent.asn[name] = int(m.group(1))
        elif m := _PROVIDER.match(line):
            top, below = int(m.group(1)), int(m.group(2))
            intent.relation[(top, below)], intent.relation[(below, top)] = "customer", "provider"
        elif m := _PEERS.match(line):
            one, two = int(m.group(1)), int(m.group(2))
            intent.relation[(one, two)] = intent.relation[(two, one)] = "peer"
        elif m := _SESSION.match(line):
            a, a_addr, b, b_addr = m.group(1), m.group(2), m.group(4), m.group(5)
            kind = {"iBGP": "ibgp", "eBGP over": "ebgp", "eBGP between": "multihop"}[m.group(7)]
            intent.neighbors.setdefault(a, {})[b_addr] = (b, kind)
            intent.neighbors.setdefault(b, {})[a_addr] = (a, kind)
        elif m := _BORDERS.match(line):
            intent.borders = {r.strip() for r in m.group(1).split(",")} - {"none"}
        elif m := _STUB.match(line):
            intent.stub[m.group(4)] = m.group(3)
            intent.host_router[m.group(1)] = m.group(4)
        if m := _PREF.search(line):
            kinds = ("customer", "peer", "provider")
            intent.pref = dict(zip(kinds, map(int, m.groups()), strict=True))
    for m in _ALARM.finditer(ticket):
        intent.down.append((m.group(1), m.group(2)))
    for m in _PATHS.finditer(ticket):
        intent.paths.append(m.group(2).split())
    return intent


@dataclass
class Look:
    """One router's state, as its look showed it."""

    neighbors: dict[str, list[str]] = field(default_factory=dict)
    """Neighbour address → its lines in ``router bgp`` (address family's too), without
    ``neighbor ADDR``."""
    networks: set[str] = field(default_factory=set)
    """Prefixes of its ``network`` statements."""
    prefix_lists: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    """Name → ``(seq, action, prefix)`` entries."""
    route_maps: dict[str, list[tuple[int, str, str | None, int | None]]] = field(
        default_factory=dict
    )
    """Name → ``(seq, action, matched prefix-list, local preference set)`` entries."""
    state: dict[str, str] = field(default_factory=dict)
    """Neighbour address → its summary state (a prefix count when Established)."""
    best: set[str] = field(default_factory=set)
    """Prefixes its BGP table has a valid best path for."""
    unresolved: set[str] = field(default_factory=set)
    """Next hops of paths its BGP table holds as not valid (a next hop it cannot reach)."""
    asn: int = 0
    """Its ``router bgp`` AS."""

    def bound(self, address: str, what: str, direction: str) -> str | None:
        """The ``route-map`` or ``prefix-list`` a neighbour binds ``in`` or ``out``."""
        for line in self.neighbors.get(address, []):
            words = line.split()
            if words[0] == what and words[2:] == [direction]:
                return words[1]
        return None


def read_look(output: str) -> Look:
    """A router's state from its look's output."""
    look = Look()
    section = None
    for raw in output.splitlines():
        line = raw.rstrip()
        words = line.split()
        if not words:
            continue
        if not line.startswith(" "):
            section = None
        if line.startswith("router bgp "):
            section, look.asn = "bgp", int(words[2])
        elif line.startswith("route-map ") and len(words) == 4:
            section = "map"
            current = (words[1], int(words[3]), words[2])
            look.route_maps.setdefault(words[1], []).append((current[1], current[2], None, None))
        elif line.startswith("ip prefix-list ") and len(words) >= 7 and words[3] == "seq":
            look.prefix_lists.setdefault(words[2], []).append((int(words[4]), words[5], words[6]))
        elif section == "bgp" and words[0] == "neighbor" and len(words) > 2:
            look.neighbors.setdefault(words[1], []).append(" ".join(words[2:]))
        elif section == "bgp" and words[0] == "network":
            look.networks.add(words[1])
        elif section == "map" and line.startswith(" "):
            name, seq, action = current
            entries = look.route_maps[name]
            _, _, match, pref = entries[-1]
            if words[:4] == ["match", "ip", "address", "prefix-list"]:
                match = words[4]
            elif words[:2] == ["set", "local-preference"]:
                pref = int(words[2])
            entries[-1] = (seq, action, match, pref)
        if m := _SUMMARY.match(line):
            look.state[m.group(1)] = m.group(2)
        if m := _ROW.match(line):
            if "*" in m.group(1) and ">" in m.group(1):
                look.best.add(m.group(2))
            elif "*" not in m.group(1):
                look.unresolved.add(m.group(3))
    return look
