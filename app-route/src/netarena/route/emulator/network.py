"""A live episode network: Mininet inside a private network namespace.

Each episode builds its ``Topo`` with Mininet's own API (``Mininet(topo, switch=LinuxBridge,
controller=None, autoSetMacs=True)``), so node names, MAC addresses, interface names and
command outputs are those a Mininet user knows. The whole network lives inside a private
namespace ``<prefix>_net``: Mininet's switches, which it creates in its caller's
namespace, land there instead of on the host, out of reach of the host's firewall (with
Docker running, ``br_netfilter`` and a FORWARD DROP policy drop bridged traffic in the
host namespace) and of other episodes. Each node's namespace is named ``<prefix>_<node>``
so the prober and cleanup can find it; agents never see those names (their sandbox has no
``/run``).

Mininet's process-wide start-up (``Mininet.init``: raising host limits and sysctls such as
``kernel.pty.max``) is skipped: nothing here changes the host.
"""

from __future__ import annotations

import contextlib
import logging
import re
import subprocess

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.blocking import Record, commands
from netarena.route.emulator.intent import Intent, host_route_commands, host_rules, router_rules
from netarena.route.emulator.mininet_build import ConcurrentMininet, raise_open_file_limit
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.rulesets import RuleFindings, inspect_filters
from netarena.route.emulator.services import Services
from netarena.route.emulator.topology import Bridge, Mininet, Topo
from netarena.route.emulator.twins import apply_order
from netarena.route.emulator.undisclosed import Item, Undisclosed
from netarena.route.linux.namespaces import (
    claim_prefix,
    enter,
    ip_batch,
    remove_prefix,
    write_sysctl,
)
from netarena.route.linux.nodestate import NEVER_CHANGED, NodeState, StateReader, ruleset_generation
from netarena.route.linux.rtnetlink import flush_learned
from netarena.route.sandbox.limits import OBJECT_BUDGET, count_node, limit_icmp, over_budget
from netarena.route.sandbox.sandbox import EpisodeSandbox, ExecResult, episode_uid

__all__ = ["Network", "ExecResult", "RuleFindings", "OBJECT_BUDGET"]

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


def _refusal(line: str) -> bool:
    """Whether an ``ip -batch`` line adds a policy rule that refuses traffic."""
    words = line.split()
    return words[:2] == ["rule", "add"] and bool(
        {"prohibit", "unreachable", "blackhole"} & set(words))


class Network:
    """The live network of one episode.

    Args:
        plan: The addressing plan (read from ``topo``).
        intent: The owners' requirements, applied as firewall rules and routes.
        topo: The Mininet topology to build.
        prefix: Namespace prefix; a fresh one by default.
        local: The judge's service ports and the undisclosed configuration (none by
            default: services on ``undisclosed.DEFAULT_PORTS``).

    Raises:
        EmulatorError: Building failed (everything created so far is removed first).
    """

    fabric_links = False
    """Whether node-to-node links (not only switch ports) cross the switch fabric, so its
    ICMP limit (``limits.limit_icmp``) applies on them too."""

    def __init__(
        self,
        plan: NetworkPlan,
        intent: Intent,
        topo: Topo,
        prefix: str | None = None,
        local: Undisclosed | None = None,
    ) -> None:
        self.plan = plan
        self.intent = intent
        self.local = local or Undisclosed()
        self.prefix = claim_prefix(prefix)
        self.mininet: Mininet | None = None
        self.sandbox: EpisodeSandbox | None = None
        self.services: Services | None = None
        self.reader = StateReader(self._exec_output)
        self.healthy: dict[str, NodeState] = {}
        """Every node's state once built (intent and undisclosed configuration applied)."""
        self._closed = False
        try:
            self._build(topo)
        except BaseException:
            self.close()
            raise

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

    def _build(self, topo: Topo) -> None:
        self._start_mininet(topo)
        assert self.mininet is not None
        missing = set(self.plan.nodes) - {h.name for h in self.mininet.hosts}
        if missing:
            raise EmulatorError(f"topology lacks nodes of the plan: {sorted(missing)}")
        for node in self.plan.nodes:  # as on a systemd host: deleting a primary address
            for scope in ("all", "default"):  # promotes the next instead of dropping all
                write_sysctl(self.netns(node), f"net.ipv4.conf.{scope}.promote_secondaries", "1")
            # the judge's listeners answer a probe once: a SYN-ACK retried for half a minute
            # after a probe would keep counting on the rules that drop it
            write_sysctl(self.netns(node), "net.ipv4.tcp_synack_retries", "0")
        self._apply_intent()
        twins = apply_order(self.local.twins)
        first = [r for r in twins if r["method"] == "wrong_prefix"]  # it drops routes
        self._apply_twins(first)
        for node in self.plan.nodes:
            self._apply_undisclosed(node, self.local.on(node))
        self._apply_twins([r for r in twins if r["method"] != "wrong_prefix"])
        for node in self.plan.nodes:  # last: a refusing rule can make a gateway invalid
            if lines := [line for i in self.local.on(node) for line in i.ip if _refusal(line)]:
                ip_batch(lines, self.netns(node))
        self.services = Services({n: self.netns(n) for n in self.plan.nodes}, self.local)
        self.sandbox = EpisodeSandbox(self.prefix, self.plan)
        self.healthy = self.read_states()

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

    def _apply_intent(self) -> None:
        rules = router_rules(self.plan, self.intent)
        if rules is not None:
            self._restore(ROUTER, rules)
        for guard in self.intent.protected:
            self._restore(guard.host, host_rules(self.plan, self.intent, guard))
        for host in self.plan.hosts:
            commands = host_route_commands(self.plan, self.intent, host.name)
            if commands:
                ip_batch([" ".join(c[1:]) for c in commands], self.netns(host.name))

    def _apply_twins(self, records: list[Record]) -> None:
        """The design's blocks and fault-shaped objects (``twins.py``), as faults are made.

        Renumbered addresses come before the undisclosed items (they drop the routes through
        their interface), the rest after them, so its rules land among the items' rules as a
        fault's do.
        """
        for record in records:
            for node, argv in commands(record, self.plan):
                result = self.exec(node, argv)
                if result.returncode != 0:
                    raise EmulatorError(f"{node} $ {' '.join(argv)}: {result.output.strip()}")

    def _apply_undisclosed(self, node: str, items: list[Item]) -> None:
        """Apply ``node``'s undisclosed configuration (``undisclosed.py``)."""
        netns = self.netns(node)
        if lines := [line for item in items for line in item.ip if not _refusal(line)]:
            ip_batch(lines, netns)
        tables = []
        for table in ("filter", "nat"):
            if lines := [line for item in items for line in getattr(item, table)]:
                tables += [f"*{table}", *lines, "COMMIT"]
        if tables:
            self._restore(node, "\n".join([*tables, ""]), "--noflush")
        if lines := [line for item in items for line in item.tc]:
            result = self.exec(node, ["tc", "-batch", "-"], stdin="\n".join(lines) + "\n")
            if result.returncode != 0:
                raise EmulatorError(f"{node}: tc failed: {result.output.strip()}")
        for item in items:
            for key, value in item.sysctls:
                write_sysctl(netns, key, value)

    def _exec_output(self, node: str, argv: list[str]) -> tuple[int, str]:
        result = self.exec(node, argv)
        return result.returncode, result.output

    def read_states(self) -> dict[str, NodeState]:
        """Every node's current state (``nodestate.py``).

        Raises:
            EmulatorError: A node's state could not be read (the judge fails closed).
        """
        self._check_open(ROUTER)
        return {node: self.reader.read(node, self.netns(node)) for node in self.plan.nodes}

    def read_state(self, node: str) -> NodeState:
        """One node's part of ``read_states``."""
        self._check_open(node)
        return self.reader.read(node, self.netns(node))

    def _restore(self, node: str, rules: str, *options: str) -> None:
        result = self.exec(node, ["iptables-restore", *options], stdin=rules)
        if result.returncode != 0:
            raise EmulatorError(f"{node}: iptables-restore failed: {result.output.strip()}")

    def _check_open(self, node: str) -> None:
        if self._closed:
            raise EmulatorError("network is closed")
        if node not in self.plan.nodes:
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

    def zero_counters(self) -> None:
        """Reset every packet-filter counter on every node that has a ruleset.

        An injected rule would otherwise show fewer hits than the design's rules (it is
        younger than they are), a tell no real incident has.
        """
        for node in self.plan.nodes:
            if ruleset_generation(self.netns(node)) == NEVER_CHANGED:
                continue  # no ruleset at all
            tables = self.exec(node, ["iptables-save"]).output
            for table in re.findall(r"^\*(\w+)$", tables, re.MULTILINE):
                self.exec(node, ["iptables", "-t", table, "-Z"])

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

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
