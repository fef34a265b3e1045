"""The reference solver: repairs any generated fault from the observation text alone.

It never sees ``Query.truth``; it reads the inventory, the intent and the expected matrix
from the prompt, the current matrix, and the outputs of its own earlier diagnostic
commands from the history, so it is stateless and works the same served as a remote A2A
agent.

Plan: look at the router with one diagnostic command (links, addresses, routes, rules,
filters, forwarding, queues; in pages when the output cap cuts it), then at every host
involved in a pair that differs from the expected matrix, most involved first. After each
diagnostic it sends all the fixes that turn what it saw into the inventory and intent
(``repairs.py``) as one command, and looks at a machine again only when a fix was made
there and pairs are still wrong. That fits in the original dialect's ten turns for every
generated combination of two faults.
"""

from __future__ import annotations

from dataclasses import replace

from netarena.route.base.history import Move, paged_read, read_history
from netarena.route.judge.pingall import PingMatrix, parse_pingall
from netarena.route.static.inventory import Inventory, published, read_inventory
from netarena.route.static.repairs import (
    HOST_DIAGNOSTIC,
    ROUTER_DIAGNOSTIC,
    host_fixes,
    router_fixes,
)

__all__ = ["RoutePlanner", "read_inventory"]

def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[-1].split(end, 1)[0]


def _suspects(current: PingMatrix, expected: PingMatrix, hosts: list[str]) -> list[str]:
    """Hosts in pairs that differ from the expected matrix, most involved first."""
    count = dict.fromkeys(hosts, 0)
    wrong = current.ok ^ expected.ok
    for pairs in (current.tcp, current.udp):
        wrong |= expected.ok ^ pairs if pairs is not None else frozenset()
    for pair in wrong:
        for node in pair:
            if node in count:
                count[node] += 1
    order = {h: i for i, h in enumerate(hosts)}
    return sorted((h for h in hosts if count[h]), key=lambda h: (-count[h], order[h]))


def _diagnostic(machine: str) -> str:
    return ROUTER_DIAGNOSTIC if machine == "r0" else HOST_DIAGNOSTIC


class RoutePlanner:
    """How the reference chooses its next command, one overridable step per method.

    The calibration baselines (``baselines.py``) are this plan with one step changed: which
    machines it looks at, which fixes it sends, what it does once it has nothing left to do.
    """

    def machines(self, inv: Inventory, current: PingMatrix, expected: PingMatrix) -> list[str]:
        """The machines to look at, in order: the router, then hosts in wrong pairs."""
        return ["r0", *_suspects(current, expected, list(inv.hosts))]

    def fixes(self, machine: str, output: str, inv: Inventory, expected: PingMatrix) -> list[str]:
        """The commands that turn what ``machine``'s diagnostic showed into the intent."""
        if machine == "r0":
            return router_fixes(output, inv, set(expected.ok))
        return host_fixes(output, inv, machine, set(expected.ok))

    def idle(self) -> Move | None:
        """The command once every machine was seen since its last fix and none needs one.

        ``None`` gives up (an empty reply). The reference looks at the router again (on a
        generated query it is done before it gets here).
        """
        return "r0", ROUTER_DIAGNOSTIC

    def next_action(self, text: str) -> Move | None:
        """Choose ``(machine, command)`` from an observation's text alone."""
        inv = read_inventory(text)
        expected = parse_pingall(_section(text, "Expected ping matrix", "## Task"))
        current = parse_pingall(_section(text, "## Current connectivity", "## History"))
        history = read_history(text)
        revisit = []
        for machine in self.machines(inv, current, expected):
            mine = [e for e in history if e.machine == machine]
            looks = [e for e in mine if e.command == _diagnostic(machine)]
            if not looks:
                return machine, _diagnostic(machine)
            read = paged_read(history, looks[-1])
            if read.next_page:
                return read.next_page
            changed = any(e.index > read.end for e in mine)
            if machine == "r0":  # its port-forwards: a host must not hold their addresses
                inv = replace(inv, published=published(read.output))
            fixes = self.fixes(machine, read.output, inv, expected)
            if fixes and not changed:
                return machine, "; ".join(fixes)
            if changed:
                revisit.append(machine)
        for machine in revisit:
            return machine, _diagnostic(machine)
        return self.idle()

