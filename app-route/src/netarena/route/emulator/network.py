"""A static episode's live network: one router, its hosts, the owners' intent.

Each episode builds its ``Topo`` with Mininet's own API (``Mininet(topo, switch=LinuxBridge,
controller=None, autoSetMacs=True)``), so node names, MAC addresses, interface names and
command outputs are those a Mininet user knows; what every live network shares (the
private fabric, node namespaces, the sandbox) is ``live.LiveNetwork``. On top, a static
network carries the owners' intent (firewall rules and routes), the design's twins of the
fault methods and the undisclosed configuration.
"""

from __future__ import annotations

import re

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.blocking import Record, commands
from netarena.route.emulator.intent import Intent, host_route_commands, host_rules, router_rules
from netarena.route.emulator.live import ExecResult, LiveNetwork, RuleFindings
from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.services import Endpoint, Services, endpoints
from netarena.route.emulator.topology import Topo
from netarena.route.emulator.twins import apply_order
from netarena.route.emulator.undisclosed import Item, Undisclosed
from netarena.route.linux.namespaces import ip_batch, write_sysctl
from netarena.route.linux.nodestate import NEVER_CHANGED, ruleset_generation
from netarena.route.sandbox.limits import OBJECT_BUDGET
from netarena.route.sandbox.sandbox import EpisodeSandbox

__all__ = ["Network", "ExecResult", "RuleFindings", "OBJECT_BUDGET"]


def _refusal(line: str) -> bool:
    """Whether an ``ip -batch`` line adds a policy rule that refuses traffic."""
    words = line.split()
    return words[:2] == ["rule", "add"] and bool(
        {"prohibit", "unreachable", "blackhole"} & set(words))


class Network(LiveNetwork):
    """The live network of one static episode: a router, hosts, the owners' intent.

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

    plan: NetworkPlan

    def __init__(
        self,
        plan: NetworkPlan,
        intent: Intent,
        topo: Topo,
        prefix: str | None = None,
        local: Undisclosed | None = None,
    ) -> None:
        super().__init__(plan, prefix, local)
        self.intent = intent
        try:
            self._build(topo)
        except BaseException:
            self.close()
            raise

    def service_endpoints(self) -> dict[str, Endpoint]:
        """The undisclosed configuration's services (``services.endpoints``)."""
        return endpoints(self.plan, self.local)

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

    def _restore(self, node: str, rules: str, *options: str) -> None:
        result = self.exec(node, ["iptables-restore", *options], stdin=rules)
        if result.returncode != 0:
            raise EmulatorError(f"{node}: iptables-restore failed: {result.output.strip()}")

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
