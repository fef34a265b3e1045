"""Building a faulted network and proving each fault breaks it, in its steady state.

The fresh network must match the owners' intent exactly on ICMP, TCP and UDP (every
intended pair answers, every pair that must stay blocked does not); the undisclosed
services' flows that answer there (``services.py``) are recorded as the healthy ones.
Then, for each fault slot, candidates are tried in order (attempt 0, 1, ...): a
candidate is kept when its commands succeed and, measured from empty neighbour caches,
at least one intended flow stops answering while no blocked flow opens. Measuring from
empty caches matters: a host's cached MAC for a gateway address the fault just removed
keeps traffic flowing for up to a minute, and the agent would then watch the fault
appear on its own and be blamed for it.
A rejected candidate is undone by
rebuilding the network and replaying the faults kept so far, so it leaves no trace.
Candidates come from the query (generation stays pure) and the emulator is deterministic,
so the same query ends with the same faults on every machine.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from netarena.common.core.errors import EmulatorError
from netarena.route.emulator.intent import Intent, intended_pairs
from netarena.route.emulator.network import Network
from netarena.route.emulator.plan import NetworkPlan
from netarena.route.emulator.services import expected_flows
from netarena.route.emulator.topology import Topo
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.judge.checks import intended_flows
from netarena.route.judge.measure import ProbeTiming, measure
from netarena.route.judge.pingall import Flow, Pair, PingMatrix
from netarena.route.static.faults import Fault, injection_commands

__all__ = ["Injected", "build_faulted"]

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 64
"""Candidate trials per query before giving up (each failed trial rebuilds the network)."""


@dataclass
class Injected:
    """A live faulted network and how it was obtained."""

    net: Network
    faults: list[Fault]
    """The faults actually in place, in injection order."""
    attempts: list[int] = field(default_factory=list)
    """Per slot, how many candidates were tried (1 = the first one worked)."""
    matrix: PingMatrix | None = None
    """The pingmesh after the last injection."""
    services: frozenset[Flow] = frozenset()
    """The undisclosed services' flows that answered in the healthy network."""


def _apply(net: Network, fault: Fault) -> str | None:
    """Run a fault's commands; return the first failure's output, or ``None``."""
    for node, argv in injection_commands(fault, net.plan):
        result = net.exec(node, argv)
        if result.returncode != 0:
            return f"{node} $ {' '.join(argv)}: {result.output.strip()}"
    return None


def _describe_mismatch(want: frozenset[Pair], got: PingMatrix) -> str:
    missing = sorted(intended_flows(want) - got.flows)[:8]
    extra = sorted(got.flows - intended_flows(want))[:8]
    return f"missing {missing}, unexpected {extra}\n{got.text()}"


