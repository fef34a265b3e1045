"""The small real services every machine runs: the judge's TCP and UDP listeners.

Each node listens on the query's TCP port and UDP port for the whole episode (``ss -ltnu``
on a node shows them); the sockets belong to the evaluator, opened inside the node's
namespace, so an agent can neither stop nor impersonate them (binding the same port needs
the evaluator's uid). The pingmesh (``probe.py``) drives them: a TCP or UDP request
carrying a fresh token must arrive at the destination's listener, which answers with a
token born there. Undisclosed items may add TCP services of their own (a port-forward's
target, a service only one subnet may reach), which listen the same way.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from netarena.route.namespaces import enter

if TYPE_CHECKING:
    from netarena.route.undisclosed import Undisclosed

__all__ = ["Services"]

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
        self.extra: list[socket.socket] = []
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
                    self.extra += [_listen(port) for port in local.tcp_services(node)]
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close every listener (idempotent)."""
        for sock in [*self.tcp.values(), *self.udp.values(), *self.extra]:
            with contextlib.suppress(OSError):
                sock.close()


def _listen(port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock
