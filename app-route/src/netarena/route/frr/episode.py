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

import ipaddress
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from netarena.common.core.errors import EmulatorError
from netarena.common.core.types import Query
from netarena.route.checks import describe_flow
from netarena.route.collateral import footprint
from netarena.route.frr.bgp_faults import bgp_fault_lines
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.faults import ADJACENCY_FAULTS, fault_lines
from netarena.route.frr.network import FrrNetwork
from netarena.route.frr.paths import Path, traced_path
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.routing import Routing, judged
from netarena.route.frr.settle import Watch, settle
from netarena.route.guarded import GuardedEpisode
from netarena.route.injection import ProbeTiming, measure, measure_patiently
from netarena.route.namespaces import ip_batch
from netarena.route.pingall import PingMatrix

if TYPE_CHECKING:
    from netarena.route.config import RouteConfig

__all__ = ["FrrEpisode", "DynamicState", "fib_path"]

log = logging.getLogger(__name__)

HEALTHY_QUIET_S = 0.5
"""The healthy network is measured once every designed adjacency is up, every router
routes everywhere and routing stayed the same this long (SPF's longest hold is 0.2 s)."""
SETTLE_QUIET_S = 1.2
"""Routing must stay the same this long after a command (or the injection) before it is
measured: longer than OSPF's dead interval and ospfd's one-second delay before external
routes are recomputed. (Injected BGP faults act at once, each resetting or updating its
session; a BGP session an agent breaks silently may drop only at a later step, or at
the final score.)"""
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
    """``(router, neighbour router id)`` pairs in state Full at both ends, and
    ``(router, "BGP <peer router>")`` for BGP sessions Established at both ends."""
    up_since: dict[tuple[str, str], tuple[float, float]] = field(compare=False)
    """When each Full adjacency came up: monotonic ``(earliest, latest)``, from its up-time
    and the times the query was sent and answered."""
    established: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)
    """How many times each BGP session has been established (FRR's up-time is in whole
    seconds; one more connection is a flap however quick)."""
    paths: dict[tuple[str, str], Path | None] = field(default_factory=dict)
    """The ticket's flows → the routers they cross, traced (``paths.py``); measured only
    once routing equals the healthy routing (empty before)."""


def fib_path(plan: OspfPlan, routing: Routing, src: str, dst_ip: str) -> list[str]:
    """The routers a packet from router ``src`` to ``dst_ip`` crosses, per the kernel FIBs."""
    owner = {
        ip: link.b if ip == link.b_ip else link.a
        for link in plan.links
        for ip in (link.a_ip, link.b_ip)
    }
    address = ipaddress.IPv4Address(dst_ip)
    path, node = [src], src
    while len(path) <= len(plan.routers):
        best = None
        for key, value in routing.get(node, {}).items():
            if key.startswith("hop ") and key[4:] != "default":
                net = ipaddress.IPv4Network(key[4:], strict=False)
                if address in net and (best is None or net.prefixlen > best[0].prefixlen):
                    best = (net, value)
        if best is None:
            return [*path, "(no route)"]
        hops = best[1].split(",")
        gateway = hops[0].split("@")[0]
        if gateway == "direct":
            return path
        node = owner.get(gateway, gateway)
        path.append(node)
    return [*path, "(loop)"]


