"""The reference solver for multi-AS BGP queries: show commands, then vtysh repairs.

It reads the design from the prompt (ASes, router ids, every session with its addresses
and kind, the border routers, the stubs), and from it each router's ``router bgp``
section the way FRR prints it (``bgp_plan.bgp_lines``, the same words the runbook turns
into). Each turn it looks at one router (``show bgp summary``, ``show running-config
bgpd``, ``show ip bgp``) or repairs one: every neighbour the design does not name is removed,
every missing neighbour or neighbour line is added, every extra line on a designed
neighbour (a filter, a prefix limit, a TTL check) is removed, a wrong remote AS is set
again, a missing ``network`` statement is put back; sessions still down after a repair
are cleared (a prefix limit's shutdown stays until then, and FRR waits longer after each
failed attempt), here and at the far end. It never
touches lines the design does not describe (global prefix lists, route-maps, static
routes stay). Routers come in the order the evidence points: the far ends of sessions a
looked-at router shows down, the borders whose routes it cannot resolve, those that
should have sent it a stub it lacks; then by how often the ticket names their stub,
border routers first among equals. Stateless: everything comes from the observation.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from netarena.route.frr.bgp_plan import Neighbor, bgp_lines
from netarena.route.history import Move, _history

__all__ = ["BgpDesign", "read_bgp_design", "bgp_router_fix", "BGP_DIAGNOSTIC", "next_bgp_action"]

BGP_DIAGNOSTIC = "vtysh -c 'show bgp summary' -c 'show running-config bgpd' -c 'show ip bgp'"
"""What the reference runs to look at a router (the history keeps 3000 characters of it:
the summary and bgpd's configuration fit, the table may be cut)."""

_ROUTERS = re.compile(r"^Routers (.*?) run FRR \(.*bgpd\)")
_AS = re.compile(r"^- AS (\d+): (.*)$")
_SESSION = re.compile(
    r"^- (\S+) (\S+) \(AS (\d+)\) <-> (\S+) (\S+) \(AS (\d+)\): (iBGP|eBGP over|eBGP between)"
)
_STUB = re.compile(r"^- (\S+) (\S+) on (\S+) behind (\S+) (\S+) (\S+)$")
_BORDERS = re.compile(r"^Border routers set themselves as next hop towards their iBGP peers: (.*)$")
_PATH = re.compile(r"^([ *>=sdhirSR]{0,3})\s*\d+\.\d+\.\d+\.\d+/\d+\s+(\d+\.\d+\.\d+\.\d+)\s")
"""A ``show ip bgp`` row: its status codes and its next hop."""
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


def _order(text: str, design: BgpDesign, looked: dict[str, str]) -> list[str]:
    """Routers in the order to look at them.

    Far ends of sessions seen down, borders that handed on unresolvable next hops, the
    routers that should have sent a missing stub first; then by how much of the ticket
    names their stub (borders first among equals).
    """
    ticket = text.split("## Incident ticket", 1)[-1].split("## Routing design", 1)[0]
    named: dict[str, int] = dict.fromkeys(design.routers, 0)
    for m in re.finditer(r"(h\d+) \(\S+\) cannot be reached from (.*)\.", ticket):
        for host in [m.group(1), *(h.strip() for h in m.group(2).split(","))]:
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
    border = {r for r in design.routers if any(not n.ibgp for n in design.neighbors.get(r, []))}
    ranked = sorted(design.routers, key=lambda r: (-named[r], r not in border))
    return [r for r in dict.fromkeys([*pointed, *ranked]) if r in design.routers]


def _far_end_clear(design: BgpDesign, history: list[Any]) -> Move | None:
    """A clear at the far end of a session repaired while down, if it has not had one.

    The repaired end clears its side; the far end still waits out a back-off that grows
    after each failed attempt (up to two minutes), so it is cleared too, and looked at in
    the same command.
    """
    for entry in history:
        if "conf t" not in entry.command:
            continue
        looks = [e for e in history[: entry.index] if e.machine == entry.machine]
        looks = [e for e in looks if _is_look(e.command)]
        if not looks:
            continue
        touched = _touched(entry.command.split("&&")[0])
        for address in _down(entry.machine, looks[-1].output, design):
            if address not in touched:
                continue
            peer = design.peers[entry.machine][address]
            mine = [a for a, r in design.peers.get(peer, {}).items() if r == entry.machine]
            later = [e.command for e in history[entry.index + 1 :] if e.machine == peer]
            if mine and not any(f"clear bgp {mine[0]}" in c for c in later):
                return peer, f"{_clear(mine)}; {BGP_DIAGNOSTIC}"
    return None


def _is_look(command: str) -> bool:
    """Whether ``command`` shows the router as the diagnostic does (last)."""
    return command == BGP_DIAGNOSTIC or command.endswith(f"; {BGP_DIAGNOSTIC}")


def next_bgp_action(text: str) -> Move | None:
    """The next ``(router, command)`` for a BGP observation.

    Repairs come before new looks; after a repair, the far ends of its sessions that were
    down are cleared; then routers are looked at in the order the evidence points.
    """
    design = read_bgp_design(text)
    history = _history(text)
    looked: dict[str, str] = {}
    for entry in history:
        if _is_look(entry.command):
            looked[entry.machine] = entry.output
    order = _order(text, design, looked)
    fresh: dict[str, bool] = {}  # router → nothing ran on it since its last look
    for router in looked:
        mine = [e for e in history if e.machine == router]
        last = max(e.index for e in mine if _is_look(e.command))
        fresh[router] = not any(e.index > last for e in mine)
    for router in order:
        if fresh.get(router) and (fix := bgp_router_fix(router, looked[router], design)):
            return router, fix
    if (clear := _far_end_clear(design, history)) is not None:
        return clear
    for router in order:
        if router not in looked:
            return router, BGP_DIAGNOSTIC
    for router in order:
        if not fresh.get(router):
            return router, BGP_DIAGNOSTIC
    return (design.routers[0], BGP_DIAGNOSTIC) if design.routers else None
