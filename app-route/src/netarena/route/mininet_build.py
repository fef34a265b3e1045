"""Mininet as the route app builds with it: hosts started concurrently, veths made here.

``ConcurrentMininet`` starts and configures hosts from a thread pool (the shells' prompts
dominate building on a loaded machine) and gives every node its own user namespace when
asked; its veth pairs are made by the evaluator (``_made_here``), and its interfaces are
configured over rtnetlink (``NetlinkIntf``).
"""

from __future__ import annotations

import resource
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from netarena.route.namespaces import (
    ip_batch,
    own_user_namespace,
)
from netarena.route.rtnetlink import add_address, is_up, set_up
from netarena.route.topology import Intf, Mininet, Topo

__all__ = ["ConcurrentMininet", "NetlinkIntf", "raise_open_file_limit"]

Mininet.inited = True  # skip Mininet.init(): it raises host-wide limits and sysctls


class NetlinkIntf(Intf):
    """Mininet's interface, configured over rtnetlink from the evaluator.

    Mininet runs ``ifconfig`` in the node's shell for each address and each ``up`` (a
    process and a shell round trip every time: 40 % of the CPU building a network took);
    the kernel ends up with the same objects.
    """

    @property
    def netns(self) -> str:
        """The node's network namespace."""
        assert self.node is not None
        return f"/proc/{self.node.pid}/ns/net"

    def setIP(self, ipstr: str, prefixLen: int | None = None) -> str:  # noqa: N802,N803
        """``ifconfig NAME IP/LEN`` (and ``up`` when the length comes in ``ipstr``)."""
        if "/" in ipstr:
            self.ip, length = ipstr.split("/")
            self.prefixLen = int(length)
            add_address(self.netns, self.name, self.ip, self.prefixLen)
            set_up(self.netns, self.name)
            return ""
        if prefixLen is None:
            raise ValueError(f"no prefix length for {ipstr} on {self.name}")
        self.ip, self.prefixLen = ipstr, int(prefixLen)
        add_address(self.netns, self.name, self.ip, self.prefixLen)
        return ""

    def isUp(self, setUp: bool = False) -> bool:  # noqa: N802,N803
        """Whether the interface is up; brought up first with ``setUp``."""
        if setUp:
            set_up(self.netns, self.name)
            return True
        return is_up(self.netns, self.name)


class ConcurrentMininet(Mininet):
    """Mininet that starts and configures its hosts concurrently.

    Mininet starts each node's shell and waits for its prompt, then configures hosts one
    after another; the waits dominate building a network on a loaded machine. Hosts
    (in their own namespaces, independent of each other) are started and configured
    from a thread pool; switches and links are built as Mininet does.
    """

    _workers = 8
    node_uid: int | None = None
    """When set, every node gets a user namespace of its own with this uid as root."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: D107
        kwargs.setdefault("intf", NetlinkIntf)
        super().__init__(*args, **kwargs)

    def _node_class(self, cls: Any) -> Any:
        return cls if self.node_uid is None else own_user_namespace(cls, self.node_uid)

    def addLink(  # noqa: N802 - Mininet's name
        self, node1: Any, node2: Any, port1: Any = None, port2: Any = None, cls: Any = None,
        **params: Any,
    ) -> Any:
        """Mininet's ``addLink``, with veth pairs made by the evaluator (see ``_made_here``)."""
        link_class = _made_here(self.link if cls is None else cls)
        return super().addLink(node1, node2, port1, port2, cls=link_class, **params)

    def buildFromTopo(self, topo: Topo | None = None) -> None:  # noqa: N802 - Mininet's name
        """Start every host's shell at once, then build as Mininet does."""
        assert topo is not None

        def start(name: str) -> tuple[str, Any]:
            params = dict(topo.nodeInfo(name))
            cls = self._node_class(params.pop("cls", self.host))
            return name, cls(name, **params)

        with ThreadPoolExecutor(self._workers) as pool:
            self._started = dict(pool.map(start, topo.hosts()))
        super().buildFromTopo(topo)

    def addHost(self, name: str, cls: Any = None, **params: Any) -> Any:  # noqa: N802
        """A host started by ``buildFromTopo``, registered as Mininet registers hosts."""
        node = self.__dict__.get("_started", {}).pop(name, None)
        if node is None:
            return super().addHost(name, self._node_class(cls or self.host), **params)
        self.nextIP += 1
        self.hosts.append(node)
        self.nameToNode[name] = node
        return node

    def configHosts(self) -> None:  # noqa: N802 - Mininet's name
        """Configure every host at once (addresses, default routes, loopback)."""
        def configure(host: Any) -> None:
            if host.defaultIntf():
                host.configDefault()
            else:
                host.configDefault(ip=None, mac=None)

        with ThreadPoolExecutor(self._workers) as pool:
            list(pool.map(configure, self.hosts))


def _made_here(link_class: Any) -> Any:
    """``link_class`` making its veth pairs from the evaluator, each end in its node.

    Mininet makes a pair from the first node's shell, the peer going straight into the
    second node's namespace. A node's shell is root of its own user namespace only, which
    (rightly) cannot create anything in the switch fabric, so the evaluator makes both
    ends instead, each directly in its node's namespace.
    """

    def make_pair(
        cls: Any,
        intfname1: str,
        intfname2: str,
        addr1: str | None = None,
        addr2: str | None = None,
        node1: Any = None,
        node2: Any = None,
        deleteIntfs: bool = True,  # noqa: N803 - Mininet's name
    ) -> Any:
        if node1 is None or node2 is None:  # made here anyway, then moved by Mininet
            return link_class.makeIntfPair(intfname1, intfname2, addr1, addr2)
        ends = []
        for name, address, node in ((intfname1, addr1, node1), (intfname2, addr2, node2)):
            ends.append(f"name {name}" + (f" address {address}" if address else ""))
            ends[-1] += f" netns {node.pid}"
        ip_batch([f"link add {ends[0]} type veth peer {ends[1]}"])
        return None

    name = link_class.__name__
    return type(name, (link_class,), {"makeIntfPair": classmethod(make_pair)})


def raise_open_file_limit() -> None:
    """Let this process hold many live networks: each node keeps a pty (two descriptors)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < min(wanted, 65536):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 65536), hard))