class FrrEpisode(GuardedEpisode[DynamicState]):
    """A troubleshooting episode over a live OSPF network of FRR routers."""

    state_title = "Current state"

    def __init__(self, query: Query, config: RouteConfig) -> None:
        kind = BgpPlan if query.truth.get("kind") == "bgp" else OspfPlan
        plan = kind.from_dict(query.truth["plan"])
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
            self.intended_paths = {w: p for w, p in self._traced().items() if p is not None}
            """The ticket's flows → the routers they crossed in the healthy network."""
            self.healthy_adjacencies = self._designed_adjacencies() - self._faulted_adjacencies()
            self._inject()
            self.footprint = footprint(self.net.healthy, self.net.read_states())
            self.kernel_watch = Watch()
            """The kernel routes since the last command (or the injection), and since when
            they stayed so: the final score's steady period counts from there."""
            routing = settle(
                self.net, SETTLE_QUIET_S, 30.0, idle=self.idle_settles, watch=self.kernel_watch
            )
            if judged(routing) == judged(self.healthy):
                raise EmulatorError(f"{query.id}: the faults left routing as designed")
            initial = DynamicState(
                measure(self.net, self.timing, None), routing, *self._adjacencies()
            )
        except BaseException:
            self.close()
            raise
        self._begin(initial)

    @property
    def idle_settles(self) -> bool:
        """Whether open() may stop waiting once ospfd is idle (``settle.settle``).

        Only OSPF networks: bgpd's work ahead is not visible the same way.
        """
        return not isinstance(self.plan, BgpPlan)

    @property
    def steady_quiet_s(self) -> float:
        """How long routing must stay the same for the final score."""
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
                idle=self.idle_settles,
            )
            if self._adjacencies()[0] >= self._designed_adjacencies():
                return routing
            if time.monotonic() >= end:
                raise EmulatorError(f"{self.query.id}: the healthy network never fully formed")

    def _designed_adjacencies(self) -> frozenset[tuple[str, str]]:
        """Every OSPF adjacency and BGP session the design has, both ends."""
        plan = self.plan
        ospf_links = (
            [x for x in plan.links if plan.internal(x)] if isinstance(plan, BgpPlan) else plan.links
        )
        found = {
            (router, plan.loopbacks[link.peer(router)])
            for link in ospf_links
            for router in (link.a, link.b)
        }
        if isinstance(plan, BgpPlan):
            found |= {
                (router, f"BGP {session.peer(router)}")
                for session in plan.sessions
                for router in (session.a, session.b)
            }
        return frozenset(found)

    def _traced(self) -> dict[tuple[str, str], Path | None]:
        """The ticket's flows → the routers they cross now, traced with real probes."""
        return {(s, d): traced_path(self.net, self.plan, s, d) for s, d in self.watch}

    def _inject(self) -> None:
        for fault in self.faults:
            if isinstance(self.plan, BgpPlan):
                self.net.configure(fault["router"], bgp_fault_lines(fault, self.plan))
                continue
            lines, ip_lines = fault_lines(fault, self.plan)
            if lines:
                self.net.configure(fault["router"], lines)
            if ip_lines:
                ip_batch(ip_lines, self.net.netns(fault["router"]))
            if fault["type"] in ADJACENCY_FAULTS:
                self.net.bounce(fault["router"], fault["intf"])

    def _faulted_adjacencies(self) -> frozenset[tuple[str, str]]:
        """Adjacencies over the links the faults touched: any repair resets them."""
        found = set()
        for fault in self.faults:
            if fault.get("session") is not None and isinstance(self.plan, BgpPlan):
                session = self.plan.sessions[fault["session"]]
                found |= {(session.a, f"BGP {session.b}"), (session.b, f"BGP {session.a}")}
            if fault.get("link") is not None:
                link = self.plan.links[fault["link"]]
                found |= {
                    (link.a, self.plan.loopbacks[link.b]),
                    (link.b, self.plan.loopbacks[link.a]),
                }
        return frozenset(found)

    def _adjacencies(
        self,
    ) -> tuple[
        frozenset[tuple[str, str]],
        dict[tuple[str, str], tuple[float, float]],
        dict[tuple[str, str], int],
    ]:
        """Full adjacencies and Established sessions, when each came up, and connections.

        How many times each BGP session has been established is counted too (a router
        without a daemon has no adjacencies or sessions).
        """
        up: dict[tuple[str, str], tuple[float, float]] = {}
        neighbours = self.net.ask_all("ospfd", "show ip ospf neighbor json")
        for router, (sent, answered, data) in neighbours:
            for neighbour, entries in (data.get("neighbors") or {}).items():
                for entry in entries if isinstance(entries, list) else [entries]:
                    state = str(entry.get("nbrState") or entry.get("state") or "")
                    if state.startswith("Full"):
                        age = entry.get("upTimeInMsec", 0) / 1000
                        up[(router, neighbour)] = (sent - age, answered - age)
        rid = {lo: router for router, lo in self.plan.loopbacks.items()}
        both = {  # up only when both ends see Full (a network-type mismatch is Full one way)
            (r, n): since
            for (r, n), since in up.items()
            if (rid.get(n), self.plan.loopbacks[r]) in up
        }
        established = self._sessions(up) if isinstance(self.plan, BgpPlan) else {}
        both.update(
            {(r, p): up[(r, p)] for r, p in established if (p[4:], f"BGP {r}") in established}
        )
        return frozenset(both), both, established

    def _sessions(
        self, up: dict[tuple[str, str], tuple[float, float]]
    ) -> dict[tuple[str, str], int]:
        """``(router, "BGP <peer>")`` → connections established, for Established sessions.

        Their up-times go into ``up``.
        """
        assert isinstance(self.plan, BgpPlan)
        found: dict[tuple[str, str], int] = {}
        for router, (sent, answered, data) in self.net.ask_all("bgpd", "show bgp neighbors json"):
            peers = {s.addr(s.peer(router)): s.peer(router) for s in self.plan.sessions_of(router)}
            for address, entry in data.items():
                if address in peers and entry.get("bgpState") == "Established":
                    key = (router, f"BGP {peers[address]}")
                    age = entry.get("bgpTimerUpMsec", 0) / 1000
                    up[key] = (sent - age - 1.0, answered - age)  # whole seconds
                    found[key] = int(entry.get("connectionsEstablished", 0))
        return found

    def _routing(self) -> Routing:
        """Routing after a step, once it stopped changing.

        The final score waits out a whole steady period even when routing already looks
        healthy, so a neighbour broken silently is seen down; the period counts from the
        last command (routing unchanged since the step measured it), not from the score.
        """
        if self.final:
            quiet, want = self.steady_quiet_s, None
        else:
            quiet, want = SETTLE_QUIET_S, self.healthy
            self.kernel_watch = Watch()  # a command just ran: quiet from now on
        try:
            return settle(self.net, quiet, 15.0, want=want, watch=self.kernel_watch)
        except EmulatorError as exc:
            log.info("%s: %s", self.query.id, exc)
            return {"unsettled": {"error": str(exc)}}

    def _measure(self) -> DynamicState:
        if self.torn_down is not None:
            return DynamicState(PingMatrix(self.plan.nodes, frozenset()), {}, frozenset(), {}, {})
        routing = self._routing()
        before = self.state.matrix.flows
        expect = frozenset((s, d) for _, s, d in before) | (
            self.want if self.final else frozenset()
        )
        matrix = measure_patiently(self.net, self.timing, expect, frozenset(), before)
        paths = {}
        if judged(routing) == judged(self.healthy):  # only then can the paths hold
            paths = self._traced()
        adjacencies, up_since, established = self._adjacencies()
        return DynamicState(matrix, routing, adjacencies, up_since, established, paths)

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
        for router, routes in before.routing.items():
            for key in routes:
                if (
                    key.startswith("rib ")
                    and key in self.healthy.get(router, {})
                    and key not in after.routing.get(router, {})
                ):
                    lost.append(f"{router} lost route {key[4:]}")
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
