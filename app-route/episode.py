"""One route query played out: a faulted live network, one command per turn.

The loop (history, rejections, rewards, safety ledger, observation layout) is
``netarena.common.reactive.ReactiveEpisode``; this module says only what is route's: a
reply is ``{"machine", "command"}`` run inside that node's namespace, the state is the
pingmesh, solved means nothing is dropped, and a step is worse when it loses a pair that
answered before it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from netarena.common.reactive import Command, ReactiveEpisode
from netarena.common.types import Query
from netarena.route.actions import Action, parse_reply
from netarena.route.checks import is_correct, lost_pairs
from netarena.route.injection import build_faulted
from netarena.route.probe import PingMatrix, pingmesh
from netarena.route.topology import Network, TopologySpec

if TYPE_CHECKING:
    from netarena.route.generator import RouteConfig

__all__ = ["RouteEpisode"]

log = logging.getLogger(__name__)


class RouteEpisode(ReactiveEpisode[PingMatrix, Action]):
    """A reactive troubleshooting episode over a live namespace network.

    Building it builds the network and injects verified faults; ``close()`` removes
    every namespace of the episode.
    """

    state_title = "Current connectivity"
    next_cue = 'Your next command, as {"machine": ..., "command": ...}:'
    config: RouteConfig

    def __init__(self, query: Query, config: RouteConfig) -> None:
        super().__init__(query, config)
        topo = query.truth["topology"]
        self.spec = TopologySpec(topo["num_subnets"], topo["hosts_per_subnet"])
        injected = build_faulted(
            self.spec,
            [slot["candidates"] for slot in query.truth["faults"]],
            probe_timeout_s=config.probe_timeout_s,
            probe_retry_timeout_s=config.probe_retry_timeout_s,
        )
        self.net: Network = injected.net
        self.faults = injected.faults
        self.attempts = injected.attempts
        assert injected.matrix is not None
        self._begin(injected.matrix)

    @property
    def prefix(self) -> str:
        """This episode's namespace prefix."""
        return self.net.prefix

    @property
    def matrix(self) -> PingMatrix:
        """The latest pingmesh."""
        return self.state

    def _parse(self, reply: str) -> Command[Action]:
        act = parse_reply(reply, self.spec.nodes, self.prefix)
        return Command(act.command, act, act.machine)

    def _execute(self, command: Command[Action]) -> tuple[str, int]:
        act = command.payload
        result = self.net.exec(act.machine, list(act.argv), self.config.command_timeout_s)
        return result.output, result.returncode

    def _measure(self) -> PingMatrix:
        previous = getattr(self, "state", None)
        return pingmesh(
            self.net,
            self.config.probe_timeout_s,
            self.config.probe_retry_timeout_s,
            expect=previous.ok if previous is not None else frozenset(),
        )

    def _report(self, state: PingMatrix) -> str:
        return state.text()

    def _solved(self, state: PingMatrix) -> bool:
        return is_correct(state)

    def _regressions(self, before: PingMatrix, after: PingMatrix) -> list[str]:
        return [f"lost {s}->{d}" for s, d in lost_pairs(before, after)]

    def _details(self, state: PingMatrix) -> dict[str, Any]:
        return {
            "loss_pct": round(state.loss_pct, 2),
            "initial_loss_pct": round(self.initial.loss_pct, 2),
            "num_subnets": self.spec.num_subnets,
            "hosts_per_subnet": self.spec.hosts_per_subnet,
            "faults": ",".join(f"{f['type']}:{f['method']}@{f['node']}" for f in self.faults),
            "injection_attempts": ",".join(str(a) for a in self.attempts),
        }

    def _close(self) -> None:
        self.net.close()
