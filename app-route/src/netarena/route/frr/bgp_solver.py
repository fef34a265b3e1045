"""The reference solver for multi-AS BGP queries: it diagnoses from the routers and the intent.

The runbook gives the intent (who peers with whom at which addresses, how the ASes relate
and the policy that follows, what each router announces), never a configuration line;
the ticket gives the sessions down and the routers each complaint's traffic should cross.
The solver looks at the routers the ticket points to first (``BGP_DIAGNOSTIC``: the
sessions' states, the running configuration, the BGP table), one per turn, and checks
what it saw against the intent (``router_problems``):

* a session the intent wants whose neighbour is missing, at another address (renamed
  back, every line kept), with another remote AS, not activated, or shut by a prefix
  limit (raised above what the whole design announces, the session cleared);
* a loopback session whose two ends handle TTL differently (one end made to agree with
  the other, both ends seen);
* a stub the router should announce and does not; a border router without
  next-hop-self towards an iBGP peer;
* a policy that does not do what the relationship says: a route-map or an inbound
  prefix-list admitting less than the neighbour's cone (or, from a provider, than
  everything but the AS's own prefixes), or setting another local preference; an export
  list missing part of the AS's cone.

A repair runs with a look after it, so the next turn sees the router as it is now; a
session it brought back that its far end backs off from gets a ``clear`` there.
Stateless: everything comes from the observation text, so it works the same served as a
remote A2A agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from netarena.route.base.history import Move, read_history
from netarena.route.frr.bgp_reading import BGP_DIAGNOSTIC, Intent, Look, read_intent, read_look
from netarena.route.frr.bgp_ttl import TTL_COMMANDS, ttl_passes
from netarena.route.frr.vtysh import conf

__all__ = ["router_problems", "next_bgp_action", "BGP_DIAGNOSTIC", "LIMIT_LADDER"]

LIMIT_LADDER = (2, 3, 5, 10, 20, 50, 100)
"""Round ``maximum-prefix`` limits; a limit that tripped is raised to the first above what
the whole design announces."""


def _up(state: str) -> bool:
    return state.isdigit()


def _ttl_lines(lines: list[str]) -> list[str]:
    return [x for x in lines if x.startswith(TTL_COMMANDS)]


def _session_lines(
    router: str, look: Look, intent: Intent, looks: dict[str, Look]
) -> tuple[list[str], list[str], list[str]]:
    """``(router bgp lines, address-family lines, addresses to clear)`` for the sessions."""
    top: list[str] = []
    family: list[str] = []
    clear: list[str] = []
    want = intent.neighbors.get(router, {})
    strays = [a for a in look.neighbors if a not in want]
    for address, (peer, kind) in sorted(want.items()):
        lines = look.neighbors.get(address)
        if lines is None and strays:  # a mistyped address: every line moved back
            stray = strays.pop(0)
            moved = sorted(look.neighbors[stray], key=lambda x: not x.startswith("remote-as"))
            top.append(f"no neighbor {stray}")
            top += [f"neighbor {address} {x}" for x in moved if _is_top(x)]
            family += [f"neighbor {address} {x}" for x in moved if not _is_top(x)]
            clear.append(address)
            continue
        if lines is None:
            continue
        remote = str(intent.asn[peer])
        if f"remote-as {remote}" not in lines:
            top.append(f"neighbor {address} remote-as {remote}")
            clear.append(address)
        if "activate" not in lines:
            family.append(f"neighbor {address} activate")
            clear.append(address)
        if kind == "multihop" and peer in looks and router < peer:
            theirs = _ttl_lines(looks[peer].neighbors.get(_address_of(intent, peer, router), []))
            mine = _ttl_lines(lines)
            if theirs and not ttl_passes(mine, theirs):
                top += [f"no neighbor {address} {x}" for x in mine]
                top += [f"neighbor {address} {x}" for x in theirs]
                clear.append(address)
        if "(PfxCt)" in look.state.get(address, ""):
            limit = next(x for x in LIMIT_LADDER if x > len(intent.stub))
            family.append(f"neighbor {address} maximum-prefix {limit}")
            clear.append(address)
        if kind == "ibgp" and router in intent.borders and "next-hop-self" not in lines:
            family.append(f"neighbor {address} next-hop-self")
    return top, family, [a for a in dict.fromkeys(clear) if not _up(look.state.get(a, ""))]


def _is_top(line: str) -> bool:
    """Whether a neighbour line belongs to ``router bgp`` itself, not to its address family."""
    return line.split()[0] not in (
        "activate", "next-hop-self", "prefix-list", "route-map", "maximum-prefix"
    )


def _address_of(intent: Intent, router: str, peer: str) -> str:
    """The address ``router``'s neighbour statement for ``peer`` names."""
    return next(a for a, (p, _) in intent.neighbors.get(router, {}).items() if p == peer)


def _free_seq(entries: list[tuple[int, str, str]]) -> int:
    used = {seq for seq, _, _ in entries}
    return next(s for s in range(5, 10_000, 5) if s not in used)


