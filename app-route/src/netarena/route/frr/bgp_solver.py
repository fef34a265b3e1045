"""The reference solver for multi-AS BGP queries: one visit per turn, looking and repairing.

It reads the design from the prompt (ASes, router ids, every session with its addresses
and kind, the border routers, the stubs), and from it each router's ``router bgp``
section the way FRR prints it (``bgp_plan.bgp_lines``, the same words the runbook turns
into). A turn is one shell command on one router, so each turn visits one router and does
all of a router's work there (``bgp_visit.visit_command``): it shows the summary, bgpd's
configuration and the table, repairs the difference between the ``router bgp`` section
and the design (neighbours the design does not name removed, missing neighbours and lines
added, extra lines on designed neighbours, a filter, a prefix limit, a TTL check, removed,
a wrong remote AS set again, a missing ``network`` put back), and clears the designed
sessions still not Established (a prefix limit's shutdown stays until then, and FRR waits
longer after each failed attempt). It never touches lines the design does not describe
(global prefix lists, route-maps, static routes stay). Routers come in the order the
evidence of earlier visits points: the far ends of sessions a visited router showed down,
the borders whose routes it could not resolve, those that should have sent it a stub it
lacked; then by how often the ticket names their stub, border routers first among equals.
A router visited before the far end of one of its down sessions was repaired is visited
again (its back-off may outlast the episode). Stateless: everything comes from the
observation.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from netarena.route.frr.bgp_plan import Neighbor, bgp_lines
from netarena.route.frr.bgp_visit import BGP_DIAGNOSTIC, VISIT_MARK, visit_command
from netarena.route.history import Move, _history

__all__ = [
    "BgpDesign",
    "read_bgp_design",
    "bgp_router_fix",
    "bgp_visit",
    "BGP_DIAGNOSTIC",
    "next_bgp_action",
]

_ROUTERS = re.compile(r"^Routers (.*?) run FRR \(.*bgpd\)")
_AS = re.compile(r"^- AS (\d+): (.*)$")
_SESSION = re.compile(
    r"^- (\S+) (\S+) \(AS (\d+)\) <-> (\S+) (\S+) \(AS (\d+)\): (iBGP|eBGP over|eBGP between)"
)
_STUB = re.compile(r"^- (\S+) (\S+) on (\S+) behind (\S+) (\S+) (\S+)$")
_BORDERS = re.compile(r"^Border routers set themselves as next hop towards their iBGP peers: (.*)$")
_PATH = re.compile(r"^([ *>=sdhirSR]{0,3})\s*\d+\.\d+\.\d+\.\d+/\d+\s+(\d+\.\d+\.\d+\.\d+)\s")
"""A ``show ip bgp`` row: its status codes and its next hop."""
_BEST = re.compile(r"^([ *>=sdhirSR]{0,3})\s*(\d+\.\d+\.\d+\.\d+/\d+)\s+(\d+\.\d+\.\d+\.\d+)\s")
"""A ``show ip bgp`` row: its status codes, its prefix and its next hop."""
_CUT = re.compile(r"(h\d+) \((\S+)\) cannot be reached from (.*)\.")
"""A ticket line: a host, its stub, and the hosts that cannot reach it."""
_LINK = re.compile(r"^- (\S+) \S+ \S+ <-> (\S+) \S+ \S+ \(\S+\): cost (\d+), key \S+$")
"""An internal link of the design: its routers and its OSPF cost."""
_SUMMARY = re.compile(r"^(\d+\.\d+\.\d+\.\d+)\s+4(?:\s+\d+){6}\s+\S+\s+(\S+)")
"""A ``show bgp summary`` neighbour row: its address and its state (or prefix count)."""


@dataclass
class BgpDesign:
    """What the runbook says about BGP."""

    routers: list[str] = field(default_factory=list)
    asn: dict[str, int] = field(default_factory=dict)
    """Router → its AS."""
    router_ids: dict[str, str] = field(default_factory=dict)
    neighbors: dict[str, list[Neighbor]] = field(default_factory=dict)
    """Router → its neighbour statements."""
    networks: dict[str, list[str]] = field(default_factory=dict)
    """Router → the prefixes it announces."""
    peers: dict[str, dict[str, str]] = field(default_factory=dict)
    """Router → neighbour address → the router there."""
    stub_router: dict[str, str] = field(default_factory=dict)
    """Host → the router its stub is behind."""
    border_of: dict[str, str] = field(default_factory=dict)
    """eBGP address → the router at the session's other end (the next hop it hands on)."""
    costs: dict[frozenset[str], int] = field(default_factory=dict)
    """Internal link (its two routers) → its OSPF cost."""


