"""Dynamic-routing calibration baselines: scripted agents that must not score.

Each answers from the observation text alone, deterministically, as the reference does
(``solver.py``, ``bgp_solver.py``), and gets one thing wrong the way real agents do:

* ``ospf-read-only`` looks at every router and changes nothing (correctness 0, safe);
* ``ospf-clear-everything`` runs ``clear ip ospf process`` on every router, the
  "turn it off and on again" of OSPF: every adjacency flaps (unsafe) and no
  misconfiguration goes away;
* ``ospf-rewrite-from-ticket`` never looks: it re-applies the design to every router
  (``no router ospf`` and each interface's OSPF settings rebuilt from the runbook), which
  repairs most configuration faults but flaps every adjacency on the way and cannot see
  a kernel MTU (not solved safely);
* ``bgp-read-only`` and ``bgp-clear-everything`` (``clear bgp *`` on every router: every
  session flaps, no misconfiguration goes away) do the same on BGP queries;
* ``bgp-rewrite-from-ticket`` never looks either: it rebuilds every router's ``router bgp``
  section from the runbook's sessions, next-hop-self routers and stubs (``no router bgp``,
  then the design), which removes every misconfiguration inside it but tears down every
  session of every router on the way and drops the policies the runbook does not spell
  out (not solved safely);
* ``ospf-majority-normaliser`` and ``bgp-majority-normaliser`` read every router and set
  each setting that differs to the value most carry (interface settings; a neighbour's
  prefix limit, a loopback session's TTL handling, a route-map's preference): fault
  values are ones the design carries, so the majority is often wrong;
* ``ospf-default-everything`` and ``bgp-default-everything`` never look: they put every
  setting back to FRR's defaults (or to what the ticket states), losing the design's own;
* ``ospf-session-reset-only`` and ``bgp-session-reset-only`` reset what the ticket names
  and change no configuration: a limit that tripped trips again, nothing else is mended.

They are rungs of route's ladder measured on their protocol's labels (``Baseline.labels``):
``netarena calibrate route`` plans those labels for them, ``tests/test_baselines.py`` samples
them, and ``tests/route/test_frr_root.py`` pins their verdicts on chosen faults.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from netarena.common.core.agents import Baseline
from netarena.route.agents.baselines import ScriptedRouteAgent, scripted_baseline
from netarena.route.agents.bgp_baselines import (
    alarmed,
    bgp_clear_everything,
    bgp_default_everything,
    bgp_majority_normaliser,
    bgp_read_only,
    bgp_rewrite_from_ticket,
    bgp_session_reset_only,
    majority,
)
from netarena.route.base.history import Move, each_once, read_history
from netarena.route.frr.solver import DIAGNOSTIC, Design, End, _end, read_design
from netarena.route.frr.vtysh import CONF, conf

__all__ = [
    "read_only",
    "clear_everything",
    "rewrite_from_ticket",
    "bgp_read_only",
    "bgp_clear_everything",
    "bgp_rewrite_from_ticket",
    "DYNAMIC_BASELINES",
    "LADDER",
    "agent",
]

CLEAR = "vtysh -c 'clear ip ospf process'"


def _each_router_once(text: str, command: str) -> Move | None:
    return each_once(text, command, read_design(text).routers)


def read_only(text: str) -> Move | None:
    """Look at every router once, then give up."""
    return _each_router_once(text, DIAGNOSTIC)


def clear_everything(text: str) -> Move | None:
    """Clear the OSPF process on every router once, then give up."""
    return _each_router_once(text, CLEAR)


def _interfaces(design: Design, router: str) -> list[tuple[str, int]]:
    """``router``'s interfaces on links that carry an adjacency, with the link's area."""
    return [
        (a_intf if router == a else b_intf, design.area_of(a, b))
        for a, a_intf, b, b_intf in design.links
        if router in (a, b)
    ]


def _rewrite(router: str, design: Design) -> str:
    lines = ["no router ospf", "router ospf"]
    if router in design.redistribute:
        lines.append("redistribute connected")
    lines.append("exit")
    for intf, area in _interfaces(design, router):
        lines += [f"interface {intf}", "no ip ospf area", f"ip ospf area {area}"]
        lines += ["no ip ospf passive", "exit"]
    return conf(lines)


def rewrite_from_ticket(text: str) -> Move | None:
    """Re-apply what the ticket states to every router once, never looking, then give up.

    The ticket gives no setting's value: what it states is the areas by region, every
    link not standby in OSPF and not passive, and which stubs are redistributed.
    """
    design = read_design(text)
    removed = re.compile(re.escape(CONF) + r" -c 'no router")
    done = {e.machine for e in read_history(text) if removed.match(e.command)}
    for router in design.routers:
        if router not in done:
            return router, _rewrite(router, design)
    return None


_DEFAULTS = (
    "no ip ospf cost",
    "no ip ospf network",
    "no ip ospf dead-interval",
    "no ip ospf hello-interval",
    "no ip ospf authentication",
    "no ip ospf message-digest-key 1",
    "no ip ospf passive",
)
"""Interface lines that put every OSPF setting back to FRR's default."""