def _policy_lines(router: str, look: Look, intent: Intent) -> list[str]:
    """Configuration lines that make ``router``'s policies do what the relationships say."""
    mine = intent.asn[router]
    out: list[str] = []
    lists = {name: list(entries) for name, entries in look.prefix_lists.items()}
    for address, (peer, kind) in sorted(intent.neighbors.get(router, {}).items()):
        if kind == "ibgp" or address not in look.neighbors:
            continue
        rel = intent.relation.get((mine, intent.asn[peer]))
        if rel is None:
            continue
        name = look.bound(address, "route-map", "in")
        wanted: dict[str | None, set[str]] = {}  # prefix-list → what it must permit
        if rel != "provider":
            wanted[look.bound(address, "prefix-list", "in")] = intent.cone(intent.asn[peer])
        if rel != "customer":
            wanted[look.bound(address, "prefix-list", "out")] = intent.cone(mine)
        for seq, action, match, pref in look.route_maps.get(name or "", []):
            if action != "permit":
                continue
            if match is not None and rel != "provider":
                wanted[match] = intent.cone(intent.asn[peer])
            if pref is not None and pref != intent.pref.get(rel, pref):
                out += [f"route-map {name} permit {seq}",
                        f"set local-preference {intent.pref[rel]}", "exit"]
        for listed, prefixes in wanted.items():
            if listed is None:
                continue
            have = {p for _, a, p in lists.get(listed, []) if a == "permit"}
            for prefix in sorted(prefixes - have):
                seq_free = _free_seq(lists.setdefault(listed, []))
                lists[listed].append((seq_free, "permit", prefix))
                out.append(f"ip prefix-list {listed} seq {seq_free} permit {prefix}")
    return out


def router_problems(
    router: str, look: Look, intent: Intent, looks: dict[str, Look]
) -> str | None:
    """The one command that mends what ``router``'s look shows, and looks again.

    None: nothing is wrong there.
    """
    top, family, clear = _session_lines(router, look, intent, looks)
    mine = intent.stub.get(router)
    if mine and mine not in look.networks:
        family.append(f"network {mine}")
    policy = _policy_lines(router, look, intent)
    if not (top or family or policy or clear):
        return None
    vty = list(policy)
    if top or family:
        vty += [f"router bgp {look.asn or intent.asn[router]}", *top]
        if family:
            vty += ["address-family ipv4 unicast", *family, "exit-address-family"]
    parts = []
    if vty:
        parts.append(conf(vty))
    parts += [f"vtysh -c 'clear bgp {a}'" for a in clear]
    if policy:  # an inbound list's edit applies to routes received once they are re-read
        parts.append("vtysh -c 'clear bgp * soft in'")
    return " ; ".join([*parts, BGP_DIAGNOSTIC])


def _order(intent: Intent, looks: dict[str, Look]) -> list[str]:
    """Routers in the order the evidence points to them.

    The far ends of sessions a look showed down and the border routers whose routes a
    look could not resolve; then the ends of sessions the ticket says are down, the
    routers on the complaints' designed paths (first those of paths no session down
    explains, then the rest; those most paths cross first, then from the destination
    back, the way a route spreads), and the rest.
    """
    pointed: list[str] = []
    for router, look in looks.items():
        for address, (peer, _) in intent.neighbors.get(router, {}).items():
            if not _up(look.state.get(address, "")):
                pointed.append(peer)
        for hop in look.unresolved:  # handed on by the border whose eBGP peer that is
            pointed += [
                border
                for border, peers in intent.neighbors.items()
                if intent.asn.get(border) == look.asn and hop in peers
            ]
    named = [r for pair in intent.down for r in pair]
    down = {frozenset(pair) for pair in intent.down}
    unexplained = [  # a complaint whose path crosses no session down: another cause
        r
        for path in intent.paths
        if not any(frozenset(hop) in down for hop in zip(path, path[1:], strict=False))
        for r in reversed(path)
    ]
    crossed = [r for path in intent.paths for r in reversed(path)]  # as routes spread
    for found in (unexplained, crossed):  # those most paths cross first
        named += sorted(dict.fromkeys(found), key=found.count, reverse=True)
    return [r for r in dict.fromkeys([*pointed, *named, *intent.routers]) if r in intent.routers]


def next_bgp_action(text: str) -> Move | None:
    """The next ``(router, command)`` for a BGP observation.

    A repair where the latest look shows one; else a far end left backing off by a
    session brought back; else routers not yet looked at, in the order the ticket points;
    then each again, the longest unseen first.
    """
    intent = read_intent(text)
    history = read_history(text)
    looks: dict[str, Look] = {}
    when: dict[str, int] = {}
    for entry in history:
        if entry.command.endswith(BGP_DIAGNOSTIC):
            looks[entry.machine] = read_look(entry.output)
            when[entry.machine] = entry.index
    order = _order(intent, looks)
    for router in order:
        if router in looks and (fix := router_problems(router, looks[router], intent, looks)):
            if not _repeated(history, router, fix):
                return router, fix
    for router in order:
        if router not in looks:
            return router, BGP_DIAGNOSTIC
    if not order:
        return None
    router = min(order, key=lambda r: when.get(r, -1))
    return router, _far_end_clear(router, looks, intent) + BGP_DIAGNOSTIC


def _repeated(history: Sequence[Any], router: str, fix: str) -> bool:
    """Whether ``fix`` is what the latest command on ``router`` already ran.

    It did not take: look elsewhere rather than loop.
    """
    mine = [e for e in history if e.machine == router]
    return bool(mine) and mine[-1].command == fix


def _far_end_clear(router: str, looks: dict[str, Look], intent: Intent) -> str:
    """Clears of ``router``'s sessions still down (their far end was mended meanwhile)."""
    look = looks.get(router)
    if look is None:
        return ""
    down = [a for a in intent.neighbors.get(router, {}) if not _up(look.state.get(a, ""))]
    return "".join(f"vtysh -c 'clear bgp {a}' ; " for a in down)