def read_bgp_design(text: str) -> BgpDesign:
    """The BGP design as the prompt states it."""
    design = BgpDesign()
    sessions: list[tuple[str, str, str, str, str]] = []
    borders: set[str] = set()
    for line in text.split("## Task", 1)[0].splitlines():
        if m := _ROUTERS.match(line):
            design.routers = [r.strip() for r in m.group(1).split(",")]
        elif m := _AS.match(line):
            design.asn.update({r.strip(): int(m.group(1)) for r in m.group(2).split(",")})
        elif m := _SESSION.match(line):
            sessions.append((m.group(1), m.group(2), m.group(4), m.group(5), m.group(7)))
        elif m := _LINK.match(line):
            design.costs[frozenset((m.group(1), m.group(2)))] = int(m.group(3))
        elif m := _BORDERS.match(line):
            borders = {r.strip() for r in m.group(1).split(",")}
        elif m := _STUB.match(line):
            design.networks.setdefault(m.group(4), []).append(m.group(3))
            design.stub_router[m.group(1)] = m.group(4)
        elif line.startswith("- ") and design.routers and not design.router_ids:
            pairs = [part.split() for part in line[2:].split(", ")]
            if all(len(p) == 2 and p[0] in design.routers for p in pairs):
                design.router_ids = {p[0]: p[1] for p in pairs}
    for a, a_addr, b, b_addr, kind in sessions:
        for me, peer, addr in ((a, b, b_addr), (b, a, a_addr)):
            design.neighbors.setdefault(me, []).append(
                Neighbor(
                    addr,
                    design.asn[peer],
                    kind == "iBGP",
                    kind == "eBGP between",
                    kind == "iBGP" and me in borders,
                )
            )
            design.peers.setdefault(me, {})[addr] = peer
            if kind != "iBGP":
                design.border_of[addr] = me
    return design


def _bgp_section(config: str) -> tuple[set[str], set[str]]:
    """The ``router bgp`` section's own lines and its IPv4 unicast family's, stripped."""
    top: set[str] = set()
    family: set[str] = set()
    inside = in_family = False
    for raw in config.splitlines():
        if raw.startswith("router bgp"):
            inside = True
        elif inside and not raw.startswith(" "):
            inside = in_family = False
        elif inside and raw.strip() == "address-family ipv4 unicast":
            in_family = True
        elif inside and raw.strip() == "exit-address-family":
            in_family = False
        elif inside and raw.strip() not in ("", "!"):
            (family if in_family else top).add(raw.strip())
    return top, family


def _neighbor_of(line: str) -> str | None:
    words = line.split()
    return words[1] if len(words) > 2 and words[0] == "neighbor" else None


