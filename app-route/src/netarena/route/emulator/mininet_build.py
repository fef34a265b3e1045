"""Mininet as the route app builds with it: hosts started concurrently, veths made here.

``ConcurrentMininet`` starts and configures hosts from a thread pool (the shells' prompts
dominate building on a loaded machine) and gives every node its own user namespace when
asked; its veth pairs are made by the evaluator (``_made_here``), and its interfaces are
configured over rtnetlink (``NetlinkIntf``). Asked to (``fabric_links``), it runs every
node-to-node link through a bridge of its own in the switch fabric, where the fabric's
limits apply as on switch ports.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.topology import Intf, Mininet, Topo
from netarena.route.linux.devconf import reset
from netarena.route.linux.namespaces import NETNS_DIR, OWNER_DIR
from netarena.route.linux.rtnetlink import VethEnd, add_address, add_veth, is_up, set_up

__all__ = ["ConcurrentMininet", "NetlinkIntf", "raise_open_file_limit", "own_user_namespace"]

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
    fabric_links: list[tuple[str, str]] | None = None
    """When set (a list), every node-to-node link goes through a bridge in the fabric (made
    beforehand: ``fabric_bridges``); the fabric's two ends of each link are added, named as
    their nodes' ends."""

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
        link_class = _made_here(self.link if cls is None else cls, self.fabric_links)
        return super().addLink(node1, node2, port1, port2, cls=link_class, **params)

    @staticmethod
    def fabric_bridges(count: int) -> list[str]:
        """``ip -batch`` lines that make ``count`` bridges for the links, in the fabric.

        No STP or multicast snooping, which would hold back a port or a routing
        protocol's multicast.
        """
        lines = [f"link add nab{i} type bridge stp_state 0 mcast_snooping 0" for i in range(count)]
        return lines + [f"link set nab{i} up" for i in range(count)]

    def fabric_ports(self) -> list[str]:
        """``ip -batch`` lines that join each link's two fabric ends in a bridge of its own.

        The fabric's ends take any frame their node's end sends (the largest MTU), so a
        link behaves as the veth pair it replaces.
        """
        return [
            f"link set {end} master nab{i} mtu 65535 up"
            for i, ends in enumerate(self.fabric_links or [])
            for end in ends
        ]

    def buildFromTopo(self, topo: Topo | None = None) -> None:  # noqa: N802 - Mininet's name
        """Start every host's shell at once, then build as Mininet does."""
        assert topo is not None

        def start(name: str) -> tuple[str, Any]:
            params = dict(topo.nodeInfo(name))
            cls = self._node_class(params.pop("cls", self.host))
            return name, _from_kernel_defaults(cls(name, **params))

        with ThreadPoolExecutor(self._workers) as pool:
            self._started = dict(pool.map(start, topo.hosts()))
        super().buildFromTopo(topo)

    def addHost(self, name: str, cls: Any = None, **params: Any) -> Any:  # noqa: N802
        """A host started by ``buildFromTopo``, registered as Mininet registers hosts."""
        node = self.__dict__.get("_started", {}).pop(name, None)
        if node is None:
            node = super().addHost(name, self._node_class(cls or self.host), **params)
            return _from_kernel_defaults(node)
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


def _from_kernel_defaults(node: Any) -> Any:
    """``node``, its namespace's IPv4 settings reset to the kernel's (``devconf.py``)."""
    if node.inNamespace:  # never the host's own
        reset(f"/proc/{node.pid}/ns/net")  # from the evaluator: as one long shell line it hung
    return node


def _made_here(link_class: Any, bridged: list[tuple[str, str]] | None = None) -> Any:
    """``link_class`` making its veth pairs from the evaluator, each end in its node.

    Mininet makes a pair from the first node's shell, the peer going straight into the
    second node's namespace. A node's shell is root of its own user namespace only, which
    (rightly) cannot create anything in the switch fabric, so the evaluator makes both
    ends instead, each directly in its node's namespace, over rtnetlink (``add_veth``).
    With ``bridged``, each node's end is paired with an end in the fabric (this thread's
    namespace) instead, and the two fabric ends are added to ``bridged``.
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
        if bridged is None or node1.inNamespace is False or node2.inNamespace is False:
            add_veth(VethEnd(intfname1, addr1, node1.pid), VethEnd(intfname2, addr2, node2.pid))
            return None
        for name, mac, node in ((intfname1, addr1, node1), (intfname2, addr2, node2)):
            add_veth(VethEnd(name, mac, node.pid), VethEnd(name, None, None))
        bridged.append((intfname1, intfname2))
        return None

    name = link_class.__name__
    return type(name, (link_class,), {"makeIntfPair": classmethod(make_pair)})


def raise_open_file_limit() -> None:
    """Let this process hold many live networks: each node keeps a pty (two descriptors)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < min(wanted, 65536):
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 65536), hard))


