"""One route query played out: a faulted live network, one command per turn.

Each step parses the reply, runs the command inside the chosen node's namespace, measures
the pingmesh again, checks that no previously reachable pair was lost, and ends the
episode when nothing is dropped. Rewards follow the paper (−100 invalid, +10 valid, +100
fix) plus a configurable penalty for a step that breaks a working pair.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from netarena.common.app import Episode
from netarena.common.errors import InvalidAction
from netarena.common.types import Query, Score, StepResult
from netarena.route.actions import ForbiddenCommand, parse_reply
from netarena.route.checks import SafetyLedger, is_correct
from netarena.route.injection import build_faulted
from netarena.route.probe import PingMatrix, pingmesh
from netarena.route.prompts import HistoryEntry, render_observation
from netarena.route.topology import Network, TopologySpec

if TYPE_CHECKING:
    from netarena.route.generator import RouteConfig

__all__ = ["RouteEpisode"]

log = logging.getLogger(__name__)


class RouteEpisode(Episode):
    """A reactive troubleshooting episode over a live namespace network.

    Building it builds the network and injects verified faults; ``close()`` removes
    every namespace of the episode.
    """

    def __init__(self, query: Query, config: RouteConfig) -> None:
        super().__init__(query)
        self.config = config
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
        self.initial: PingMatrix = injected.matrix
        self.matrix: PingMatrix = injected.matrix
        self.history: list[HistoryEntry] = []
        self.ledger = SafetyLedger()
        self.invalid = 0

    @property
    def prefix(self) -> str:
        """This episode's namespace prefix."""
        return self.net.prefix

    def _probe(self) -> PingMatrix:
        return pingmesh(self.net, self.config.probe_timeout_s, self.config.probe_retry_timeout_s)

    def _observe(self) -> str:
        return render_observation(
            self.query.prompt, self.matrix.text(), self.history, len(self.history), None
        )

    def _reject(self, turn: int, reply: str, exc: InvalidAction) -> StepResult:
        self.invalid += 1
        forbidden = isinstance(exc, ForbiddenCommand)
        if forbidden:
            self.ledger.forbidden_commands += 1
        shown = reply.strip().replace("\n", " ")[:200]
        self.history.append(HistoryEntry(turn, None, shown, "", rejected=str(exc)))
        return StepResult(
            observation=f"rejected: {exc}",
            reward=self.config.reward_invalid,
            valid=False,
            info={"forbidden": forbidden},
        )

    def _step(self, action: str) -> StepResult:
        turn = len(self.history) + 1
        try:
            act = parse_reply(action, self.spec.nodes, self.prefix)
        except InvalidAction as exc:
            return self._reject(turn, action, exc)
        result = self.net.exec(act.machine, list(act.argv), self.config.command_timeout_s)
        self.history.append(
            HistoryEntry(turn, act.machine, act.command, result.output, result.returncode)
        )
        before, after = self.matrix, self._probe()
        self.matrix = after
        lost = self.ledger.record_step(before, after)
        done = is_correct(after)
        if lost:
            reward = self.config.reward_unsafe
        elif done:
            reward = self.config.reward_fix
        else:
            reward = self.config.reward_valid
        return StepResult(
            observation=f"{result.output}\n[exit {result.returncode}]\n\n{after.text()}",
            reward=reward,
            done=done,
            info={"lost_pairs": len(lost), "loss_pct": after.loss_pct},
        )

    def _score(self) -> Score:
        final = self._probe()
        self.matrix = final
        return Score(
            correct=is_correct(final),
            safe=self.ledger.safe,
            details={
                "loss_pct": round(final.loss_pct, 2),
                "initial_loss_pct": round(self.initial.loss_pct, 2),
                "num_subnets": self.spec.num_subnets,
                "hosts_per_subnet": self.spec.hosts_per_subnet,
                "faults": ",".join(f"{f['type']}:{f['method']}@{f['node']}" for f in self.faults),
                "injection_attempts": ",".join(str(a) for a in self.attempts),
                "invalid_actions": self.invalid,
                "forbidden_commands": self.ledger.forbidden_commands,
                "unsafe_steps": self.ledger.shrinking_steps,
            },
        )

    def _close(self) -> None:
        self.net.close()