def bgp_router_fix(router: str, output: str, design: BgpDesign) -> str | None:
    """The one command that repairs what ``router``'s diagnostic showed, if anything."""
    want = bgp_lines(
        design.asn[router],
        design.router_ids.get(router, ""),
        design.neighbors.get(router, []),
        design.networks.get(router, []),
    )
    want_top, want_family = _bgp_section("\n".join(want))
    have_top, have_family = _bgp_section(output)
    designed = {n.address for n in design.neighbors.get(router, [])}
    present = {a for line in have_top | have_family if (a := _neighbor_of(line))}
    top = [f"no neighbor {a}" for a in sorted(present - designed)]
    for line in sorted(have_top - want_top):  # a wrong remote AS is overwritten below
        if _neighbor_of(line) in designed & present and " remote-as " not in line:
            top.append(f"no {line}")
    top += sorted(  # a new neighbour's remote AS first: FRR wants it before the rest
        (line for line in want_top - have_top if _neighbor_of(line) in designed),
        key=lambda x: (" remote-as " not in x, x),
    )
    family = [
        f"no {line}"
        for line in sorted(have_family - want_family)
        if _neighbor_of(line) in designed or line.startswith("network ")
    ]
    family += sorted(want_family - have_family, key=lambda x: "activate" not in x)
    if not top and not family:
        return None
    vty = [f"router bgp {design.asn[router]}", *top]
    if family:
        vty += ["address-family ipv4 unicast", *family, "exit-address-family"]
    command = "vtysh -c 'conf t' " + " ".join(f"-c {shlex.quote(x)}" for x in vty)
    down = [a for a in _down(router, output, design) if a in _touched(command)]
    return command + (f" && {{ {_clear(down)}; }}" if down else "")


def _touched(command: str) -> set[str]:
    """Neighbour addresses a repair command changed."""
    return set(re.findall(r"neighbor (\d+\.\d+\.\d+\.\d+) ", command))


def _clear(addresses: list[str]) -> str:
    """Restart those sessions that are not up; one that came up meanwhile is left alone.

    FRR waits longer after each failed attempt to open a session (up to two minutes).
    """
    return "; ".join(
        f"vtysh -c 'show bgp neighbors {a}' | grep -q 'BGP state = Established' "
        f"|| vtysh -c 'clear bgp {a}'"
        for a in addresses
    )


def _down(router: str, output: str, design: BgpDesign, silent: bool = False) -> list[str]:
    """Neighbour addresses ``router``'s summary shows not Established.

    With ``silent``, also those Established that sent nothing (every designed peer sends
    at least one stub): evidence where to look, never a reason to reset a session.
    """
    peers = design.peers.get(router, {})
    return [
        m.group(1)
        for line in output.splitlines()
        if (m := _SUMMARY.match(line))
        and m.group(1) in peers
        and (not m.group(2).isdigit() or (silent and m.group(2) == "0"))
    ]


def _down_peers(router: str, output: str, design: BgpDesign) -> list[str]:
    """Routers at the far end of sessions ``router``'s summary shows not Established."""
    return [design.peers[router][a] for a in _down(router, output, design, silent=True)]


def _unresolved(output: str, design: BgpDesign) -> list[str]:
    """Border routers that handed on routes whose next hop does not resolve here."""
    found = []
    for line in output.split("BGP table version is", 1)[-1].splitlines():
        if (m := _PATH.match(line)) and "*" not in m.group(1) and m.group(2) in design.border_of:
            found.append(design.border_of[m.group(2)])
    return found


def _missing(router: str, output: str, design: BgpDesign) -> list[str]:
    """Who should have given ``router`` the stubs its BGP table lacks.

    The stub's own router inside the AS; the AS's border routers for other ASes' stubs.
    """
    table = output.split("BGP table version is", 1)[-1]
    if table is output or "output cut" in table:
        return []
    mine = design.asn.get(router)
    borders = [
        r
        for r in design.routers
        if design.asn.get(r) == mine and any(not n.ibgp for n in design.neighbors.get(r, []))
    ]
    found: list[str] = []
    for owner, prefixes in design.networks.items():
        if owner != router and any(p not in table for p in prefixes):
            found += [owner] if design.asn.get(owner) == mine else borders
    return found


