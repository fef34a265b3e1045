"""What every live episode network shares: Mininet in a private fabric, nodes, the sandbox.

A static network (``network.Network``: a router, hosts, the owners' intent and undisclosed
configuration) and a dynamic one (``frr.network.FrrNetwork``: routers running FRR) build
differently, but both are Mininet inside a private namespace ``<prefix>_net``, whose
switches land there instead of on the host, out of reach of the host's firewall (with
Docker running, ``br_netfilter`` and a FORWARD DROP policy drop bridged traffic in the host
namespace) and of other episodes. Each node's namespace is named ``<prefix>_<node>`` so the
prober and cleanup can find it; agents never see those names (their sandbox has no
``/run``). The judge (``judge/``) and the episodes read and drive a ``LiveNetwork``.

Mininet's process-wide start-up (``Mininet.init``: raising host limits and sysctls such as
``kernel.pty.max``) is skipped: nothing here changes the host.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
from typing import Self

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.mininet_build import ConcurrentMininet, raise_open_file_limit
from netarena.route.emulator.rulesets import RuleFindings, inspect_filters
from netarena.route.emulator.services import Endpoint, Services
from netarena.route.emulator.topology import Bridge, Mininet, Topo
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.linux.namespaces import (
    claim_prefix,
    enter,
    ip_batch,
    remove_prefix,
    write_sysctl,
)
from netarena.route.linux.nodestate import NodeState, StateReader
from netarena.route.linux.rtnetlink import flush_learned
from netarena.route.sandbox.limits import count_node, limit_icmp, over_budget
from netarena.route.sandbox.sandbox import EpisodeSandbox, ExecResult, Hosts, episode_uid

__all__ = ["LiveNetwork", "ExecResult", "RuleFindings"]

log = logging.getLogger(__name__)


_FABRIC = "net"
_BRIDGE_FIREWALL = ("arptables", "iptables", "ip6tables")


def _most_interfaces(topo: Topo) -> int:
    """The most links any node but a switch has (its interfaces besides the loopback)."""
    links: dict[str, int] = {}
    for a, b in topo.links():
        for node in (a, b):
            links[node] = links.get(node, 0) + 1
    nodes = [n for n in links if not topo.isSwitch(n)]
    return max([len(topo.switches()), *(links[n] for n in nodes)])


class LiveNetwork:
    """The live network of one episode, as the judge and the episodes use it.

    A subclass builds it in its constructor (``_start_mininet``, then its own
    configuration) and calls ``close`` if building fails.

    Args:
        plan: The nodes and their addresses.
        prefix: Namespace prefix; a fresh one by default (claimed for this process).
        local: The judge's service ports and the undisclosed configuration (none by
            default: services on ``undisclosed.DEFAULT_PORTS``).
    """

    fabric_links = False
    """Whether node-to-node links (not only switch ports) cross the switch fabric, so its
    ICMP limit (``limits.limit_icmp``) applies on them too."""

    def __init__(self, plan: Hosts, prefix: str | None = None,
                 local: Undisclosed | None = None) -> None:
        self.plan = plan
        self.local = local or Undisclosed()
        self.prefix = claim_prefix(prefix)
        self.mininet: Mininet | None = None
        self.sandbox: EpisodeSandbox | None = None
        self.services: Services | None = None
        self.reader = StateReader(self._exec_output)
        self.healthy: dict[str, NodeState] = {}
        """Every node's state once built (its design's configuration applied)."""
        self._closed = False

    def service_endpoints(self) -> dict[str, Endpoint]:
        """The undisclosed services the judge probes as flows (none unless the design has them)."""
        return {}

    def netns(self, node: str) -> str:
        """Namespace name of ``node`` (``r0``, ``h3``), or of the switch fabric (``net``)."""
        return f"{self.prefix}_{node}"

    def _start_mininet(self, topo: Topo) -> None:
        """Build and start ``topo`` in the episode's private switch fabric (every network)."""
        raise_open_file_limit()
        fabric = self.netns(_FABRIC)
        ip_batch([f"netns add {fabric}"])
        for table in _BRIDGE_FIREWALL:  # our own namespace: bridges just switch
            with contextlib.suppress(OSError):
                write_sysctl(fabric, f"net.bridge.bridge-nf-call-{table}", "0")
        self._prepare_fabric(fabric, topo)
        with enter(fabric):
            self.mininet = ConcurrentMininet(
                topo=topo,
                switch=Bridge,
                controller=None,
                autoSetMacs=False,
                waitConnected=False,
                build=False,
            )
            self.mininet.node_uid = episode_uid(self.prefix)
            self.mininet.fabric_links = [] if self.fabric_links else None
            self.mininet.build()
            if self.mininet.fabric_links:
                ip_batch(self.mininet.fabric_ports(), fabric)
            self.mininet.start()
        limit_icmp(fabric)
        ip_batch([f"netns attach {self.netns(h.name)} {h.pid}" for h in self.mininet.hosts])

    def _prepare_fabric(self, fabric: str, topo: Topo) -> None:
        """Make the switch ports' interface numbers differ from their peers'.

        A veth end whose ifindex equals its peer's (both ``2`` in fresh namespaces: a
        host's first interface and the first switch port) has its carrier changes treated
        as non-urgent by the kernel: the bridge enables that port up to a second late, and
        the host cannot talk meanwhile. Burning the fabric's low numbers puts every switch
        port above any node interface's number: with ``fabric_links``, the links' bridges
        are made first; else throwaway veth pairs (left down: deleting a veth pair costs
        tens of milliseconds, deleting the fabric removes them together).
        """
        most = _most_interfaces(topo)
        if self.fabric_links:
            links = [x for x in topo.links() if not any(topo.isSwitch(n) for n in x)]
            lines = ConcurrentMininet.fabric_bridges(max(len(links), most + 2))
        else:
            pairs = range((most + 3) // 2)
            lines = [f"link add nax{i}a type veth peer name nax{i}b" for i in pairs]
        ip_batch(lines, fabric)

    def _exec_output(self, node: str, argv: list[str]) -> tuple[int, str]:
        result = self.exec(node, argv)
        return result.returncode, result.output

    def read_states(self) -> dict[str, NodeState]:
        """Every node's current state (``nodestate.py``).

        Raises:
            EmulatorError: A node's state could not be read (the judge fails closed).
        """
        self._check_open()
        return {node: self.reader.read(node, self.netns(node)) for node in self.plan.nodes}

    def read_state(self, node: str) -> NodeState:
        """One node's part of ``read_states``."""
        self._check_open(node)
        return self.reader.read(node, self.netns(node))

    def _check_open(self, node: str | None = None) -> None:
        if self._closed:
            raise EmulatorError("network is closed")
        if node is not None and node not in self.plan.nodes:
            raise EmulatorError(f"unknown node {node}")

    def exec(
        self, node: str, argv: list[str], stdin: str | None = None, timeout_s: float = 10.0
    ) -> ExecResult:
        """Run a trusted command (ours, not the agent's) in ``node``'s namespace."""
        self._check_open(node)
        with enter(self.netns(node)):
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"},
            )
        try:
            out, _ = proc.communicate(stdin, timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            return ExecResult(-9, out, True)
        return ExecResult(proc.returncode, out)

    def shell(self, node: str, command: str, timeout_s: float = 5.0) -> ExecResult:
        """Run an agent's ``command`` as ``bash -c`` on ``node``, inside the sandbox."""
        self._check_open(node)
        assert self.sandbox is not None and self.mininet is not None
        userns = f"/proc/{self.mininet.nameToNode[node].pid}/ns/user"

        def guard() -> str | None:  # stops a command piling up objects before it is done
            return ", ".join(over_budget(self.count_objects(node, guard=True))) or None

        return self.sandbox.run(node, self.netns(node), userns, command, timeout_s, guard)

    def count_objects(self, node: str, guard: bool = False) -> dict[str, int]:
        """The objects ``node`` holds, by kind of ``OBJECT_BUDGET`` (``limits.count_node``).

        ``guard``: counted while a command runs (a subclass may count less patiently).
        """
        return count_node(self.netns(node))

    def inspect(self, node: str) -> RuleFindings:
        """Read ``node``'s packet filters and count its kernel objects (``inspect_filters``)."""
        return inspect_filters(node, self.netns(node), self.count_objects(node))

    def flush_neighbours(self) -> None:
        """Forget every learned neighbour entry on every node (static entries stay).

        Measuring right after a flush sees the configuration's steady state: a cached
        entry for an address that no longer exists cannot make a broken path look fine.
        """
        for node in self.plan.nodes:
            flush_learned(self.netns(node))

    def close(self) -> None:
        """Stop Mininet's node shells and remove every namespace and file of the episode.

        Idempotent.
        """
        if self._closed:
            return
        self._closed = True
        if self.mininet is not None:
            for node in [*self.mininet.hosts, *self.mininet.switches]:
                with contextlib.suppress(OSError):
                    node.terminate()
        if self.sandbox is not None:
            self.sandbox.close()
        if self.services is not None:
            self.services.close()
        removed = remove_prefix(self.prefix)
        log.debug("closed %s: %d namespaces", self.prefix, len(removed))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
