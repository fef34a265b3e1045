"""The small real services every machine runs: the judge's TCP and UDP listeners.

Each node listens on the query's TCP port and UDP port for the whole episode (``ss -ltnu``
on a node shows them); the sockets belong to the evaluator, opened inside the node's
namespace, so an agent can neither stop nor impersonate them (binding the same port needs
the evaluator's uid). The pingmesh (``probe.py``) drives them: a TCP or UDP request
carrying a fresh token must arrive at the destination's listener, which answers with a
token born there. Undisclosed items may add TCP services of their own (a port-forward's
target, a service only one subnet may reach), which listen the same way and are probed as
flows too (``Endpoint``): through the router's DNAT from every host outside the target's
subnet, and at the service's own address from every other machine. Which of those flows
answer in the healthy network is measured when it is built; the judge then holds every
later state to it (the one-subnet service stays blocked from the other subnets).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from netarena.route.emulator.intent import Intent, reaches
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.linux.namespaces import enter

if TYPE_CHECKING:
    from netarena.route.emulator.undisclosed import Undisclosed

__all__ = ["Endpoint", "Services", "endpoints", "expected_flows", "service_flows"]


@dataclass(frozen=True)
class Endpoint:
    """An undisclosed TCP service as clients reach it; its flows are ``(label, src, node)``."""

    label: str
    """The flows' protocol field (``port-forward 10.0.1.1:4321``, ``service tcp/6543``)."""
    node: str
    """The machine whose listener must answer."""
    port: int
    """The listener's port on ``node``."""
    address: str
    """Where clients connect (the router's public address, or ``node``'s own)."""
    connect_port: int
    """The port clients connect to (the forwarded port, or ``port``)."""
    sources: tuple[str, ...]
    """The machines that try it."""
    clients: str = ""
    """The only network it accepts connections from (empty: any)."""


def endpoints(plan: NetworkPlan, local: Undisclosed) -> dict[str, Endpoint]:
    """The undisclosed services of ``local`` as probed flows, by label.

    A forwarded service is tried through each published ``address:port`` from every host
    outside its machine's subnet (the router's own traffic never crosses its DNAT, and a
    client beside the target gets replies that bypass the router); any other service at its
    machine's address from every other machine.
    """
    found: dict[str, Endpoint] = {}
    for item in local.items:
        if not item.tcp_services:
            continue
        others = tuple(n for n in plan.nodes if n != item.node)
        if item.published:
            subnet = plan.host(item.node).subnet
            clients = tuple(n for n in others if n != ROUTER and plan.host(n).subnet != subnet)
            for public, port in zip(item.published, item.tcp_services, strict=False):
                address, _, outside = public.rpartition(":")
                label = f"port-forward {public}"
                found[label] = Endpoint(label, item.node, port, address, int(outside), clients)
        else:
            for port in item.tcp_services:
                label = f"service tcp/{port}"
                address = plan.address(item.node)
                found[label] = Endpoint(
                    label, item.node, port, address, port, others, item.clients
                )
    return found


def service_flows(found: Mapping[str, Endpoint]) -> list[tuple[str, str, str]]:
    """Every ``(label, src, node)`` flow of the services ``found`` (``endpoints``)."""
    return [(e.label, s, e.node) for e in found.values() for s in e.sources]


def expected_flows(
    plan: NetworkPlan, intent: Intent, local: Undisclosed
) -> frozenset[tuple[str, str, str]]:
    """The services' flows that answer in the healthy network, by the intent's model.

    A flow answers when the intent lets its source reach the service's machine (through
    the public address, for a port-forward) and the source's address lies in the
    service's client network, if it has one. The judge measures the healthy network and
    uses this model to decide which missing flows to confirm.
    """
    found = set()
    for e in endpoints(plan, local).values():
        for src in e.sources:
            via = None if e.address == plan.address(e.node) else e.address
            if not reaches(plan, intent, src, e.node, via):
                continue
            if e.clients and not _sends_from(plan, src, e.address, e.clients):
                continue
            found.add((e.label, src, e.node))
    return frozenset(found)


def _sends_from(plan: NetworkPlan, src: str, address: str, network: str) -> bool:
    if src == ROUTER:
        subnet = plan.subnet_of_ip(address)
        source = subnet.gateway if subnet is not None else plan.router_ip
    else:
        source = plan.host(src).ip
    return ipaddress.IPv4Address(source) in ipaddress.IPv4Network(network)

IP_PKTINFO = 8
"""Linux ``IP_PKTINFO`` (the socket module does not export it)."""


class Services:
    """The listening sockets of one network, by node.

    Args:
        netns: Node name -> its network namespace, for every machine of the network.
        local: The network's undisclosed configuration (it gives the ports).
    """

    def __init__(self, netns: Mapping[str, str], local: Undisclosed) -> None:
        self.tcp: dict[str, socket.socket] = {}
        self.udp: dict[str, socket.socket] = {}
        self.extra: dict[tuple[str, int], socket.socket] = {}
        """Undisclosed services' listeners, by ``(node, port)``."""
        self.lock = threading.Lock()
        """Held by a pingmesh while it reads the listeners (one mesh at a time)."""
        try:
            for node, ns in netns.items():
                with enter(ns):
                    self.tcp[node] = _listen(local.tcp_port)
                    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                    self.udp[node] = udp
                    udp.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
                    udp.bind(("0.0.0.0", local.udp_port))
                    udp.setblocking(False)
                    for port in local.tcp_services(node):
                        self.extra[node, port] = _listen(port)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close every listener (idempotent)."""
        for sock in [*self.tcp.values(), *self.udp.values(), *self.extra.values()]:
            with contextlib.suppress(OSError):
                sock.close()


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock
