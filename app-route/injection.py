"""Building a faulted network and proving each fault breaks connectivity.

For each fault slot the candidates are tried in order (attempt 0, 1, ...). A candidate is
kept when its commands succeed and the pingmesh loses at least one more pair than before
it. Otherwise the network is rebuilt from scratch and the faults kept so far are replayed,
so a dud leaves no trace. Candidates come from the query (generation stays pure) and the
emulator is deterministic, so the same query ends with the same faults on every machine.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from netarena.common.errors import EmulatorError
from netarena.route.faults import Fault, injection_commands
from netarena.route.probe import PingMatrix, pingmesh
from netarena.route.topology import Network, TopologySpec

__all__ = ["Injected", "build_faulted"]

log = logging.getLogger(__name__)


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


def _apply(net: Network, fault: Fault) -> str | None:
    """Run a fault's commands; return the first failure's output, or ``None``."""
    for node, argv in injection_commands(fault, net.spec):
        result = net.exec(node, argv)
        if result.returncode != 0:
            return f"{node} $ {' '.join(argv)}: {result.output.strip()}"
    return None


MAX_ATTEMPTS = 64
"""Candidate trials per query before giving up (each failed trial rebuilds the network)."""


def build_faulted(
    spec: TopologySpec,
    slots: list[list[Fault]],
    prefix: str | None = None,
    probe_timeout_s: float = 0.1,
    probe_retry_timeout_s: float = 0.2,
) -> Injected:
    """Build the network and inject one verified fault per slot.

    Slots are filled depth-first: when no candidate of a slot adds any loss (an earlier
    fault already cut what it would cut, e.g. a link down on the subnet whose traffic a
    later fault drops), the search backs up and tries the earlier slot's next candidate.
    The order is fixed, so the same query ends with the same faults on every machine.

    Raises:
        EmulatorError: The healthy network does not ping fully, or no combination of
            candidates within ``MAX_ATTEMPTS`` trials breaks connectivity at every slot.
    """

    def probe(net: Network) -> PingMatrix:
        return pingmesh(net, probe_timeout_s, probe_retry_timeout_s)

    net = Network(spec, prefix)
    kept: list[Fault] = []
    attempts: list[int] = []
    trials = 0

    def rebuild() -> None:
        nonlocal net
        net.close()
        net = Network(spec, net.prefix)
        for done in kept:
            if (err := _apply(net, done)) is not None:
                raise EmulatorError(f"replaying a verified fault failed: {err}")

    def place(index: int, current: PingMatrix) -> PingMatrix | None:
        nonlocal trials
        if index == len(slots):
            return current
        tried: list[Fault] = []
        for attempt, fault in enumerate(slots[index]):
            if fault in tried:  # a repeated draw fails the same way
                continue
            tried.append(fault)
            if trials >= MAX_ATTEMPTS:
                return None
            trials += 1
            failure = _apply(net, fault)
            after = None if failure else probe(net)
            if after is not None and current.ok - after.ok:
                kept.append(fault)
                attempts.append(attempt + 1)
                final = place(index + 1, after)
                if final is not None:
                    return final
                kept.pop()
                attempts.pop()
            else:
                log.debug("slot %d attempt %d rejected: %s", index, attempt, failure or "no effect")
            rebuild()
        return None

    try:
        healthy = probe(net)
        if not healthy.healthy:  # a slow machine: give it one generous second chance
            log.warning("fresh network %s not healthy on first probe; probing again", net.prefix)
            healthy = pingmesh(net, 1.0, 1.0)
        if not healthy.healthy:
            raise EmulatorError(f"healthy network dropped pings:\n{healthy.text()}")
        final = place(0, healthy)
        if final is None:
            raise EmulatorError(
                f"no combination of fault candidates broke connectivity at every slot "
                f"({trials} trials)"
            )
        return Injected(net, kept, attempts, final)
    except BaseException:
        net.close()
        raise
