"""The audit's reader for OSPF and BGP networks (``netarena audit route --labels dynamic``).

The network is built and the faults injected as for an episode (no convergence is
needed: configuration is what is read). Then every router's ``show running-config`` is
read, the text an agent gets from ``vtysh``, and its ``ip -o link`` MTUs. Each
configuration line is an object, of a kind named for its section's class and command
(``interface:transit:ip ospf cost``, ``router-bgp:neighbor maximum-prefix``: an agent
compares a transit interface's lines with other transit interfaces', not with a stub's
or the loopback's), with the fields an agent sees, abstracted to generalise across
instances: the section's class (a transit link, a stub, the loopback; the BGP section or
its address family), the line's position in its section (index and share), its numbers
as numbers, its addresses by class (loopback, link, stub, any, other), names and keys by
their shape, and the words of the line with those replaced. Each interface section is an
object too (how many OSPF lines, in OSPF or not, passive or not), and each interface MTU
(their kinds by section class too). An object is a fault when the injection added or
changed it (the healthy configuration was read before).

A BGP network's kinds other than its BGP section's are named apart (``bgp:interface:transit``):
its interfaces and MTUs carry no fault, and pooled with an OSPF network's they were easy
design objects no agent in front of one network meets (``netarena audit route --labels
dynamic -n 400 --seed 43``: ``interface:transit`` 0.723, within networks 0.550).
"""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING

from netarena.common.core.evidence import AuditObject, FieldValue
from netarena.common.core.types import Query
from netarena.route.frr.plan import OspfPlan

if TYPE_CHECKING:
    from netarena.common.core.app import App
    from netarena.route.frr.network import FrrNetwork

__all__ = ["audit_objects", "config_lines", "line_object"]

_SKIP = ("Building configuration", "Current configuration", "frr version", "end", "!")
_NUMBER = re.compile(r"^-?\d+$")
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*[-_][A-Za-z0-9_-]*$|^[A-Z][A-Z0-9]+$")
_KEY = re.compile(r"^[A-Za-z0-9]{10}$")

Line = tuple[str, str, int, int]
"""``(section header, line, index in section, lines in section)``."""


def config_lines(text: str) -> list[Line]:
    """The lines of a running configuration with their section and position."""
    out: list[tuple[str, str]] = []
    section = "global"
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.strip().startswith(_SKIP) or line.strip() == "exit":
            if line.strip() == "exit" and not raw.startswith(" "):
                section = "global"
            continue
        if not line.startswith(" "):
            if line.startswith(("interface ", "router ", "route-map ")):
                section = line
                continue
            section = "global"
        out.append((section, line.strip()))
    sizes: dict[str, int] = {}
    for section, _ in out:
        sizes[section] = sizes.get(section, 0) + 1
    seen: dict[str, int] = {}
    lines = []
    for section, line in out:
        seen[section] = seen.get(section, 0) + 1
        lines.append((section, line, seen[section] - 1, sizes[section]))
    return lines


def _classes(plan: OspfPlan) -> dict[str, str]:
    """Address or prefix → its class."""
    found = {f"{lo}": "loopback" for lo in plan.loopbacks.values()}
    found |= {f"{lo}/32": "loopback" for lo in plan.loopbacks.values()}
    for x in plan.links:
        found |= {x.a_ip: "link", x.b_ip: "link", x.network: "link-net"}
    for s in plan.stubs:
        found |= {s.network: "stub-net", s.gateway: "stub", s.host_ip: "stub"}
    return found | {"0.0.0.0/0": "any"}


def _token(word: str, classes: dict[str, str]) -> tuple[str, float | None]:
    if _NUMBER.match(word):
        return "N", float(word)
    if re.fullmatch(r"[rh]\d+", word):
        return "ROUTER" if word[0] == "r" else "HOST", None
    if word in classes:
        return classes[word], None
    try:
        ipaddress.ip_network(word, strict=False)
        return "addr-other", None
    except ValueError:
        pass
    if _KEY.match(word) and not word.isalpha():
        return "KEY", None
    if _NAME.match(word) and not word.islower():
        return "NAME", None
    return word, None


def _section_class(section: str, plan: OspfPlan) -> str:
    words = section.split()
    if words[0] == "interface":
        if words[1] == "lo":
            return "interface:lo"
        stub = any(s.router_intf == words[1] for s in plan.stubs)
        return "interface:stub" if stub else "interface:transit"
    if words[0] == "route-map":
        return "route-map"
    return words[0] if words[0] != "router" else f"router-{words[1]}"


