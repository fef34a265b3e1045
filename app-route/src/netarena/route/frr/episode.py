"""One dynamic-routing query played out: OSPF on FRR routers, one shell command per turn.

The loop is ``netarena.common.core.reactive.ReactiveEpisode``, as for static route queries; the
state is what a routing judge needs:

* **routing**: every router's FRR RIB and kernel FIB, normalised (``network.py``),
  read once it stopped changing;
* the token **pingmesh** over every host and router loopback on ICMP, TCP and UDP
  (``probe.py``, the same judge as static queries);
* the **adjacencies** that are Full.

Solved when routing equals the healthy routing and every flow answers. A step is worse
when a flow that answered stops, an adjacency of the healthy network that was Full drops,
or a prefix a router had (and the healthy network has) disappears from its RIB. The score
adds the collateral diff (``collateral.py``) of every node's kernel state and every
router's running configuration against the healthy ones, outside the faults' footprint.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from netarena.common.core.errors import EmulatorError
from netarena.common.core.reactive import Command
from netarena.common.core.types import Query
from netarena.route.base.guarded import GuardedEpisode
from netarena.route.base.routing_kind import routing_kind
from netarena.route.frr.adjacencies import designed, faulted, read_adjacencies
from netarena.route.frr.bgp_faults import bgp_fault_lines
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.faults import ADJACENCY_FAULTS, fault_lines
from netarena.route.frr.final import hard_reset, soft_reset, tripping_limits
from netarena.route.frr.footprint import frr_footprint, masked
from netarena.route.frr.network import FrrNetwork
from netarena.route.frr.paths import Path, fib_path, traced_path
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.routing import Routing, judged, lost_routes
from netarena.route.frr.settle import settle
from netarena.route.judge.checks import describe_flow
from netarena.route.judge.errorbudget import judge_quiet
from netarena.route.judge.measure import ProbeTiming, measure, measure_patiently
from netarena.route.judge.pingall import PingMatrix
from netarena.route.judge.unseen import judge_unseen
from netarena.route.linux.kernel_objects import NodeState
from netarena.route.linux.namespaces import ip_batch
from netarena.route.sandbox.actions import Action

if TYPE_CHECKING:
    from netarena.route.base.config import RouteConfig

__all__ = ["FrrEpisode", "DynamicState", "dynamic_plan", "inject_faults"]

log = logging.getLogger(__name__)

HEALTHY_QUIET_S = 0.5
"""The healthy network is measured once every designed adjacency is up, every router
routes everywhere and routing stayed the same this long (SPF's longest hold is 0.2 s)."""
SETTLE_QUIET_S = 1.2
"""Routing must stay the same this long after a command that changed something (or the
injection) before it is measured: longer than OSPF's dead interval and ospfd's one-second
delay before external routes are recomputed. (Injected BGP faults act at once, each
resetting or updating its session; a BGP session an agent breaks silently may drop only
at a later step, or at the final score.)"""
QUICK_QUIET_S = 0.2
"""After a command that changed nothing routing reacts to (``FrrEpisode.changed``),
routing must stay the same only this long before it is measured."""
MARGIN_S = 0.5
"""Added to the plan's ``detect_s`` for the final score, so a neighbour broken silently
has gone down by then."""
FLAP_S = 1.0
"""An adjacency whose up-time restarted more than this later than measured before flapped."""


@dataclass(frozen=True)
class DynamicState:
    """What the judge measured after a step."""

    matrix: PingMatrix
    """The pingmesh."""
    routing: Routing
    """Every router's RIB and FIB."""
    adjacencies: frozenset[tuple[str, str]]
    """OSPF adjacencies and BGP sessions up (``adjacencies.Adjacencies.up``)."""
    up_since: dict[tuple[str, str], tuple[float, float]] = field(compare=False)
    """When each came up (``Adjacencies.since``)."""
    established: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)
    """Connections each BGP session has had (``Adjacencies.established``)."""
    paths: dict[tuple[str, str], Path | None] = field(default_factory=dict)
    """The ticket's flows → the routers they cross, traced (``paths.py``); measured only
    once routing equals the healthy routing (empty before)."""
    limits: tuple[str, ...] = ()
    """Final score: prefix limits that will trip again (``final.tripping_limits``)."""


