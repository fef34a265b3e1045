"""The reference's reading of a packet filter: which rule or policy stops a flow that must pass.

The filter table of ``iptables-save`` output is simulated rule by rule, first match wins,
for every packet a machine must let through (``inventory.must_work``): the request and the
reply of each intended flow, on ICMP, TCP and UDP. A DROP or REJECT rule that stops one,
and a DROP policy that one falls through to, are what is broken; everything else stays,
however it looks (a DROP at the end of FORWARD for two subnets kept apart, an uncommented
REJECT on a host out of service). A match this reader does not know is taken to match, so
such a rule is kept only if it stops nothing that must pass.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from netarena.route.static.inventory import Packet

__all__ = ["Ruleset", "parse_filter", "filter_fixes"]

_STOPS = ("DROP", "REJECT")
_ENDS = ("ACCEPT", *_STOPS)


@dataclass
class Ruleset:
    """The filter table of one machine."""

    policies: dict[str, str] = field(default_factory=dict)
    """Base chain → its policy."""
    chains: dict[str, list[list[str]]] = field(default_factory=dict)
    """Chain → its rules, as ``iptables-save`` words (``-A CHAIN`` first)."""


def parse_filter(lines: list[str]) -> Ruleset:
    """The ``*filter`` table of ``iptables-save [-c]`` lines (other tables are skipped)."""
    found = Ruleset()
    table = ""
    for line in lines:
        if line.startswith("*"):
            table = line[1:].strip()
        elif table != "filter":
            continue
        elif line.startswith(":"):
            name, policy = line[1:].split()[:2]
            found.chains.setdefault(name, [])
            if policy != "-":
                found.policies[name] = policy
        else:
            text = line.partition("] ")[2] if line.startswith("[") else line  # counters
            if text.startswith("-A "):
                try:
                    words = shlex.split(text)
                except ValueError:
                    words = text.split()
                found.chains.setdefault(words[1], []).append(words)
    return found


def _option(words: list[str], key: str) -> tuple[str | None, bool]:
    if key not in words:
        return None, False
    at = words.index(key)
    return (words[at + 1] if at + 1 < len(words) else None), at > 0 and words[at - 1] == "!"


def _in(address: str, network: str) -> bool:
    try:
        return ipaddress.ip_address(address) in ipaddress.ip_network(network, strict=False)
    except ValueError:
        return True


def _iface(spec: str, name: str | None) -> bool:
    if name is None:
        return False
    return name.startswith(spec[:-1]) if spec.endswith("+") else name == spec


def _port_hit(spec: str, port: int | None) -> bool:
    if port is None:
        return False
    for part in spec.split(","):
        low, _, high = part.partition(":")
        if low.isdigit() and int(low) <= port <= int(high or low):
            return True
    return False


def matches(words: list[str], p: Packet) -> bool:
    """Whether a rule's matches all hold for ``p`` (unknown matches are taken to hold)."""
    checks = []
    tests: tuple[tuple[str, Callable[[str], bool]], ...] = (
        ("-s", lambda v: _in(p.src, v)),
        ("-d", lambda v: _in(p.dst, v)),
        ("-i", lambda v: _iface(v, p.in_intf)),
        ("-o", lambda v: _iface(v, p.out_intf)),
        ("-p", lambda v: v in (p.proto, "all")),
        ("--dport", lambda v: _port_hit(v, p.dport)),
        ("--dports", lambda v: _port_hit(v, p.dport)),
        ("--sport", lambda v: _port_hit(v, p.sport)),
        ("--sports", lambda v: _port_hit(v, p.sport)),
        ("--ctstate", lambda v: _state_hit(v, p)),
        ("--state", lambda v: _state_hit(v, p)),
        ("--icmp-type", lambda v: _icmp_hit(v, p)),
    )
    for key, test in tests:
        value, negated = _option(words, key)
        if value is not None:
            checks.append(test(value) != negated)
    return all(checks)


def _state_hit(spec: str, p: Packet) -> bool:
    states = set(spec.split(","))
    return bool(states & ({"ESTABLISHED", "RELATED"} if p.reply else {"NEW"}))


def _icmp_hit(spec: str, p: Packet) -> bool:
    if p.proto != "icmp":
        return False
    wanted = "echo-reply" if p.reply else "echo-request"
    return spec in (wanted, "0" if p.reply else "8", "any")


def _verdict(rules: Ruleset, chain: str, p: Packet, depth: int = 0
             ) -> tuple[str, tuple[str, int] | None]:
    """``(ACCEPT|DROP|REJECT|RETURN, (chain, index) of the deciding rule or None)``."""
    for index, words in enumerate(rules.chains.get(chain, [])):
        target, _ = _option(words, "-j")
        if target is None:
            target, _ = _option(words, "-g")
        if not target or not matches(words, p):
            continue
        if target in _ENDS:
            return target, (chain, index)
        if target == "RETURN":
            return "RETURN", None
        if target in rules.chains and depth < 8:
            verdict, where = _verdict(rules, target, p, depth + 1)
            if verdict != "RETURN":
                return verdict, where
    return "RETURN", None


def filter_fixes(lines: list[str], packets: list[Packet]) -> list[str]:
    """Commands removing what stops ``packets`` in the filter of ``lines`` (see above).

    A culprit rule is deleted and the packets are simulated again (a later rule may stop
    them too); a DROP policy they fall through to is set to ACCEPT.
    """
    rules = parse_filter(lines)
    fixes: list[str] = []
    for _ in range(64):
        culprit = None
        for p in packets:
            verdict, where = _verdict(rules, p.chain, p)
            if verdict in _STOPS and where is not None:
                culprit = where
                break
            if verdict == "RETURN" and rules.policies.get(p.chain, "ACCEPT") != "ACCEPT":
                fixes.append(f"iptables -P {p.chain} ACCEPT")
                rules.policies[p.chain] = "ACCEPT"
        if culprit is None:
            return fixes
        chain, index = culprit
        words = rules.chains[chain].pop(index)
        fixes.append("iptables -D " + " ".join(w if w == "!" else shlex.quote(w)
                                               for w in words[1:]))
    return fixes