def line_object(line: Line, plan: OspfPlan, fault: bool) -> AuditObject:
    """One configuration line as an audited object."""
    section, text, index, size = line
    classes = _classes(plan)
    words: list[str] = []
    numbers = []
    for word in text.split():
        shape, number = _token(word, classes)
        if words[-1:] == ["md5"]:  # a key, whatever its letters
            shape = "KEY"
        words.append(shape)
        if number is not None:
            numbers.append(number)
    command = " ".join(w for w in words[:4] if w.islower() and w not in ("N",))
    command = " ".join(command.split()[:3])
    fields: dict[str, FieldValue] = {
        "section": _section_class(section, plan),
        "shape": " ".join(words),
        "index": index,
        "share": index / max(size, 1),
        "section_lines": size,
        "numbers": len(numbers),
    }
    for i, number in enumerate(numbers[:3]):
        fields[f"n{i}"] = number
    if numbers:
        fields["last"] = numbers[-1]
    kind = f"{fields['section']}:{command}"
    return AuditObject(kind=kind, fields=fields, fault=fault)


def _interface_objects(lines: list[Line], plan: OspfPlan, changed: set[str]) -> list[AuditObject]:
    by: dict[str, list[str]] = {}
    for section, text, _, _ in lines:
        if section.startswith("interface "):
            by.setdefault(section, []).append(text)
    out = []
    for section, texts in sorted(by.items()):
        ospf = [t for t in texts if t.startswith("ip ospf")]
        fields: dict[str, FieldValue] = {
            "section": _section_class(section, plan),
            "lines": len(texts),
            "ospf_lines": len(ospf),
            "in_ospf": any(t.startswith("ip ospf area") for t in texts),
            "passive": "ip ospf passive" in texts,
            "auth": any(t.startswith("ip ospf authentication") for t in texts),
        }
        out.append(
            AuditObject(kind=str(fields["section"]), fields=fields, fault=section in changed)
        )
    return out


def _mtus(net: FrrNetwork, router: str) -> dict[str, int]:
    out = {}
    for line in net.exec(router, ["ip", "-o", "link", "show"]).output.splitlines():
        if m := re.match(r"^\d+: ([^:@\s]+)(?:@\S+)?: .*? mtu (\d+)", line):
            out[m.group(1)] = int(m.group(2))
    return out


def _read(net: FrrNetwork, plan: OspfPlan) -> dict[str, tuple[list[Line], dict[str, int]]]:
    return {
        r: (config_lines(net.vtysh(r, "show running-config")), _mtus(net, r))
        for r in plan.routers
    }


def audit_objects(app: App, query: Query) -> list[AuditObject]:
    """Every object an agent can read in ``query``'s faulted network, labelled by the truth.

    Raises:
        EmulatorError: The network could not be built or read.
    """
    from netarena.route.frr.bgp_plan import BgpPlan
    from netarena.route.frr.episode import dynamic_plan, inject_faults
    from netarena.route.frr.network import FrrNetwork

    plan = dynamic_plan(query.truth)
    net = FrrNetwork(plan)
    try:
        healthy = _read(net, plan)
        inject_faults(net, plan, query.truth["faults"], bounce=False)
        faulted = _read(net, plan)
    finally:
        net.close()
    objects: list[AuditObject] = []
    for router in plan.routers:
        (before, mtu_before), (after, mtu_after) = healthy[router], faulted[router]
        was = {(s, t) for s, t, _, _ in before}
        sections_before: dict[str, set[str]] = {}
        for s, t, _, _ in before:
            sections_before.setdefault(s, set()).add(t)
        sections_after: dict[str, set[str]] = {}
        for s, t, _, _ in after:
            sections_after.setdefault(s, set()).add(t)
        changed = {s for s in sections_after if sections_after[s] != sections_before.get(s)}
        for line in after:
            objects.append(line_object(line, plan, (line[0], line[1]) not in was))
        objects += _interface_objects(after, plan, changed)
        stubs = {s.router_intf for s in plan.stubs}
        for intf, mtu in sorted(mtu_after.items()):
            if intf == "lo":
                continue
            fields: dict[str, FieldValue] = {
                "mtu": mtu,
                "section": "stub" if intf in stubs else "transit",
            }
            fault = mtu != mtu_before.get(intf)
            objects.append(
                AuditObject(kind=f"link-mtu:{fields['section']}", fields=fields, fault=fault)
            )
    if isinstance(plan, BgpPlan):
        objects = [o if o.kind.startswith("router-bgp") else o.model_copy(
            update={"kind": f"bgp:{o.kind}"}) for o in objects]
    return objects
