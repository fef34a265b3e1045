"""Dynamic-routing calibration baselines on BGP queries: scripted agents that must not score.

Each answers from the observation text alone, deterministically, as the reference does
(``bgp_solver.py``), and gets one thing wrong the way real agents do (``baselines.py``
lists the rungs).
"""

from __future__ import annotations

import re

from netarena.route.base.history import Move, each_once, read_history
from netarena.route.frr.bgp_reading import BGP_DIAGNOSTIC, Intent, read_intent, read_look
from netarena.route.frr.bgp_ttl import TTL_COMMANDS
from netarena.route.frr.vtysh import CONF, conf

__all__ = [
    "bgp_read_only",
    "bgp_clear_everything",
    "bgp_rewrite_from_ticket",
    "bgp_session_reset_only",
    "bgp_default_everything",
    "bgp_majority_normaliser",
    "alarmed",
    "majority",
]

CLEAR_BGP = "vtysh -c 'clear bgp *'"


def majority(values: list[str]) -> str | None:
    """The value most of ``values`` hold (the first in order among equals)."""
    return max(sorted(set(values)), key=values.count) if values else None


def alarmed(text: str) -> list[str]:
    """Routers the ticket names (alarms, complaints' paths), in order."""
    ticket = text.split("## Incident ticket", 1)[-1].split("## Routing design", 1)[0]
    return list(dict.fromkeys(re.findall(r"\b(r\d+)\b", ticket)))


def _each_router_once(text: str, command: str) -> Move | None:
    return each_once(text, command, read_intent(text).routers)


def bgp_read_only(text: str) -> Move | None:
    """Look at every router's BGP state once, then give up."""
    return _each_router_once(text, BGP_DIAGNOSTIC)


def bgp_clear_everything(text: str) -> Move | None:
    """Reset every BGP session of every router once, then give up."""
    return _each_router_once(text, CLEAR_BGP)


def _bgp_rewrite(router: str, intent: Intent) -> str:
    """``router``'s ``router bgp`` section rebuilt from what the ticket states."""
    asn = intent.asn[router]
    top, family = [f"no router bgp {asn}", f"router bgp {asn}", "no bgp default ipv4-unicast"], []
    for address, (peer, kind) in sorted(intent.neighbors.get(router, {}).items()):
        top.append(f"neighbor {address} remote-as {intent.asn[peer]}")
        if kind != "ebgp":
            top.append(f"neighbor {address} update-source lo")
        if kind == "multihop":
            top.append(f"neighbor {address} ebgp-multihop 2")
        family.append(f"neighbor {address} activate")
        if kind == "ibgp" and router in intent.borders:
            family.append(f"neighbor {address} next-hop-self")
    if router in intent.stub:
        family.append(f"network {intent.stub[router]}")
    lines = [*top, "address-family ipv4 unicast", *family, "exit-address-family"]
    return conf(lines)


def bgp_rewrite_from_ticket(text: str) -> Move | None:
    """Rebuild every router's BGP section from the runbook once, never looking, then give up."""
    design = read_intent(text)
    done = {
        e.machine
        for e in read_history(text)
        if re.match(re.escape(CONF) + r" -c 'no router bgp", e.command)
    }
    for router in design.routers:
        if router not in done:
            return router, _bgp_rewrite(router, design)
    return None


def bgp_session_reset_only(text: str) -> Move | None:
    """Reset the sessions of every router the ticket names once, then give up.

    A hard reset of those down, a soft one of the rest; no configuration is touched.
    """
    intent = read_intent(text)
    done = {e.machine for e in read_history(text) if e.command.startswith("vtysh -c 'clear bgp")}
    down = {r for pair in intent.down for r in pair}
    for router in alarmed(text) or intent.routers:
        if router in done or router not in intent.neighbors:
            continue
        peers = intent.neighbors[router]
        hard = [a for a, (p, _) in peers.items() if {router, p} <= down]
        command = " ; ".join(
            [f"vtysh -c 'clear bgp {a}'" for a in hard] + ["vtysh -c 'clear bgp * soft'"]
        )
        return router, command
    return None


def bgp_default_everything(text: str) -> Move | None:
    """Never looks: puts every neighbour back to what the ticket states, router by router.

    FRR's defaults for the rest: no prefix limit, loopback sessions by multihop.
    """
    intent = read_intent(text)
    done = {e.machine for e in read_history(text) if "no neighbor" in e.command}
    for router in intent.routers:
        if router in done or router not in intent.neighbors:
            continue
        top, family = [f"router bgp {intent.asn[router]}"], []
        for address, (peer, kind) in sorted(intent.neighbors[router].items()):
            top.append(f"neighbor {address} remote-as {intent.asn[peer]}")
            if kind == "multihop":
                top += [f"no neighbor {address} ttl-security hops 1",
                        f"no neighbor {address} ttl-security hops 2",
                        f"neighbor {address} ebgp-multihop 2"]
            family += [f"neighbor {address} activate", f"no neighbor {address} maximum-prefix"]
            if kind == "ibgp" and router in intent.borders:
                family.append(f"neighbor {address} next-hop-self")
        if router in intent.stub:
            family.append(f"network {intent.stub[router]}")
        lines = [*top, "address-family ipv4 unicast", *family, "exit-address-family"]
        return router, conf(lines)
    return None


def bgp_majority_normaliser(text: str) -> Move | None:
    """Read every router, then set each setting that differs to the value most carry.

    A neighbour's prefix limit, a loopback session's TTL handling, a route-map's local
    preference; it never reads sessions' states or routes.
    """
    intent = read_intent(text)
    history = read_history(text)
    seen = {e.machine: read_look(e.output) for e in history if e.command == BGP_DIAGNOSTIC}
    for router in intent.routers:
        if router not in seen:
            return router, BGP_DIAGNOSTIC
    limits = [x for look in seen.values() for lines in look.neighbors.values() for x in lines
              if x.startswith("maximum-prefix")]
    ttls = [x for look in seen.values() for lines in look.neighbors.values() for x in lines
            if x.startswith(TTL_COMMANDS)]
    prefs = [p for look in seen.values() for entries in look.route_maps.values()
             for _, _, _, p in entries if p is not None]
    limit, ttl, pref = majority(limits), majority(ttls), majority([str(p) for p in prefs])
    done = {e.machine for e in history if e.command.startswith(CONF)}
    for router in intent.routers:
        look = seen[router]
        lines: list[str] = []
        for name, entries in sorted(look.route_maps.items()):
            for seq, action, _, p in entries:
                if pref is not None and p is not None and str(p) != pref:
                    lines += [f"route-map {name} {action} {seq}", f"set local-preference {pref}",
                              "exit"]
        top, family = [], []
        for address, nlines in sorted(look.neighbors.items()):
            for x in nlines:
                if limit and x.startswith("maximum-prefix") and x != limit:
                    family.append(f"neighbor {address} {limit}")
                if ttl and x.startswith(TTL_COMMANDS) and x != ttl:
                    top += [f"no neighbor {address} {x}", f"neighbor {address} {ttl}"]
        if top or family:
            lines += [f"router bgp {look.asn}", *top]
            if family:
                lines += ["address-family ipv4 unicast", *family, "exit-address-family"]
        if lines and router not in done:
            return router, conf(lines)
    return None