def _transit(router: str, output: str, design: BgpDesign, ticket: str) -> list[str]:
    """Routers inside ``router``'s AS on the way to a route's iBGP next hop.

    Only routes to stubs the ticket says ``router``'s host cannot reach: each router its
    packets cross there must hold the route too.
    """
    host = next((h for h, r in design.stub_router.items() if r == router), None)
    cut = {m.group(2) for m in _CUT.finditer(ticket) if host in m.group(3).split(", ")}
    owner = {rid: r for r, rid in design.router_ids.items()}
    mine = [r for r in design.routers if design.asn.get(r) == design.asn.get(router)]
    found: list[str] = []
    for line in output.split("BGP table version is", 1)[-1].splitlines():
        m = _BEST.match(line)
        if not m or ">" not in m.group(1) or m.group(2) not in cut:
            continue
        to = owner.get(m.group(3), "")
        for via in [r for r in mine if to in mine and r not in (router, to)]:
            direct = design.costs.get(frozenset((router, to)), 1 << 30)
            legs = [design.costs.get(frozenset(p), 1 << 30) for p in ((router, via), (via, to))]
            if sum(legs) < direct:
                found.append(via)
    return found


def _order(text: str, design: BgpDesign, looked: dict[str, str]) -> list[str]:
    """Routers in the order to look at them.

    Far ends of sessions seen down, borders that handed on unresolvable next hops, the
    routers that should have sent a missing stub, those a route to an unreachable stub
    crosses first; then by how much of the ticket names their stub (borders first among
    equals).
    """
    ticket = text.split("## Incident ticket", 1)[-1].split("## Routing design", 1)[0]
    named: dict[str, int] = dict.fromkeys(design.routers, 0)
    for m in _CUT.finditer(ticket):
        for host in [m.group(1), *(h.strip() for h in m.group(3).split(","))]:
            router = design.stub_router.get(host)
            if router in named:
                named[router] += 1
    for m in re.finditer(r"Traffic (h\d+) -> (h\d+)", ticket):
        for host in m.groups():
            if (router := design.stub_router.get(host)) in named:
                named[router] += 1
    pointed = [p for r, out in looked.items() for p in _down_peers(r, out, design)]
    pointed += [p for out in looked.values() for p in _unresolved(out, design)]
    pointed += [p for r, out in looked.items() for p in _missing(r, out, design)]
    pointed += [p for r, out in looked.items() for p in _transit(r, out, design, ticket)]
    border = {r for r in design.routers if any(not n.ibgp for n in design.neighbors.get(r, []))}
    ranked = sorted(design.routers, key=lambda r: (-named[r], r not in border))
    return [r for r in dict.fromkeys([*pointed, *ranked]) if r in design.routers]


def bgp_visit(router: str, design: BgpDesign) -> str:
    """The command that visits ``router``: look, repair what differs, restart what is down."""
    return visit_command(
        design.asn[router],
        design.router_ids.get(router, ""),
        design.neighbors.get(router, []),
        design.networks.get(router, []),
    )


def _revisit(design: BgpDesign, visits: list[Any], last: dict[str, int]) -> str | None:
    """A router visited before the far end of one of its down sessions was repaired."""
    for entry in visits:
        fix = bgp_router_fix(entry.machine, entry.output, design)
        if fix is None:
            continue
        for address in _down(entry.machine, entry.output, design):
            peer = design.peers[entry.machine][address]
            if address in _touched(fix) and last.get(peer, entry.index) < entry.index:
                return peer
    return None


def next_bgp_action(text: str) -> Move | None:
    """The next ``(router, command)`` for a BGP observation.

    Far ends left behind by a repair first; then routers not yet visited, in the order the
    evidence points; then, if that was not enough, each again, the longest unvisited first.
    """
    design = read_bgp_design(text)
    visits = [e for e in _history(text) if e.command.endswith(VISIT_MARK)]
    seen = {e.machine: e.output for e in visits}
    last = {e.machine: e.index for e in visits}
    if (peer := _revisit(design, visits, last)) is not None:
        return peer, bgp_visit(peer, design)
    order = _order(text, design, seen)
    for router in order:
        if router not in seen:
            return router, bgp_visit(router, design)
    if not order:
        return None
    router = min(order, key=lambda r: last[r])
    return router, bgp_visit(router, design)
