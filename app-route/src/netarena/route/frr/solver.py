"""The reference solver for OSPF queries: it diagnoses from the routers, not from a runbook.

The ticket names the adjacencies down, the hosts some cannot reach and the flows off
their primary path; the design names the links (their interfaces), the areas by region,
the standby links and how each stub is announced, never a setting's value. The solver
looks at the routers the ticket points to first (``DIAGNOSTIC``: the running
configuration and the interfaces' MTU), one per turn, and once it has seen both ends of a
link it compares them: both ends of a link agree on every OSPF setting, so where they
differ one end is wrong. Where behaviour tells which (an area against the region's; a
passive or missing end; for a cost, the end a named flow's primary path leaves by (it was
raised), or else the lower end (traffic came onto a backup link); the lower MTU, which
the link's frames no longer fit) it mends that end; where both ends' values are ones the
design uses (timers, network type, authentication) it makes one end agree with the other,
which the judge accepts at either end. A stub announced by redistribution on a router
whose ``router ospf`` lacks it gets it back. Stateless: everything comes from the
observation text, so it works the same served as a remote A2A agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from netarena.route.base.history import Move, read_history
from netarena.route.frr.prompts import wrong_end
from netarena.route.frr.vtysh import conf

__all__ = ["Design", "read_design", "link_fixes", "DIAGNOSTIC", "next_dynamic_action"]

DIAGNOSTIC = "vtysh -c 'show running-config'; ip -o link show; ip route show"
"""What the reference runs to look at a router (its routes show where traffic goes on)."""
LOOK_AFTER = " ; " + DIAGNOSTIC
"""Appended to a repair: the router is looked at again in the same turn (a turn saved)."""

_LINK = re.compile(r"^- (\S+) (\S+) (\S+) <-> (\S+) (\S+) (\S+) \((\S+)\)(.*)$")
_STUB = re.compile(r"^- (\S+) (\S+) on (\S+) behind (\S+) (\S+) (\S+), announced (.*)$")
_ROUTERS = re.compile(r"^Routers (.*?) run FRR")
_PRIMARY = re.compile(r"its primary path is (.*)\.$", re.MULTILINE)
_CORE = re.compile(r"the backbone \(area 0\) is the core routers (.*?) and the links")
_AREA = re.compile(r"^- area (\d+): (.*)$")
_MTU = re.compile(r"^\d+: ([^:@\s]+)(?:@\S+)?: .*? mtu (\d+)")
_TIMERS = ("ip ospf dead-interval", "ip ospf hello-interval")
_AUTH = ("ip ospf authentication", "ip ospf message-digest-key")


@dataclass
class Design:
    """What the runbook says: links by their interfaces, areas, stubs."""

    routers: list[str] = field(default_factory=list)
    links: list[tuple[str, str, str, str]] = field(default_factory=list)
    """Links that carry an adjacency: ``(a, a_intf, b, b_intf)``."""
    home: dict[str, int] = field(default_factory=dict)
    """Router → its area (absent: the backbone)."""
    redistribute: set[str] = field(default_factory=set)
    """Routers announcing their stub by ``redistribute connected``."""
    stub_router: dict[str, str] = field(default_factory=dict)
    """Host → the router its stub is behind."""
    primaries: list[list[str]] = field(default_factory=list)
    """The routers of each primary path the ticket names."""
    targets: list[str] = field(default_factory=list)
    """The host each primary path ends at, in the same order."""
    owner: dict[str, str] = field(default_factory=dict)
    """Link address → the router it belongs to."""
    stub_net: dict[str, str] = field(default_factory=dict)
    """Host → its stub's prefix."""
    asymmetric: set[tuple[str, str]] = field(default_factory=set)
    """Links ``(a, b)`` whose cost differs by direction."""

    def area_of(self, a: str, b: str) -> int:
        """The area of a link between ``a`` and ``b``: its region's, or the backbone."""
        return self.home.get(a) or self.home.get(b) or 0


def read_design(text: str) -> Design:
    """The design as the prompt states it, and the ticket's primary paths."""
    design = Design()
    for found in _PRIMARY.finditer(text.split("## Routing design", 1)[0]):
        design.primaries.append(re.findall(r"\br\d+\b", found.group(1)))
        design.targets.append(found.group(1).split()[-1])
    for line in text.split("## Task", 1)[0].splitlines():
        if m := _ROUTERS.match(line):
            design.routers = [r.strip() for r in m.group(1).split(",")]
        elif m := _AREA.match(line):
            for name in re.findall(r"(r\d+)(?: \([^)]*\))?", m.group(2)):
                design.home[name] = int(m.group(1))
        elif m := _LINK.match(line):
            design.owner |= {m.group(3): m.group(1), m.group(6): m.group(4)}
            if "standby" in m.group(8):
                continue
            design.links.append((m.group(1), m.group(2), m.group(4), m.group(5)))
            if "cost differs by direction" in m.group(8):
                design.asymmetric.add((m.group(1), m.group(4)))
        elif m := _STUB.match(line):
            design.stub_router[m.group(1)] = m.group(4)
            design.stub_net[m.group(1)] = m.group(3)
            if m.group(7).startswith("as an external route"):
                design.redistribute.add(m.group(4))
    return design


