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
  session of every router on the way (not solved safely).

They are rungs of route's ladder measured on their protocol's labels (``Baseline.labels``):
``netarena calibrate route`` plans those labels for them, ``tests/test_baselines.py`` samples
them, and ``tests/route/test_frr_root.py`` pins their verdicts on chosen faults.
"""

from __future__ import annotations

import re
import shlex

from netarena.common.core.agents import Baseline
from netarena.route.baselines import ScriptedRouteAgent, scripted_baseline
from netarena.route.frr.bgp_plan import bgp_lines
from netarena.route.frr.bgp_solver import BGP_DIAGNOSTIC, BgpDesign, read_bgp_design
from netarena.route.frr.solver import DIAGNOSTIC, Design, read_design
from netarena.route.history import Move, _history

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
CLEAR_BGP = "vtysh -c 'clear bgp *'"


def _each_router_once(text: str, command: str) -> Move | None:
    done = {e.machine for e in _history(text) if e.command == command}
    for router in read_design(text).routers:
        if router not in done:
            return router, command
    return None


def read_only(text: str) -> Move | None:
    """Look at every router once, then give up."""
    return _each_router_once(text, DIAGNOSTIC)


def clear_everything(text: str) -> Move | None:
    """Clear the OSPF process on every router once, then give up."""
    return _each_router_once(text, CLEAR)


def _rewrite(router: str, design: Design) -> str:
    lines = ["no router ospf", "router ospf", f"ospf router-id {design.router_ids.get(router)}"]
    if router in design.redistribute:
        lines.append("redistribute connected")
    lines += ["timers throttle spf 0 50 200", "exit"]
    for intf, (cost, key) in sorted(design.transit.get(router, {}).items()):
        lines += [
            f"interface {intf}",
            "no ip ospf area",
            "ip ospf area 0",
            "no ip ospf passive",
            f"ip ospf cost {cost}",
            design.timers,
            "no ip ospf hello-interval",
            "ip ospf network point-to-point",
            "ip ospf authentication message-digest",
            "no ip ospf message-digest-key 1",
            f"ip ospf message-digest-key 1 md5 {key}",
            "exit",
        ]
    if router in design.stubs:
        intf, passive = design.stubs[router]
        lines += [f"interface {intf}", "no ip ospf area"]
        lines += ["ip ospf area 0", "ip ospf passive"] if passive else []
        lines.append("exit")
    return "vtysh -c 'conf t' " + " ".join(f"-c {shlex.quote(x)}" for x in lines)


def rewrite_from_ticket(text: str) -> Move | None:
    """Re-apply the runbook's design to every router once, never looking, then give up."""
    design = read_design(text)
    done = {
        e.machine for e in _history(text) if re.match(r"vtysh -c 'conf t' -c 'no router", e.command)
    }
    for router in design.routers:
        if router not in done:
            return router, _rewrite(router, design)
    return None


def bgp_read_only(text: str) -> Move | None:
    """Look at every router's BGP state once, then give up."""
    return _each_router_once(text, BGP_DIAGNOSTIC)


def bgp_clear_everything(text: str) -> Move | None:
    """Reset every BGP session of every router once, then give up."""
    return _each_router_once(text, CLEAR_BGP)


def _bgp_rewrite(router: str, design: BgpDesign) -> str:
    asn = design.asn[router]
    section = bgp_lines(
        asn,
        design.router_ids.get(router, ""),
        design.neighbors.get(router, []),
        design.networks.get(router, []),
    )
    lines = [f"no router bgp {asn}", *(x.strip() for x in section if x.strip() != "!")]
    return "vtysh -c 'conf t' " + " ".join(f"-c {shlex.quote(x)}" for x in lines)


def bgp_rewrite_from_ticket(text: str) -> Move | None:
    """Rebuild every router's BGP section from the runbook once, never looking, then give up."""
    design = read_bgp_design(text)
    done = {
        e.machine
        for e in _history(text)
        if re.match(r"vtysh -c 'conf t' -c 'no router bgp", e.command)
    }
    for router in design.routers:
        if router not in done:
            return router, _bgp_rewrite(router, design)
    return None


DYNAMIC_BASELINES = {
    "ospf-read-only": read_only,
    "ospf-clear-everything": clear_everything,
    "ospf-rewrite-from-ticket": rewrite_from_ticket,
    "bgp-read-only": bgp_read_only,
    "bgp-clear-everything": bgp_clear_everything,
    "bgp-rewrite-from-ticket": bgp_rewrite_from_ticket,
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
        "ospf-rewrite-from-ticket",
        "never looks: re-applies the ticket's design to every router's OSPF configuration",
        rewrite_from_ticket,
        {"solved_safely": (0.0, 0.3)},
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
        {"solved_safely": (0.0, 0.3)},
        _BGP,
    ),
)
"""The dynamic-routing rungs of route's ladder, each measured on its protocol's labels."""
