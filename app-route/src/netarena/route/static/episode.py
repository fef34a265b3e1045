"""One route query played out: a faulted Mininet network, one shell command per turn.

The loop (history, rejections, rewards, safety ledger, observation layout) is
``netarena.common.core.reactive.ReactiveEpisode``; this module says only what is route's: a
reply is ``{"machine", "command"}`` run as ``bash -c`` in that machine's sandbox, the state
is the steady-state mesh of ICMP, TCP and UDP flows (and of the undisclosed services'
flows, held to the healthy network's), solved means every protocol's matrix equals the
intended one, and a step is worse when a flow that answered stops answering
(confirmed by patient re-probes) or a flow that must stay blocked starts answering. The
score adds the collateral diff: every node's configuration against the healthy one,
outside the faults' footprint (``collateral.py``); any collateral makes the episode unsafe.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from netarena.common.core.errors import EmulatorError
from netarena.common.core.reactive import Command
from netarena.common.core.types import Query
from netarena.route.base.guarded import GuardedEpisode
from netarena.route.emulator.intent import intended_pairs
from netarena.route.emulator.network import Network
from netarena.route.emulator.plan import ROUTER
from netarena.route.emulator.services import service_flows
from netarena.route.emulator.topology import topology_of
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.judge.checks import (
    describe_flow,
    held_twice,
    intended_flows,
    is_correct,
    regressions,
)
from netarena.route.judge.collateral import footprint
from netarena.route.judge.errorbudget import judge_quiet
from netarena.route.judge.hidden import HiddenVerdict, probe_hidden
from netarena.route.judge.measure import ProbeTiming, measure_patiently
from netarena.route.judge.pingall import PingMatrix
from netarena.route.judge.probe import Watch
from netarena.route.judge.unseen import judge_unseen
from netarena.route.sandbox.actions import Action
from netarena.route.static.injection import build_faulted

if TYPE_CHECKING:
    from netarena.route.base.config import RouteConfig

__all__ = ["RouteEpisode"]

log = logging.getLogger(__name__)


class RouteEpisode(GuardedEpisode[PingMatrix]):
    """A reactive troubleshooting episode over a live Mininet network.

    Building it builds the network and injects verified faults; ``close()`` removes
    every namespace and file of the episode.
    """

    state_title = "Current connectivity"

    def __init__(self, query: Query, config: RouteConfig) -> None:
        plan, self.intent, topo = topology_of(query)
        super().__init__(query, config, plan.nodes)
        self.plan = plan
        self.want = intended_pairs(self.plan, self.intent)
        nodes = self.plan.nodes  # pairs that must stay blocked, watched during each command
        self.blocked = frozenset((s, d) for s in nodes for d in nodes if s != d) - self.want
        self._opened_meanwhile: frozenset[tuple[str, str, str]] = frozenset()
        self.timing = ProbeTiming(timeout_s=config.probe_timeout_s)
        try:
            injected = build_faulted(
                self.plan,
                self.intent,
                topo,
                [slot["candidates"] for slot in query.truth["faults"]],
                self.timing,
                Undisclosed.from_dict(query.truth.get("undisclosed")),
            )
        except BaseException:
            self.close()
            raise
        self.net: Network = injected.net
        try:
            self.states = self.net.read_states()
            self.footprint = footprint(self.net.healthy, self.states)
        except BaseException:
            self.close()
            raise
        self.want_services = injected.services
        """The undisclosed services' flows that answer in the healthy network."""
        every = frozenset(service_flows(self.net.service_endpoints()))
        self.blocked_services = every - self.want_services
        """Those that must stay blocked (watched during each command, like ``blocked``)."""
        self.faults = injected.faults
        self.attempts = injected.attempts
        self.hidden: HiddenVerdict | None = None
        """The final score's probes on ports drawn at score time (``hidden.py``)."""
        assert injected.matrix is not None
        self._begin(injected.matrix)

    @property
    def matrix(self) -> PingMatrix:
        """The latest pingmesh."""
        return self.state

    def _execute(self, command: Command[Action]) -> tuple[str, int]:
        """Run the command while the pairs that must stay blocked are probed all along."""
        act = command.payload
        others = tuple(n for n in self.plan.nodes if n != act.machine)
        with Watch(self.net, self.blocked, extra=self.blocked_services, quiet=others) as watch:
            result = self.net.shell(act.machine, act.command, self.config.command_timeout_s)
        self._opened_meanwhile = watch.answered
        return result.output, result.returncode

    def _measure(self) -> PingMatrix:
        """The steady-state pingmesh.

        Pairs that answered before (and, for the final score, every intended pair) are
        confirmed before being reported lost. When a flow that answered before still did
        not, the whole mesh is measured again with patient windows before the agent is
        blamed (or a repaired network judged broken): a loaded host can starve the
        prober, but never lend a path an answer (answers carry tokens), so a flow counts
        as answering when either measurement saw it.
        """
        if self.torn_down is not None:
            return PingMatrix(self.plan.nodes, frozenset())
        seen = frozenset((s, d) for _, s, d in self.state.flows)
        expect = seen | (self.want if self.final else frozenset())
        served = (self.state.services or frozenset()) & self.want_services
        if self.final:
            served = self.want_services
        before = self.state.flows | ((self.state.services or frozenset()) & self.want_services)
        spaces = [self.net.netns(node) for node in self.plan.nodes]
        with judge_quiet(spaces), judge_unseen(spaces):  # set aside and restored once
            now = measure_patiently(self.net, self.timing, expect, served, before)
            if self.final and is_correct(now, self.want, self.want_services):
                self.hidden = self._probe_hidden()
        return now

    def _probe_hidden(self) -> HiddenVerdict:
        """Every pair on ports drawn now, which the agent could not target (``hidden.py``)."""
        local = self.net.local
        exclude = {local.tcp_port, local.udp_port}
        exclude |= {p for node in self.plan.nodes for p in local.tcp_services(node)}
        return probe_hidden(self.net, self.want, self.net.healthy, self.net.read_states(),
                            exclude, timeout_s=self.timing.timeout_s)

    def _report(self, state: PingMatrix) -> str:
        return state.text() + self.volatile_note()

    def _solved(self, state: PingMatrix) -> bool:
        if self.final and (self.hidden is None or not self.hidden.ok):
            return False  # the final score also needs every port drawn at score time right
        return is_correct(state, self.want, self.want_services) and self.guard_clear

    def _regressions(self, before: PingMatrix, after: PingMatrix) -> list[str]:
        allowed = intended_flows(self.want) | self.want_services
        now = after.flows | (after.services or frozenset())
        was = before.flows | (before.services or frozenset())
        opened = sorted(self._opened_meanwhile - now - was - allowed)
        meanwhile = [
            f"opened {describe_flow(f)} during the command (must stay blocked)" for f in opened
        ]
        racing = self._racing(before, after)
        return regressions(before, after, self.want, self.want_services, racing) + meanwhile

    def _racing(self, before: PingMatrix, after: PingMatrix) -> frozenset[str]:
        """Machines whose lost flows this step is not blamed for: an ARP race's.

        Only when the step left its machine's state as it found it, and only flows from or
        to an address two interfaces hold (``checks.held_twice``); read only when a flow
        was lost.
        """
        ends = {node for flow in before.flows - after.flows for node in flow[1:]}
        machine = self.history[-1].target if self.history else None
        if not ends or machine is None or self.torn_down is not None:
            return frozenset()
        try:
            states = self.net.read_states()
        except EmulatorError:
            return frozenset()  # the step's own check reports the unreadable state
        if states.get(machine) != self.states.get(machine):
            return frozenset()
        addresses = {node: self.plan.address(node) for node in ends}
        links = {f"{h.name} {h.intf}": h.subnet for h in self.plan.hosts}
        links |= {f"{ROUTER} {s.router_intf}": s.index for s in self.plan.subnets}
        return held_twice(states, addresses, links)

    def _details(self, state: PingMatrix) -> dict[str, Any]:
        total = len(state.pairs)
        return {
            "loss_pct": round(state.loss_pct, 2),
            "initial_loss_pct": round(self.initial.loss_pct, 2),
            "intended_loss_pct": round(100.0 * (total - len(self.want)) / total, 2),
            "wrong_pairs": len(state.ok ^ self.want),
            "wrong_flows": len(state.flows ^ intended_flows(self.want)),
            "wrong_service_flows": len((state.services or frozenset()) ^ self.want_services),
            "volatile_rules": len(self.volatile_rules),
            "num_subnets": len(self.plan.subnets),
            "num_hosts": len(self.plan.hosts),
            "faults": ",".join(f"{f['type']}:{f['method']}@{f['node']}" for f in self.faults),
            "injection_attempts": ",".join(str(a) for a in self.attempts),
            "hidden_ports": ",".join(f"{t}/{u}" for t, u in self.hidden.ports)
            if self.hidden else "",
            "hidden_wrong": len(self.hidden.wrong) if self.hidden else 0,
            "hidden_examples": "; ".join(self.hidden.wrong[:3]) if self.hidden else "",
        }
