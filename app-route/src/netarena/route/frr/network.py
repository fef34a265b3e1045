"""A live dynamic-routing network: Mininet routers each running FRR (the plan's daemons).

Built like every route network (``network.py``: Mininet inside a private namespace, each
node in a user namespace of its own), from an ``OspfPlan``: routers linked point to point,
one host behind each router, every link through a bridge of its own in the switch fabric
(its ICMP limit applies as on static networks). Each router runs its own FRR daemons as
root of the node's user namespace, in a box of their own (``box.py``: a read-only root,
the router's own ``/etc/frr``, ``/var/run/frr``, ``/var/log/frr``, ``/tmp``... each a
small tmpfs, a PID namespace and a control group of their own); the agent's sandbox on
that router starts inside the box, so ``vtysh`` there talks to that router's daemons and
no other, and ``ps`` shows them.

The judge reads routing state from outside the node: FRR's RIB (``show ip route json``
through the router's vty sockets, as host root) and the kernel's FIB (rtnetlink), both
normalised; and each router's running configuration (from each daemon's vty socket) as
objects (``frr <section> <line>``) for the collateral diff. The running configuration's
size counts in the router's object budget (``limits.OBJECT_BUDGET``).
"""

from __future__ import annotations

import json
import logging
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.live import LiveNetwork
from netarena.route.emulator.services import Services
from netarena.route.emulator.topology import LinuxRouter, Topo
from netarena.route.frr.box import RouterBox
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.routing import (
    Routing,
    config_objects,
    fib_routes,
    rib_routes,
)
from netarena.route.frr.vty import DaemonDown, vty_lines, vty_show
from netarena.route.linux.cgroups import episode_limits
from netarena.route.linux.kernel_routes import RouteEvents, main_routes
from netarena.route.linux.namespaces import ip_batch, write_sysctl
from netarena.route.linux.nodestate import NodeState
from netarena.route.linux.rtnetlink import add_address
from netarena.route.sandbox.limits import CONFIG_LINES, OBJECT_BUDGET
from netarena.route.sandbox.sandbox import EpisodeSandbox

__all__ = ["FrrNetwork", "OspfTopo", "DAEMONS"]

log = logging.getLogger(__name__)

DAEMONS = OspfPlan.daemons
"""FRR daemons an OSPF router runs, in start order (a plan says which its routers run)."""
BOUNCE_S = 0.1
"""How long a bounced interface stays down."""
GUARD_READ_S = 1.0
"""How long the running guard waits for a daemon's configuration (a busy one is skipped
that round: the count after the command waits longer)."""


def _routing_output(key: str, value: str) -> bool:
    """Whether a kernel object is FRR's output (routes, zebra's nexthops), not configuration."""
    return key.startswith("route ") or (key.startswith("nexthop ") and value.endswith("zebra"))


class OspfTopo(Topo):
    """Routers ``r1..rN`` linked point to point, host ``h<i>`` behind ``r<i>``."""

    def build(self, plan: OspfPlan) -> None:
        """Add the routers, hosts and links of ``plan``."""
        for router in plan.routers:
            self.addNode(router, cls=LinuxRouter, ip=None)
        for stub in plan.stubs:
            prefixlen = stub.network.split("/")[1]
            self.addHost(
                stub.host, ip=f"{stub.host_ip}/{prefixlen}", defaultRoute=f"via {stub.gateway}"
            )
            self.addLink(
                stub.host,
                stub.router,
                intfName1=f"{stub.host}-eth0",
                intfName2=stub.router_intf,
                params2={"ip": f"{stub.gateway}/{prefixlen}"},
            )
        for link in plan.links:
            self.addLink(
                link.a,
                link.b,
                intfName1=link.a_intf,
                intfName2=link.b_intf,
                params1={"ip": f"{link.a_ip}/30"},
                params2={"ip": f"{link.b_ip}/30"},
            )


class FrrNetwork(LiveNetwork):
    """The live network of one dynamic-routing episode.

    Args:
        plan: The design (rendered into each router's ``frr.conf``).
        configs: Router → configuration to boot with instead of the healthy one.
        prefix: Namespace prefix; a fresh one by default.

    Raises:
        EmulatorError: Building or starting FRR failed, an ``OSError`` included
            (everything is removed first).
    """

    fabric_links = True

    def __init__(self, plan: OspfPlan, prefix: str | None = None) -> None:  # noqa: D107
        super().__init__(plan, prefix)
        self.ospf = plan
        self.boxes: dict[str, RouterBox] = {}
        """Each router's daemons, in their box (``box.py``)."""
        self.peak_memory: dict[str, int | None] = {}
        """Each router's control group's peak memory, bytes, recorded at close."""
        self.pool = ThreadPoolExecutor(len(plan.routers), thread_name_prefix=self.prefix)
        """Reads every router at once (threads kept: a read runs several times a second)."""
        self.route_events: RouteEvents | None = None
        """When any router's kernel routes last changed (``settle.py`` waits on it)."""
        try:
            self._build(OspfTopo(plan))
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError):  # this network's (a full disk, say): its error only
                raise EmulatorError(f"{self.prefix}: building failed: {exc}") from exc
            raise

    def _build(self, topo: Topo) -> None:
        self._start_mininet(topo)
        self.route_events = RouteEvents([self.netns(r) for r in self.ospf.routers])
        for router in self.ospf.routers:
            add_address(self.netns(router), "lo", self.ospf.loopbacks[router], 32)
            write_sysctl(self.netns(router), "net.ipv4.conf.all.promote_secondaries", "1")
        for link in self.ospf.links:
            for router in (link.a, link.b):
                if (mtu := link.mtu_at(router)) != 1500:
                    intf, _ = link.end(router)
                    ip_batch([f"link set dev {intf} mtu {mtu}"], self.netns(router))
        self.sandbox = EpisodeSandbox(self.prefix, self.plan, tuple(self.ospf.routers))
        list(self.pool.map(self._start_frr, self.ospf.routers))
        self.sandbox.group.limit("", episode_limits(len(self.boxes)))  # all started: bounded
        self.services = Services({n: self.netns(n) for n in self.plan.nodes}, self.local)

    def _start_frr(self, router: str) -> None:
        """Start ``router``'s daemons in their box; its commands join the box from now on.

        Raises:
            EmulatorError: They did not start (an ``OSError`` included: it is the
                router's, and fails this episode only).
        """
        assert self.mininet is not None and self.sandbox is not None
        userns = f"/proc/{self.mininet.nameToNode[router].pid}/ns/user"
        config = self.ospf.frr_config(router)
        try:
            box = RouterBox(
                router, self.netns(router), userns, config, self.ospf.daemons, self.sandbox
            )
        except OSError as exc:
            raise EmulatorError(f"{router}: FRR did not start: {exc}") from exc
        self.boxes[router] = box
        self.sandbox.boxes[router] = box.node_box

    def attach_shells(self) -> None:
        """Point ``vtysh`` in every router's Mininet shell at that router's daemons.

        For a person exploring (``netarena route shell``): agents' commands run in the
        sandbox, inside the router's box.
        """
        assert self.mininet is not None
        for router in self.ospf.routers:
            zebra = self.boxes[router].daemon_pids().get("zebra")
            run = f"/proc/{zebra}/root/run/frr"  # the daemon's root: its box
            self.mininet.nameToNode[router].cmd(f"alias vtysh='vtysh --vty_socket {run}'")

    def vtysh(self, router: str, *commands: str, timeout_s: float = 10.0) -> str:
        """Run trusted ``vtysh -c`` commands on ``router``'s daemons (the judge's own).

        Raises:
            EmulatorError: vtysh failed or timed out (the judge fails closed).
        """
        self._check_open(router)
        argv = ["vtysh", "--vty_socket", str(self.boxes[router].path("/run/frr"))]
        for command in commands:
            argv += ["-c", command]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise EmulatorError(f"{router}: vtysh timed out") from exc
        except OSError as exc:
            raise EmulatorError(f"{router}: vtysh failed: {exc}") from exc
        if proc.returncode != 0:
            raise EmulatorError(
                f"{router}: vtysh failed: {(proc.stderr or proc.stdout).strip()[:300]}"
            )
        return proc.stdout

    def show(
        self,
        router: str,
        daemon: str,
        command: str,
        timeout_s: float = 10.0,
        *,
        enable: bool = False,
    ) -> str:
        """One ``show`` command's output, straight from ``daemon``'s vty socket on ``router``.

        The judge reads state this way many times a step (``vty.py``: no process, where
        ``vtysh`` costs tens of milliseconds of CPU). ``enable``: the command is in the
        enable node (``show running-config``).

        Raises:
            DaemonDown: The daemon is not running.
            EmulatorError: The daemon did not answer, or refused the command.
        """
        self._check_open(router)
        socket = self.boxes[router].path("/run/frr") / f"{daemon}.vty"
        try:
            return vty_show(socket, command, timeout_s, enable=enable)
        except EmulatorError as exc:
            raise type(exc)(f"{router}: {exc}") from exc

    def count_objects(self, node: str, guard: bool = False) -> dict[str, int]:
        """The node's kernel objects, and a router's running configuration lines.

        Counted from each daemon's ``show running-config`` (the lines each holds; a
        prefix list every daemon keeps counts in each), up to one past the budget.
        """
        counts = super().count_objects(node, guard)
        if node not in self.boxes:
            return counts
        left = OBJECT_BUDGET[CONFIG_LINES] + 1
        for daemon in self.ospf.daemons:
            socket = self.boxes[node].path("/run/frr") / f"{daemon}.vty"
            try:
                left -= vty_lines(socket, left, GUARD_READ_S if guard else 10.0)
            except EmulatorError as exc:  # not running or busy: it adds nothing now
                log.debug("%s %s: configuration not counted: %s", node, daemon, exc)
            if left <= 0:
                break
        counts[CONFIG_LINES] = OBJECT_BUDGET[CONFIG_LINES] + 1 - max(left, 0)
        return counts

    def ask_all(
        self, daemon: str, command: str
    ) -> list[tuple[str, tuple[float, float, dict[str, Any]]]]:
        """``command``'s JSON answer from every router at once, and when it was sent and answered.

        Times are monotonic; a router that cannot answer is left out (it has no state).
        """

        def ask(router: str) -> tuple[float, float, dict[str, Any]] | None:
            sent = time.monotonic()
            try:
                data = json.loads(self.show(router, daemon, command))
            except (ValueError, EmulatorError):
                return None
            return sent, time.monotonic(), data if isinstance(data, dict) else {}

        answers = list(self.pool.map(ask, self.ospf.routers))
        return [(r, a) for r, a in zip(self.ospf.routers, answers, strict=True) if a is not None]

    def configure(self, router: str, lines: list[str]) -> None:
        """Apply configuration ``lines`` on ``router`` (``conf t`` then each line)."""
        self.vtysh(router, "configure terminal", *lines)

    def routing(self) -> Routing:
        """Every router's RIB (FRR's selected routes) and kernel FIB, normalised.

        Raises:
            EmulatorError: A router's routes could not be read (the judge fails closed).
        """
        found = list(self.pool.map(self._routes_of, self.ospf.routers))
        return dict(zip(self.ospf.routers, found, strict=True))

    def _routes_of(self, router: str) -> dict[str, str]:
        try:
            rib = json.loads(self.show(router, "zebra", "show ip route json"))
        except ValueError as exc:
            raise EmulatorError(f"{router}: unreadable RIB: {exc}") from exc
        return rib_routes(rib) | fib_routes(main_routes(self.netns(router)))

    def running_config(self, router: str) -> NodeState:
        """``router``'s running configuration as objects: ``frr <section> <line>`` → ``""``.

        Read from each daemon, as ``vtysh`` reads it, and merged the same way (objects
        are keyed by section); a daemon that is not running has none. vtysh's own lines
        (its host name, ``service integrated-vtysh-config``) are not routing state.

        Raises:
            EmulatorError: A daemon did not answer (the judge fails closed).
        """
        objects: NodeState = {}
        for daemon in self.ospf.daemons:
            try:
                text = self.show(router, daemon, "show running-config", enable=True)
            except DaemonDown:
                continue
            objects.update(config_objects(text))
        return objects

    def read_states(self) -> dict[str, NodeState]:
        """Every node's kernel state, routers with their FRR configuration (no routes).

        Routes (and zebra's nexthop objects) are the routing protocol's output, judged by
        ``routing()``; the rest (links, addresses, filters, sysctls, FRR configuration) is
        what collateral compares.
        """
        self._check_open(self.ospf.routers[0])
        read = self.pool.map(self.running_config, self.ospf.routers)
        configs = dict(zip(self.ospf.routers, read, strict=True))
        return {node: self._state(node, configs.get(node)) for node in self.plan.nodes}

    def read_state(self, node: str) -> NodeState:
        """One node's part of ``read_states``."""
        self._check_open(node)
        config = self.running_config(node) if node in self.ospf.routers else None
        return self._state(node, config)

    def _state(self, node: str, config: NodeState | None) -> NodeState:
        state = self.reader.read(node, self.netns(node))
        if config is None:
            return state
        return {k: v for k, v in state.items() if not _routing_output(k, v)} | config

    def close(self) -> None:
        """Everything ``LiveNetwork.close`` removes, the boxes, the judge's threads and sockets.

        Each router's peak memory is kept in ``peak_memory``.
        """
        if self.sandbox is not None and not self._closed:
            group = self.sandbox.group
            self.peak_memory = {r: group.peak_memory_bytes(r) for r in self.boxes}
        super().close()
        for box in self.boxes.values():
            box.close()
        if self.route_events is not None:
            self.route_events.close()
        self.pool.shutdown(wait=False)

    def bounce(self, router: str, intf: str) -> None:
        """Take ``intf`` down and up, so adjacencies over it form again from scratch."""
        ip_batch([f"link set {intf} down"], self.netns(router))
        time.sleep(BOUNCE_S)  # a down and up in one breath can reach ospfd as nothing at all
        ip_batch([f"link set {intf} up"], self.netns(router))