def own_user_namespace(node_class: type[Any], uid: int) -> type[Any]:
    """A Mininet node class whose nodes get a user namespace of their own.

    Mininet starts a node as ``mnexec -cdn ... bash``, which makes its network (and mount)
    namespace. The class returned starts that command as host ``uid`` inside a new user
    namespace (``unshare --user --keep-caps``), so the network namespace belongs to it,
    then maps ``uid`` to root there: the node's shell stays root of its node, and a
    process entering that user namespace has capabilities over the node and nothing else.
    The node's shell (the one ``netarena route shell`` types into) sees empty
    ``/run/netns`` and ``/run/netarena-route``, so ``ip addr`` shows ``link-netnsid 0``
    as on a Mininet host, never the names of this or other episodes' namespaces.

    Args:
        node_class: The node's class (``Host``, a router class, a user's class).
        uid: The episode's unprivileged host uid (root inside).

    Returns:
        A subclass of ``node_class`` with the same name.
    """
    wrapper = _own_user_namespace_wrapper(uid)
    _check_node_start(wrapper)

    def _popen(self: Any, cmd: list[str], **params: Any) -> Any:
        if cmd[:1] == ["mnexec"] and "n" in cmd[1]:
            cmd = [*wrapper, *cmd]
        return super(subclass, self)._popen(cmd, **params)

    def startShell(self: Any, mnopts: str | None = None) -> None:  # noqa: N802 - Mininet's
        super(subclass, self).startShell(mnopts)
        if self.inNamespace:
            _map_root(self.pid, uid)
            # in the node's own mount namespace: `ip` finds no names for other namespaces
            self.cmd(f"mount -a -T {_hiding_fstab()} 2>/dev/null")

    # Mininet's per-class check of its tools (two `which` processes) would run for every
    # node: it marks this class checked, never the base. _check_node_start did the check.
    methods = {"_popen": _popen, "startShell": startShell, "isSetup": True}
    subclass: type[Any] = type(node_class.__name__, (node_class,), methods)
    subclass.__module__ = node_class.__module__
    subclass.__doc__ = node_class.__doc__
    return subclass


def _hiding_fstab() -> Path:
    """An fstab that mounts an empty tmpfs over ``NETNS_DIR`` and ``OWNER_DIR``.

    A node's shell mounts it with one ``mount -a``, not a ``mount`` process per directory.
    """
    path = OWNER_DIR / "hide.fstab"
    if not path.exists():
        OWNER_DIR.mkdir(parents=True, exist_ok=True)
        lines = "".join(
            f"netarena {hidden} tmpfs size=4k,mode=0755 0 0\n" for hidden in (NETNS_DIR, OWNER_DIR)
        )
        spare = path.with_name(f".hide.fstab.{os.getpid()}")
        spare.write_text(lines)
        spare.replace(path)  # atomically: parallel processes may write it too
    return path


def _own_user_namespace_wrapper(uid: int) -> list[str]:
    """The command prefix that starts a node's command as ``uid`` in a new user namespace."""
    become = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    return [*become, "unshare", "--user", "--keep-caps", "--"]


_node_start_checked = False


def _check_node_start(wrapper: list[str]) -> None:
    """Fail with the reason, once per process, if a node cannot start in its user namespace.

    Mininet waits for a node's shell prompt with no timeout, so a shell that dies at start
    (``mnexec`` cannot mount the node's ``/sys``, as in a container whose ``/sys`` is
    read-only or has masked paths) would hang the episode for ever instead of failing it.

    Raises:
        EmulatorError: ifconfig is missing, or the node's start command failed or did not
            finish in 10 s.
    """
    global _node_start_checked
    if _node_start_checked:
        return
    if shutil.which("ifconfig") is None:
        raise EmulatorError("Mininet needs ifconfig (Debian: net-tools)")
    try:
        proc = subprocess.run(
            [*wrapper, "mnexec", "-cdn", "true"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EmulatorError(f"a route node cannot start: {exc}") from exc
    if proc.returncode != 0:
        raise EmulatorError(
            "a route node cannot start in a user namespace of its own "
            f"({proc.stderr.strip() or f'exit {proc.returncode}'}): mounting the node's /sys "
            "needs /sys read-write with no masked paths; in a container, run the image's "
            "entrypoint, which remounts them; on Ubuntu >= 23.10 hosts, also set "
            "kernel.apparmor_restrict_unprivileged_userns=0 (docs/agentbeats.md, "
            "\"Route's privileges\")"
        )
    _node_start_checked = True


def _map_root(pid: int, uid: int) -> None:
    """Make host ``uid`` root of process ``pid``'s (fresh, unmapped) user namespace."""
    if os.readlink(f"/proc/{pid}/ns/user") == os.readlink("/proc/self/ns/user"):
        raise EmulatorError(f"process {pid} did not get a user namespace of its own")
    for kind in ("uid", "gid"):
        with open(f"/proc/{pid}/{kind}_map", "w") as mapping:
            mapping.write(f"0 {uid} 1\n")
