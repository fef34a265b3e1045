"""The reference solver for dynamic-routing queries: show commands, then vtysh repairs.

It reads the design from the prompt (links, costs, keys, timers, stubs), looks at one
router per turn (``show running-config`` and the interfaces' MTU), and sends, as one
command, every repair that turns what it saw back into the design: the area, passive
flag, cost, timers, network type and key of each transit interface, the MTU, the stub's
redistribution. It looks first at the routers the ticket names, then at the rest, and
never touches a line the design does not describe. Stateless: everything comes from the
observation text, so it works the same served as a remote A2A agent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from netarena.route.history import Move, _history

__all__ = ["Design", "read_design", "router_fixes", "DIAGNOSTIC", "next_dynamic_action"]

DIAGNOSTIC = "vtysh -c 'show running-config'; ip -o link show"
"""What the reference runs to look at a router."""

_LINK = re.compile(r"^- (\S+) (\S+) (\S+) <-> (\S+) (\S+) (\S+) \((\S+)\): cost (\d+), key (\S+)$")
_STUB = re.compile(r"^- (\S+) (\S+) on (\S+) behind (\S+) (\S+) (\S+), announced by (.*)$")
_TIMERS = re.compile(r"dead interval minimal \((\d+) s\) with hello multiplier (\d+)")
_ROUTERS = re.compile(r"^Routers (.*?) run FRR")
_MTU = re.compile(r"^\d+: ([^:@\s]+)(?:@\S+)?: .*? mtu (\d+)")


@dataclass
class Design:
    """What the runbook says, per router."""

    routers: list[str] = field(default_factory=list)
    transit: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)
    """Router → interface → ``(cost, key)``."""
    redistribute: set[str] = field(default_factory=set)
    """Routers announcing their stub by ``redistribute connected``."""
    hello_multiplier: int = 4
    """Fast hellos: this many per (minimal, one-second) dead interval."""
    router_ids: dict[str, str] = field(default_factory=dict)
    """Router → its router id (and loopback)."""
    stubs: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Router → its stub interface, and whether it is a passive OSPF interface."""

    @property
    def timers(self) -> str:
        """The interface line that sets the design's timers."""
        return f"ip ospf dead-interval minimal hello-multiplier {self.hello_multiplier}"


def read_design(text: str) -> Design:
    """The design as the prompt states it."""
    design = Design()
    for line in text.splitlines():
        if m := _ROUTERS.match(line):
            design.routers = [r.strip() for r in m.group(1).split(",")]
        if m := _TIMERS.search(line):
            design.hello_multiplier = int(m.group(2))
        if m := _LINK.match(line):
            cost, key = int(m.group(8)), m.group(9)
            design.transit.setdefault(m.group(1), {})[m.group(2)] = (cost, key)
            design.transit.setdefault(m.group(4), {})[m.group(5)] = (cost, key)
        elif m := _STUB.match(line):
            passive = not m.group(7).startswith("redistribute")
            design.stubs[m.group(4)] = (m.group(5), passive)
            if not passive:
                design.redistribute.add(m.group(4))
        elif line.startswith("- ") and design.routers and not design.router_ids:
            pairs = [part.split() for part in line[2:].split(", ")]
            if all(len(p) == 2 and p[0] in design.routers for p in pairs):
                design.router_ids = dict((p[0], p[1]) for p in pairs)
    return design


def _sections(config: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    current = None
    for raw in config.splitlines():
        if raw.startswith(("interface ", "router ")):
            current = raw.strip()
            out.setdefault(current, [])
        elif raw.strip() in ("exit", "!") or not raw.startswith(" "):
            current = None if not raw.startswith(" ") else current
        elif current is not None:
            out[current].append(raw.strip())
    return out


def _interface_fixes(lines: list[str], cost: int, key: str, design: Design) -> list[str]:
    fixes: list[str] = []
    areas = [ln.split()[-1] for ln in lines if ln.startswith("ip ospf area")]
    if not areas:
        fixes.append("ip ospf area 0")
    elif areas[0] not in ("0", "0.0.0.0"):
        fixes += ["no ip ospf area", "ip ospf area 0"]
    if "ip ospf passive" in lines:
        fixes.append("no ip ospf passive")
    if f"ip ospf cost {cost}" not in lines:
        fixes.append(f"ip ospf cost {cost}")
    if design.timers not in lines:
        fixes.append(design.timers)
    if any(ln.startswith("ip ospf hello-interval") for ln in lines):
        # After the timers: ospfd reschedules the next hello at the default 10 s when the
        # hello interval goes first, and fast hellos do not reschedule it.
        fixes.append("no ip ospf hello-interval")
    if "ip ospf network point-to-point" not in lines:
        fixes.append("ip ospf network point-to-point")
    if f"ip ospf message-digest-key 1 md5 {key}" not in lines:
        fixes += ["no ip ospf message-digest-key 1", f"ip ospf message-digest-key 1 md5 {key}"]
    return fixes


def router_fixes(router: str, output: str, design: Design) -> str | None:
    """The one command that repairs what ``router``'s diagnostic showed, if anything."""
    sections = _sections(output)
    vty: list[str] = []
    for intf, (cost, key) in sorted(design.transit.get(router, {}).items()):
        fixes = _interface_fixes(sections.get(f"interface {intf}", []), cost, key, design)
        if fixes:
            vty += [f"interface {intf}", *fixes, "exit"]
    if router in design.redistribute and "redistribute connected" not in sections.get(
        "router ospf", []
    ):
        vty += ["router ospf", "redistribute connected", "exit"]
    kernel = []
    for line in output.splitlines():
        if (
            (m := _MTU.match(line))
            and m.group(1) in design.transit.get(router, {})
            and m.group(2) != "1500"
        ):
            kernel.append(f"ip link set dev {m.group(1)} mtu 1500")
    if not vty and not kernel:
        return None
    parts = []
    if vty:
        parts.append("vtysh -c 'conf t' " + " ".join(f"-c {shlex.quote(x)}" for x in vty))
    return " && ".join(parts + kernel)


def _order(text: str, design: Design) -> list[str]:
    """Routers the ticket names first, then the rest in order."""
    ticket = text.split("## Incident ticket", 1)[-1].split("## Routing design", 1)[0]
    named = [r for r in design.routers if re.search(rf"\b{r}\b", ticket)]
    behind = {m.group(1) for m in re.finditer(r"(h\d+) \(\S+\) cannot be reached", ticket)}
    stubs = {m.group(1): m.group(4) for line in text.splitlines() if (m := _STUB.match(line))}
    first = [stubs[h] for h in sorted(behind) if h in stubs]
    return list(dict.fromkeys([*first, *named, *design.routers]))


def next_dynamic_action(text: str) -> Move | None:
    """The next ``(router, command)`` for a dynamic-routing observation."""
    if "\nBGP sessions (" in text:
        from netarena.route.frr.bgp_solver import next_bgp_action

        return next_bgp_action(text)
    design = read_design(text)
    history = _history(text)
    revisit = []
    for router in _order(text, design):
        mine = [e for e in history if e.machine == router]
        looks = [e for e in mine if e.command == DIAGNOSTIC]
        if not looks:
            return router, DIAGNOSTIC
        last = looks[-1]
        changed = any(e.index > last.index for e in mine)
        fix = router_fixes(router, last.output, design)
        if fix and not changed:
            return router, fix
        if changed:
            revisit.append(router)
    for router in revisit:
        return router, DIAGNOSTIC
    return (design.routers[0], DIAGNOSTIC) if design.routers else None
