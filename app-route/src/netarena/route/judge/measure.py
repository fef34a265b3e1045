"""The judge's steady-state measurement: a pingmesh from empty neighbour caches, and patience.

Static and dynamic episodes measure the same way; so does fault injection when it proves a
fault breaks the network (``static/injection.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from netarena.route.emulator.live import LiveNetwork
from netarena.route.judge.errorbudget import judge_quiet
from netarena.route.judge.pingall import Flow, Pair, PingMatrix
from netarena.route.judge.probe import pingmesh
from netarena.route.judge.unseen import judge_unseen

__all__ = ["ProbeTiming", "measure", "measure_patiently"]


@dataclass(frozen=True)
class ProbeTiming:
    """How long the pingmesh waits (see ``probe.pingmesh``)."""

    timeout_s: float = 0.1
    """First round, seconds."""
    confirm_rounds: int = 2
    """Confirmation rounds for expected pairs that did not answer."""
    confirm_floor_s: float = 0.25
    """Shortest confirmation window, seconds."""
    controlled: bool = True
    """Whether confirmation rounds end once their controls answered (``probe.py``)."""


def measure(
    net: LiveNetwork,
    timing: ProbeTiming,
    expect: frozenset[Pair] | None,
    expect_services: frozenset[Flow] | None = frozenset(),
) -> PingMatrix:
    """The steady-state pingmesh: neighbour caches emptied, then probed.

    The agent's neighbour and conntrack entries are put back afterwards (``unseen.py``).

    ``expect_services``: the undisclosed services' flows to confirm before reporting them
    lost (``None``: all of them).
    """
    spaces = [net.netns(node) for node in net.plan.nodes]
    with judge_quiet(spaces), judge_unseen(spaces):  # errorbudget.py, unseen.py: flushing
        net.flush_neighbours()  # an entry still resolving answers the packets it queued
        return pingmesh(
            net,
            timing.timeout_s,
            expect=expect,
            confirm_rounds=timing.confirm_rounds,
            confirm_floor_s=timing.confirm_floor_s,
            expect_services=expect_services,
            controlled=timing.controlled,
        )


_PATIENT_ROUNDS = 3
_PATIENT_FLOOR_S = 1.0
_PATIENT_TRIES = 2
_PATIENT_PAUSE_S = 1.0
"""Re-measurement before a flow is reported lost: rounds, and each one's shortest window."""


def _union(a: PingMatrix, b: PingMatrix) -> PingMatrix:
    """Every flow either measurement saw answering."""

    def both(x: frozenset[Any] | None, y: frozenset[Any] | None) -> frozenset[Any] | None:
        return None if x is None and y is None else (x or frozenset()) | (y or frozenset())

    return PingMatrix(
        a.nodes, a.ok | b.ok, both(a.tcp, b.tcp), both(a.udp, b.udp), both(a.services, b.services)
    )


def measure_patiently(
    net: LiveNetwork,
    timing: ProbeTiming,
    expect: frozenset[Pair] | None,
    expect_services: frozenset[Flow] | None,
    answered_before: frozenset[Flow],
) -> PingMatrix:
    """``measure``, repeated with patient windows while a flow of ``answered_before`` is lost.

    Up to ``_PATIENT_TRIES`` patient measurements, ``_PATIENT_PAUSE_S`` apart, come before
    the agent is blamed (or a repaired network is judged broken): a loaded host can starve
    the prober for seconds but never lend a path an answer (answers carry tokens), so a
    flow counts as answering when any measurement saw it. A flow really lost costs the
    tries; one that answered costs nothing more.
    """
    seen = measure(net, timing, expect, expect_services)
    patient = ProbeTiming(timing.timeout_s, _PATIENT_ROUNDS, _PATIENT_FLOOR_S, controlled=False)
    for attempt in range(_PATIENT_TRIES):
        if not answered_before - seen.flows - (seen.services or frozenset()):
            break
        if attempt:
            time.sleep(_PATIENT_PAUSE_S)
        seen = _union(seen, measure(net, patient, expect, expect_services))
    return seen