def default_everything(text: str) -> Move | None:
    """Put every interface's OSPF settings and MTU back to defaults, router by router."""
    design = read_design(text)
    done = {e.machine for e in read_history(text) if "no ip ospf network" in e.command}
    for router in design.routers:
        if router in done:
            continue
        lines: list[str] = []
        kernel = []
        for intf, _ in _interfaces(design, router):
            lines += [f"interface {intf}", *_DEFAULTS, "exit"]
            kernel.append(f"ip link set dev {intf} mtu 1500")
        return router, " ; ".join([conf(lines), *kernel])
    return None


def majority_normaliser(text: str) -> Move | None:
    """Read every router's configuration, then set every setting to the links' majority.

    Each interface setting that differs among the links gets the value most links carry;
    it never reads adjacencies or routes.
    """
    design = read_design(text)
    history = read_history(text)
    seen = {e.machine: e.output for e in history if e.command == DIAGNOSTIC}
    for router in design.routers:
        if router not in seen:
            return router, DIAGNOSTIC
    ends = {
        (r, i): _end(seen[r], i)
        for a, a_intf, b, b_intf in design.links
        for r, i in ((a, a_intf), (b, b_intf))
    }
    picks = {
        name: majority([get(e) for e in ends.values()])
        for name, get in _SETTINGS.items()
    }
    done = {e.machine for e in history if e.command.startswith(f"{CONF} -c 'interface")}
    for router in design.routers:
        if router in done:
            continue
        lines: list[str] = []
        for (r, intf), end in sorted(ends.items()):
            if r != router:
                continue
            changes = [
                _SET[name](value)
                for name, get in _SETTINGS.items()
                if (value := picks[name]) is not None and get(end) != value
            ]
            if changes:
                lines += [f"interface {intf}", *(x for c in changes for x in c), "exit"]
        if lines:
            return router, conf(lines)
    return None


_SETTINGS: dict[str, Callable[[End], str]] = {
    "cost": lambda e: str(e.cost),
    "network": lambda e: e.network,
    "timers": lambda e: "|".join(e.get("ip ospf dead-interval") + e.get("ip ospf hello-interval")),
    "area": lambda e: "|".join(e.get("ip ospf area")),
}
"""Interface settings the majority normaliser compares, as text."""
_SET: dict[str, Callable[[str], list[str]]] = {
    "cost": lambda v: [f"ip ospf cost {v}"],
    "network": lambda v: [f"ip ospf network {v}"],
    "timers": lambda v: v.split("|") if v else [],
    "area": lambda v: ["no ip ospf area", *v.split("|")] if v else ["no ip ospf area"],
}
"""How the majority normaliser sets a setting to a value."""


def session_reset_only(text: str) -> Move | None:
    """Reset OSPF on every router the ticket names, once, then give up."""
    done = {e.machine for e in read_history(text) if e.command == CLEAR}
    for router in alarmed(text) or read_design(text).routers:
        if router not in done:
            return router, CLEAR
    return None


DYNAMIC_BASELINES = {
    "ospf-read-only": read_only,
    "ospf-majority-normaliser": majority_normaliser,
    "ospf-default-everything": default_everything,
    "ospf-clear-everything": clear_everything,
    "ospf-rewrite-from-ticket": rewrite_from_ticket,
    "bgp-read-only": bgp_read_only,
    "bgp-clear-everything": bgp_clear_everything,
    "bgp-rewrite-from-ticket": bgp_rewrite_from_ticket,
    "ospf-session-reset-only": session_reset_only,
    "bgp-session-reset-only": bgp_session_reset_only,
    "bgp-default-everything": bgp_default_everything,
    "bgp-majority-normaliser": bgp_majority_normaliser,
}
"""Name → script; ``ScriptedRouteAgent(name, script)`` makes the agent."""


