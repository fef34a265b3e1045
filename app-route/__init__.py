"""app-route: diagnose and repair routing faults injected into an emulated network.

Hosts and a router are network namespaces on Linux bridges, each episode inside its own
private namespace; the agent runs one allowlisted network command per turn.
"""

from netarena.route.actions import Action, ForbiddenCommand, parse_reply
from netarena.route.episode import RouteEpisode
from netarena.route.faults import FAULT_TYPES, LEVEL_LABELS, METHODS, sample_fault
from netarena.route.generator import RouteApp, RouteConfig
from netarena.route.namespaces import cleanup
from netarena.route.probe import PingMatrix, parse_pingall, pingmesh
from netarena.route.solver import ReferenceRouteAgent
from netarena.route.topology import Network, TopologySpec

__all__ = [
    "Action",
    "FAULT_TYPES",
    "ForbiddenCommand",
    "LEVEL_LABELS",
    "METHODS",
    "Network",
    "PingMatrix",
    "ReferenceRouteAgent",
    "RouteApp",
    "RouteConfig",
    "RouteEpisode",
    "TopologySpec",
    "cleanup",
    "parse_pingall",
    "parse_reply",
    "pingmesh",
    "sample_fault",
]