class _Search:
    """The depth-first search over fault candidates, on one live network."""

    def __init__(
        self,
        plan: NetworkPlan,
        intent: Intent,
        topo: Callable[[], Topo],
        timing: ProbeTiming,
        local: Undisclosed | None,
    ) -> None:
        self.plan, self.intent, self.topo, self.local = plan, intent, topo, local
        self.check = ProbeTiming(timing.timeout_s, confirm_rounds=1, confirm_floor_s=0.15)
        self.want = intended_pairs(plan, intent)
        self.net = Network(plan, intent, topo(), local=local)
        self.kept: list[Fault] = []
        self.attempts: list[int] = []
        self.trials = 0
        self.services: frozenset[Flow] = frozenset()
        """The services' flows of the healthy network (confirmed before reported lost)."""

    def rebuild(self) -> None:
        """A fresh network with only the faults kept so far (a rejected one leaves no trace).

        It takes a fresh prefix: closing gives the old one's claim up, and another process's
        reaper that listed the old network before could take the new one for that network,
        ownerless for a moment, and remove it (a CI run lost a live episode's node so).
        """
        self.net.close()
        self.net = Network(self.plan, self.intent, self.topo(), local=self.local)
        for done in self.kept:
            if (err := _apply(self.net, done)) is not None:
                raise EmulatorError(f"replaying a verified fault failed: {err}")

    def _breaks(self, fault: Fault, current: PingMatrix) -> PingMatrix | None:
        """Apply ``fault``; the new state if it loses a pair and opens none, else ``None``."""
        failure = _apply(self.net, fault)
        expect = frozenset((s, d) for _, s, d in current.flows)
        after = None if failure else measure(self.net, self.check, expect, self.services)
        want = intended_flows(self.want)
        if after is not None and current.flows - after.flows and not after.flows - want:
            return after
        log.debug("candidate rejected: %s", failure or "no effect")
        return None

    def place(self, slots: list[list[Fault]], index: int, current: PingMatrix) -> PingMatrix | None:
        """Fill slots ``index..`` in order; the final state, or ``None`` if impossible."""
        if index == len(slots):
            return current
        tried: list[Fault] = []
        for attempt, fault in enumerate(slots[index]):
            if fault in tried:  # a repeated draw fails the same way
                continue
            tried.append(fault)
            if self.trials >= MAX_ATTEMPTS:
                return None
            self.trials += 1
            after = self._breaks(fault, current)
            if after is not None:
                self.kept.append(fault)
                self.attempts.append(attempt + 1)
                final = self.place(slots, index + 1, after)
                if final is not None:
                    return final
                self.kept.pop()
                self.attempts.pop()
            self.rebuild()
        return None


def build_faulted(
    plan: NetworkPlan,
    intent: Intent,
    topo: Callable[[], Topo],
    slots: list[list[Fault]],
    timing: ProbeTiming | None = None,
    local: Undisclosed | None = None,
    on_healthy: Callable[[Network], None] | None = None,
) -> Injected:
    """Build the network, check it against the intent, and inject one verified fault per slot.

    Slots are filled depth-first: when no candidate of a slot breaks anything more (an
    earlier fault already cut what it would cut), the search backs up and tries the
    earlier slot's next candidate. The order is fixed, so the same query ends with the
    same faults on every machine.

    Args:
        plan: The addressing plan.
        intent: The owners' requirements.
        topo: Makes the Mininet topology (called for every rebuild).
        slots: Candidate faults per slot.
        timing: Probe timing of the episode; fault checks use one confirmation round.
        local: The service ports and undisclosed configuration to build with.
        on_healthy: Called with the network once it is checked healthy, before any fault
            (the audit reads the healthy configuration there).

    Raises:
        EmulatorError: The healthy network does not match the intent, or no combination
            of candidates within ``MAX_ATTEMPTS`` trials breaks something at every slot.
    """
    timing = timing or ProbeTiming()
    search = _Search(plan, intent, topo, timing, local)
    try:
        model = expected_flows(plan, intent, search.net.local)
        healthy = measure(search.net, ProbeTiming(timing.timeout_s, 4, 0.5), search.want, model)
        search.services = healthy.services or frozenset()
        if search.services != model:  # the measurement is the truth: answers cannot be faked
            log.warning(
                "services' flows differ from the model: missing %s, unexpected %s",
                sorted(model - search.services)[:4],
                sorted(search.services - model)[:4],
            )
        if healthy.flows != intended_flows(search.want):
            raise EmulatorError(
                "the healthy network does not match its intent: "
                + _describe_mismatch(search.want, healthy)
            )
        if on_healthy is not None:
            on_healthy(search.net)
        final = search.place(slots, 0, healthy)
        if final is None:
            raise EmulatorError(
                f"no combination of fault candidates broke connectivity at every slot "
                f"({search.trials} trials)"
            )
        search.net.zero_counters()  # the faults are not newer than the rest by their counts
        return Injected(search.net, search.kept, search.attempts, final, search.services)
    except BaseException:
        search.net.close()
        raise