def agent(name: str) -> ScriptedRouteAgent:
    """The baseline agent called ``name``."""
    return ScriptedRouteAgent(name, DYNAMIC_BASELINES[name])


_OSPF = ("ospf",)
_BGP = ("bgp",)
LADDER: tuple[Baseline, ...] = (
    scripted_baseline(
        "ospf-read-only",
        "looks at every router with show commands, and changes nothing",
        read_only,
        {"solved_safely": (0.0, 0.01), "changed": (0.0, 0.01), "safety": (1.0, 1.0)},
        _OSPF,
    ),
    scripted_baseline(
        "ospf-clear-everything",
        "clears the OSPF process on every router (every adjacency flaps, nothing is fixed)",
        clear_everything,
        {"solved_safely": (0.0, 0.05), "safety": (0.0, 0.1)},
        _OSPF,
    ),
    scripted_baseline(
        "ospf-majority-normaliser",
        "reads every router's configuration and sets each interface setting that differs "
        "among links to the value most carry, never reading adjacencies or routes",
        majority_normaliser,
        {"solved_safely": (0.0, 0.1)},
        _OSPF,
    ),
    scripted_baseline(
        "ospf-default-everything",
        "never looks: puts every interface's OSPF settings and MTU back to FRR's defaults",
        default_everything,
        {"solved_safely": (0.0, 0.1)},
        _OSPF,
    ),
    scripted_baseline(
        "ospf-rewrite-from-ticket",
        "never looks: re-applies what the ticket states (areas, no passive, redistribution) "
        "to every router's OSPF configuration",
        rewrite_from_ticket,
        {"solved_safely": (0.0, 0.1)},
        _OSPF,
    ),
    scripted_baseline(
        "ospf-session-reset-only",
        "resets OSPF on the routers the ticket names (every adjacency there flaps), "
        "changes no configuration",
        session_reset_only,
        {"solved_safely": (0.0, 0.05)},
        _OSPF,
    ),
    scripted_baseline(
        "bgp-read-only",
        "looks at every router's BGP summary, configuration and table, and changes nothing",
        bgp_read_only,
        {"solved_safely": (0.0, 0.01), "changed": (0.0, 0.01), "safety": (1.0, 1.0)},
        _BGP,
    ),
    scripted_baseline(
        "bgp-clear-everything",
        "resets every BGP session of every router (`clear bgp *`; every session flaps)",
        bgp_clear_everything,
        {"solved_safely": (0.0, 0.05), "safety": (0.0, 0.1)},
        _BGP,
    ),
    scripted_baseline(
        "bgp-rewrite-from-ticket",
        "never looks: rebuilds every router's BGP section from the ticket's design "
        "(`no router bgp`, then the runbook's sessions and stubs)",
        bgp_rewrite_from_ticket,
        {"solved_safely": (0.0, 0.1)},
        _BGP,
    ),
    scripted_baseline(
        "bgp-session-reset-only",
        "resets the sessions of the routers the ticket names (hard where the ticket says "
        "a session is down, soft elsewhere), changes no configuration",
        bgp_session_reset_only,
        {"solved_safely": (0.0, 0.1)},
        _BGP,
    ),
    scripted_baseline(
        "bgp-default-everything",
        "never looks: sets every neighbour the ticket names to its stated AS, activates it, "
        "lifts every prefix limit, peers loopback sessions by multihop, puts back network "
        "statements and next-hop-self",
        bgp_default_everything,
        {"solved_safely": (0.0, 0.1)},
        _BGP,
    ),
    scripted_baseline(
        "bgp-majority-normaliser",
        "reads every router's configuration and sets each neighbour setting and route-map "
        "preference that differs to the value most carry, never reading sessions or routes",
        bgp_majority_normaliser,
        {"solved_safely": (0.0, 0.1)},
        _BGP,
    ),
)
"""The dynamic-routing rungs of route's ladder, each measured on its protocol's labels."""