def dynamic_plan(truth: dict[str, Any]) -> OspfPlan:
    """A dynamic query's plan, of the class its routing kind says (``BgpPlan`` or not)."""
    kind = BgpPlan if routing_kind(truth) == "bgp" else OspfPlan
    return kind.from_dict(truth["plan"])


def inject_faults(
    net: FrrNetwork, plan: OspfPlan, faults: list[dict[str, Any]], bounce: bool = True
) -> None:
    """Apply ``faults``: configuration lines with vtysh, kernel changes with ``ip``.

    With ``bounce``, an interface whose adjacency the fault breaks goes down and up, so
    the adjacency up now drops at once rather than at its dead interval.
    """
    for fault in faults:
        if isinstance(plan, BgpPlan):
            net.configure(fault["router"], bgp_fault_lines(fault, plan))
            if fault["type"] == "bgp-filter":
                # bgpd applies an edited prefix-list bound inbound to routes already
                # received only when they are read again
                net.vtysh(fault["router"], "clear bgp * soft in")
            continue
        lines, ip_lines = fault_lines(fault, plan)
        if lines:
            net.configure(fault["router"], lines)
        if ip_lines:
            ip_batch(ip_lines, net.netns(fault["router"]))
        if bounce and fault["type"] in ADJACENCY_FAULTS:
            net.bounce(fault["router"], fault["intf"])