def _sections(config: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for raw in config.splitlines():
        if raw.startswith(("interface ", "router ")):
            current = raw.strip()
            out.setdefault(current, [])
        elif not raw.startswith(" "):
            current = None
        elif current is not None:
            out[current].append(raw.strip())
    return out


@dataclass
class End:
    """What one end of a link shows."""

    lines: list[str]
    mtu: int | None

    def get(self, prefix: str) -> list[str]:
        """The OSPF lines starting with ``prefix``."""
        return sorted(x for x in self.lines if x.startswith(prefix))

    @property
    def cost(self) -> int:
        """The OSPF cost (FRR's default 10 when unset)."""
        found = self.get("ip ospf cost ")
        return int(found[0].split()[-1]) if found else 10

    @property
    def network(self) -> str:
        """The network type (FRR's default for Ethernet: broadcast)."""
        found = self.get("ip ospf network ")
        return found[0].split()[-1] if found else "broadcast"


def _end(output: str, intf: str) -> End:
    mtu = next(
        (
            int(m.group(2))
            for ln in output.splitlines()
            if (m := _MTU.match(ln)) and m.group(1) == intf
        ),
        None,
    )
    return End(_sections(output).get(f"interface {intf}", []), mtu)


def _copy(prefixes: tuple[str, ...], source: End, target: End, *, clear_first: bool) -> list[str]:
    """Lines that make ``target`` hold what ``source`` holds for ``prefixes``.

    A line ``source`` holds overwrites ``target``'s of the same command, except where FRR
    wants the old one gone first (``clear_first``: a key id already in use); the rest of
    ``target``'s go after the new ones (removing the dead interval first would leave the
    interface at FRR's default timers meanwhile).
    """
    old = [x for p in prefixes for x in target.get(p)]
    new = [x for p in prefixes for x in source.get(p)]
    if sorted(old) == sorted(new):
        return []
    added = [x for x in new if x not in old]
    if clear_first:
        return [f"no {x}" for x in old if x not in new] + added
    kept = {" ".join(x.split()[:3]) for x in new}
    return added + [f"no {x}" for x in old if " ".join(x.split()[:3]) not in kept]


def link_fixes(
    design: Design, link: tuple[str, str, str, str], end_a: End, end_b: End
) -> dict[str, tuple[list[str], list[str]]]:
    """Router → (vtysh interface lines, kernel commands) that make a link's ends agree."""
    a, a_intf, b, b_intf = link
    fixes: dict[str, tuple[list[str], list[str]]] = {a: ([], []), b: ([], [])}
    area = design.area_of(a, b)
    for router, end in ((a, end_a), (b, end_b)):
        if (held := end.get("ip ospf area")) != [f"ip ospf area {area}"]:
            clear = ["no ip ospf area"] if held else []  # vtysh stops at a refused line
            fixes[router][0].extend([*clear, f"ip ospf area {area}"])
        if "ip ospf passive" in end.lines:
            fixes[router][0].append("no ip ospf passive")
    if end_a.cost != end_b.cost and (a, b) not in design.asymmetric:  # the named flows
        # tell which end moved them
        wrong = wrong_end((a, b), (end_a.cost, end_b.cost), design.primaries)
        fixes[wrong][0].append(f"ip ospf cost {(end_b if wrong == a else end_a).cost}")
    ignored = "ip ospf mtu-ignore" in end_a.lines or "ip ospf mtu-ignore" in end_b.lines
    if end_a.mtu and end_b.mtu and end_a.mtu != end_b.mtu and not ignored:  # frames no
        # longer fit
        router, intf, mtu = (
            (a, a_intf, end_b.mtu) if end_a.mtu < end_b.mtu else (b, b_intf, end_a.mtu)
        )
        fixes[router][1].append(f"ip link set dev {intf} mtu {mtu}")
    fixes[b][0].extend(_copy(_TIMERS, end_a, end_b, clear_first=False))
    if end_a.network != end_b.network:
        fixes[b][0].append(f"ip ospf network {end_a.network}")
    fixes[b][0].extend(_copy(_AUTH, end_a, end_b, clear_first=True))
    return {r: f for r, f in fixes.items() if f[0] or f[1]}


def _taken(design: Design, seen: dict[str, str]) -> list[str]:
    """Each named flow's first router, then those it crosses now, as far as seen routers show.

    A cost lowered off the primary path draws traffic through routers the ticket never
    names: the next hop of each seen router's route to the flow's stub says where.
    """
    out: list[str] = []
    for path, host in zip(design.primaries, design.targets, strict=True):
        router, net = path[0] if path else "", design.stub_net.get(host, "")
        out += [router] if router else []
        while router in seen and net:
            hop = re.search(rf"^{re.escape(net)} .*?via (\S+)", seen[router], re.MULTILINE)
            router = design.owner.get(hop.group(1), "") if hop else ""
            if not router or router in out:
                break
            out.append(router)
    return out


def _order(text: str, design: Design, seen: dict[str, str] | None = None) -> list[str]:
    """Where to look first.

    Routers the alarms name, then those behind a host no other reaches (a stub gone), then
    where the flows that left their primary path start, the routers they cross now, and
    the rest of their primary paths, then those behind the hosts most cannot reach (a
    partition the alarms may explain), then the rest the ticket names, the rest.
    """
    ticket = text.split("## Incident ticket", 1)[-1].split("## Routing design", 1)[0]
    alarms = [
        r for ln in ticket.splitlines() if "Alarm:" in ln for r in re.findall(r"\b(r\d+)\b", ln)
    ]
    named = re.findall(r"\b(r\d+)\b", ticket)
    cut = re.findall(r"(h\d+) \(\S+\) cannot be reached from (.*)\.$", ticket, re.MULTILINE)
    cut.sort(key=lambda found: -len(found[1].split(",")))  # stable: ties keep ticket order
    behind = [design.stub_router.get(h) for h, _ in cut]
    others = len(design.stub_router) - 1
    gone = [design.stub_router.get(h) for h, sources in cut if len(sources.split(",")) >= others]
    paths = [r for path in design.primaries for r in path]
    taken = _taken(design, seen or {})
    order = [*alarms, *gone, *taken, *paths, *behind, *named, *design.routers]
    return [r for r in dict.fromkeys(order) if r in design.routers]


def _command(intf_lines: dict[str, list[str]], extra: list[str], kernel: list[str]) -> str:
    vty: list[str] = []
    for intf, lines in sorted(intf_lines.items()):
        vty += [f"interface {intf}", *lines, "exit"]
    vty += extra
    parts = []
    if vty:
        parts.append(conf(vty))
    return " && ".join(parts + kernel) + LOOK_AFTER


def router_fixes(router: str, seen: dict[str, str], fresh: set[str], design: Design) -> str | None:
    """The one command that mends ``router``'s side of the links whose ends it has seen.

    Only links whose two ends were looked at since either last changed are compared.
    """
    intf_lines: dict[str, list[str]] = {}
    kernel: list[str] = []
    for link in design.links:
        a, a_intf, b, b_intf = link
        if router not in (a, b) or a not in fresh or b not in fresh:
            continue
        fixes = link_fixes(design, link, _end(seen[a], a_intf), _end(seen[b], b_intf))
        if router in fixes:
            lines, commands = fixes[router]
            if lines:
                intf_lines[a_intf if router == a else b_intf] = lines
            kernel += commands
    extra = []
    if router in design.redistribute and router in fresh:
        if "redistribute connected" not in _sections(seen[router]).get("router ospf", []):
            extra = ["router ospf", "redistribute connected", "exit"]
    if not intf_lines and not kernel and not extra:
        return None
    return _command(intf_lines, extra, kernel)


def next_dynamic_action(text: str) -> Move | None:
    """The next ``(router, command)`` for a dynamic-routing observation."""
    if "\nBGP sessions, " in text:
        from netarena.route.frr.bgp_solver import next_bgp_action

        return next_bgp_action(text)
    design = read_design(text)
    history = read_history(text)
    seen: dict[str, str] = {}
    fresh: set[str] = set()  # looked at since its last change
    for entry in history:
        if entry.command == DIAGNOSTIC or entry.command.endswith(LOOK_AFTER):
            seen[entry.machine] = entry.output
            fresh.add(entry.machine)
        else:
            fresh.discard(entry.machine)
    order = _order(text, design, seen)
    for router in order:
        if router in fresh and (fix := router_fixes(router, seen, fresh, design)):
            return router, fix
    for router in order:
        if router not in seen:
            return router, DIAGNOSTIC
    stale = [r for r in order if r not in fresh]
    if stale:
        return stale[0], DIAGNOSTIC
    return (design.routers[0], DIAGNOSTIC) if design.routers else None
