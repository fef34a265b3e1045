"""app-route: diagnose and repair routing faults injected into a Mininet network.

Each episode builds its network with Mininet (a Linux router, Linux-bridge switches and
hosts) inside a private network namespace; the agent runs one shell command per turn on
one machine, inside a sandbox; a pingmesh that cannot be faked judges the result.
"""

from netarena.route.agents.reference import ReferenceRouteAgent
from netarena.route.base.config import RouteConfig
from netarena.route.emulator.intent import Intent, intended_pairs
from netarena.route.emulator.network import Network
from netarena.route.emulator.plan import NetworkPlan, draw_plan
from netarena.route.emulator.topology import RouterTopo, plan_of
from netarena.route.generator import RouteApp
from netarena.route.judge.pingall import PingMatrix, parse_pingall
from netarena.route.judge.probe import pingmesh
from netarena.route.linux.namespaces import cleanup
from netarena.route.sandbox.actions import Action, ForbiddenCommand, parse_reply
from netarena.route.static.episode import RouteEpisode
from netarena.route.static.faults import FAULT_TYPES, LEVEL_LABELS, METHODS, sample_fault

__all__ = [
    "Action",
    "FAULT_TYPES",
    "ForbiddenCommand",
    "Intent",
    "LEVEL_LABELS",
    "METHODS",
    "Network",
    "NetworkPlan",
    "PingMatrix",
    "ReferenceRouteAgent",
    "RouteApp",
    "RouteConfig",
    "RouteEpisode",
    "RouterTopo",
    "cleanup",
    "draw_plan",
    "intended_pairs",
    "parse_pingall",
    "parse_reply",
    "pingmesh",
    "plan_of",
    "sample_fault",
]