class FrrEpisode(GuardedEpisode[DynamicState]):
    """A troubleshooting episode over a live OSPF network of FRR routers."""

    state_title = "Current state"

    def __init__(self, query: Query, config: RouteConfig) -> None:
        plan = dynamic_plan(query.truth)
        super().__init__(query, config, plan.nodes)
        self.plan = plan
        self.faults: list[dict[str, Any]] = query.truth["faults"]
        self.watch: list[tuple[str, str]] = [tuple(w) for w in query.truth["watch"]]
        self.timing = ProbeTiming(timeout_s=config.probe_timeout_s)
        nodes = self.plan.nodes
        self.want = frozenset((s, d) for s in nodes for d in nodes if s != d)
        try:
            self.net: FrrNetwork = FrrNetwork(self.plan)
            # Configuration and kernel state (routes aside) are final once the daemons
            # started, and the faults' once injected: read them while routing converges.
            self.net.healthy = self.net.read_states()
            self.healthy = self._settle_healthy()
            self.traced_at = 0.0
            """When the ticket's flows were last traced (monotonic)."""
            self.intended_paths = {w: p for w, p in self._traced().items() if p is not None}
            """The ticket's flows → the routers they crossed in the healthy network."""
            self.healthy_adjacencies = designed(self.plan) - faulted(self.plan, self.faults)
            self._inject()
            self.states = self.net.read_states()
            self.footprint = frr_footprint(self.plan, self.net.healthy, self.states, self.faults)
            self.quiet_since = time.monotonic()
            """When the last command (or the injection) ended: the final score's steady
            period counts from there (on BGP networks, from a later route change too)."""
            self.changed = True
            """Whether the last command changed anything routing reacts to (``_execute``)."""
            routing = settle(  # a break the faults made silently shows at a dead interval
                self.net,
                SETTLE_QUIET_S,
                30.0,
                since=self.quiet_since,
                silence_s=self.steady_silence_s,
            )
            if judged(routing) == judged(self.healthy):
                raise EmulatorError(f"{query.id}: the faults left routing as designed")
            matrix = measure(self.net, self.timing, None)
            initial = DynamicState(matrix, routing, *read_adjacencies(self.net, self.plan))
        except BaseException:
            self.close()
            raise
        self._begin(initial)

    @property
    def steady_silence_s(self) -> float:
        """How long after the last command the final score waits for a silent break."""
        return self.plan.detect_s + MARGIN_S

    def _settle_healthy(self, timeout_s: float = 30.0) -> Routing:
        """The healthy routing, once every designed adjacency and session is up.

        Raises:
            EmulatorError: The healthy network did not converge within ``timeout_s``.
        """
        end = time.monotonic() + timeout_s
        while True:
            routing = settle(
                self.net,
                HEALTHY_QUIET_S,
                end - time.monotonic(),
                complete=True,
            )
            if read_adjacencies(self.net, self.plan).up >= designed(self.plan):
                return routing
            if time.monotonic() >= end:
                raise EmulatorError(f"{self.query.id}: the healthy network never fully formed")

    def _traced(self) -> dict[tuple[str, str], Path | None]:
        """The ticket's flows → the routers they cross now, traced with real probes.

        The final score, with no command since the last step and no route changed since
        its traces, has the paths they found: forwarding is the same (tracing again
        within a second would meet the routers' ICMP rate limit).
        """
        events = self.net.route_events
        assert events is not None
        if self.final and self.state.paths and events.last < self.traced_at:
            return self.state.paths
        self.traced_at = time.monotonic()
        spaces = tuple(self.net.netns(node) for node in self.plan.nodes)
        with judge_quiet(spaces), judge_unseen(spaces):  # errorbudget.py, unseen.py
            return {(s, d): traced_path(self.net, self.plan, s, d) for s, d in self.watch}

    def _inject(self) -> None:
        inject_faults(self.net, self.plan, self.faults)

    def _execute(self, command: Command[Action]) -> tuple[str, int]:
        """Run the command, and tell whether it changed anything routing reacts to.

        A command changes routing's inputs only through its node's state (kernel objects,
        a router's FRR configuration), or acts at once on adjacencies, sessions or routes
        (a clear, a link bounced, a packet forged): all compared before and after. A
        command that changed none of them (any look) is measured without waiting out the
        dead interval: no process of it outlives it, so nothing it did acts later.
        """
        node = command.payload.machine
        before = self._state_of(node)
        routes_changed = self._routes_changed()
        try:
            return super()._execute(command)
        finally:
            self.changed = (
                before is None
                or self._state_of(node) != before
                or self._routes_changed() > routes_changed
                or not self._adjacencies_kept()
            )

    def _state_of(self, node: str) -> NodeState | None:
        """``node``'s state, a router's with its FRR configuration (None: unreadable)."""
        try:
            return self.net.read_state(node)
        except EmulatorError:
            return None

    def _adjacencies_kept(self) -> bool:
        """Whether the adjacencies the last step measured are up still, none restarted."""
        state = self.state
        now = read_adjacencies(self.net, self.plan)
        return now.same_as(state.adjacencies, state.up_since, state.established)

    def _routes_changed(self) -> float:
        """When any router's kernel routes last changed (monotonic)."""
        assert self.net.route_events is not None
        return self.net.route_events.last

    def _routing(self) -> Routing:
        """Routing after a step, once it stopped changing.

        The final score waits out the longest a neighbour broken silently stays up, even
        when routing already looks healthy, or until every neighbour was heard since:
        counted from the last command, not from the score, as even one that changed
        nothing the judge reads (a look) may have changed something it does not; on BGP
        networks from the last route change too (an iBGP session between loopbacks falls
        silent once the route to its peer went). Routing is then stable once ospfd is
        idle (OSPF networks), or stayed the same ``SETTLE_QUIET_S`` (BGP).
        """
        now = time.monotonic()
        if self.final:
            silence, want, since = self.steady_silence_s, None, self.quiet_since
            quiet = SETTLE_QUIET_S
        else:
            self.quiet_since = now
            quiet = silence = SETTLE_QUIET_S if self.changed else QUICK_QUIET_S
            want, since = self.healthy, now
        try:
            return settle(
                self.net,
                quiet,
                15.0,
                want=want,
                since=since,
                silence_s=silence,
                forming=self.final or self.changed,
            )
        except EmulatorError as exc:
            log.info("%s: %s", self.query.id, exc)
            return {"unsettled": {"error": str(exc)}}

    def _measure(self) -> DynamicState:
        if self.torn_down is not None:
            return DynamicState(PingMatrix(self.plan.nodes, frozenset()), {}, frozenset(), {}, {})
        state = self._state_with(self._routing())
        if self.final and self._solved(state):
            state = self._shown(state)
        return state

    def _state_with(
        self, routing: Routing, paths: dict[tuple[str, str], Path | None] | None = None
    ) -> DynamicState:
        """The state with ``routing``: the pingmesh, adjacencies and (healthy) paths."""
        before = self.state.matrix.flows
        expect = frozenset((s, d) for _, s, d in before) | (
            self.want if self.final else frozenset()
        )
        matrix = measure_patiently(self.net, self.timing, expect, frozenset(), before)
        if paths is None:
            paths = {}
            if judged(routing) == judged(self.healthy):  # only then can the paths hold
                paths = self._traced()
        return DynamicState(matrix, routing, *read_adjacencies(self.net, self.plan), paths)

    def _shown(self, state: DynamicState) -> DynamicState:
        """The final state once the network showed what its configuration will do.

        BGP policies applied again, then every session and OSPF process reset and the
        network measured once converged (``final.py``); a limit that will trip again is
        recorded. The paths traced before stand while routing is the same (forwarding
        is; tracing again at once meets the routers' ICMP rate limit).
        """
        try:
            if isinstance(self.plan, BgpPlan):
                state = self._state_with(soft_reset(self.net), state.paths)
                if not self._solved(state):
                    return state
            before = read_adjacencies(self.net, self.plan)
            state = self._state_with(hard_reset(self.net, before, state.routing), state.paths)
            return replace(state, limits=tuple(tripping_limits(self.net)))
        except EmulatorError as exc:
            log.info("%s: %s", self.query.id, exc)
            return replace(state, routing={"unsettled": {"error": str(exc)}})

    def _report(self, state: DynamicState) -> str:
        lines = [
            state.matrix.text(),
            "Paths of the flows in the ticket (from the forwarding tables):",
        ]
        for src, dst in self.watch:
            path = fib_path(
                self.plan, state.routing, self.plan.stub_of_host(src).router, self.plan.address(dst)
            )
            lines.append(f"- {src} -> {dst}: {src} {' '.join(path)} {dst}")
        return "\n".join(lines) + self.volatile_note()

    def _solved(self, state: DynamicState) -> bool:
        m = state.matrix
        return (
            judged(state.routing) == judged(self.healthy)
            and m.ok == self.want
            and m.tcp == self.want
            and m.udp == self.want
            and all(state.paths.get(w) == path for w, path in self.intended_paths.items())
            and not state.limits
            and not masked(self.plan, self.net.healthy, self.states)  # mtu-ignore: not repaired
            and self.guard_clear
        )

    def _regressions(self, before: DynamicState, after: DynamicState) -> list[str]:
        lost = [
            f"lost {describe_flow(f)}" for f in sorted(before.matrix.flows - after.matrix.flows)
        ]
        dropped = sorted((before.adjacencies - after.adjacencies) & self.healthy_adjacencies)
        lost += [f"adjacency {r} -> {n} dropped" for r, n in dropped]
        kept = before.adjacencies & after.adjacencies & self.healthy_adjacencies
        flapped = sorted(
            p
            for p in kept
            if after.up_since[p][0] - before.up_since[p][1] > FLAP_S
            or after.established.get(p, 0) > before.established.get(p, 0)
        )
        lost += [f"adjacency {r} -> {n} went down and came back" for r, n in flapped]
        lost += [
            f"{router} lost route {key[4:]}"
            for router, key in lost_routes(before.routing, after.routing, self.healthy)
        ]
        return lost

    def _details(self, state: DynamicState) -> dict[str, Any]:
        now, healthy = judged(state.routing), judged(self.healthy)
        wrong = sum(
            1
            for r, routes in healthy.items()
            for k in set(routes) | set(now.get(r, {}))
            if routes.get(k) != now.get(r, {}).get(k)
        )
        return {
            "wrong_routes": wrong,
            "wrong_flows": len(
                state.matrix.flows
                ^ {(p, s, d) for p in ("icmp", "tcp", "udp") for s, d in self.want}
            ),
            "adjacencies": len(state.adjacencies),
            "num_routers": len(self.plan.routers),
            "faults": ",".join(f"{f['type']}@{f['router']}" for f in self.faults),
        }
