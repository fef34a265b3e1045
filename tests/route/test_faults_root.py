"""Every fault method breaks a live network and the reference solver repairs it."""

from __future__ import annotations

import asyncio
import random

import pytest

from netarena.common.agents import Observation
from netarena.route import METHODS, RouteApp, TopologySpec, sample_fault
from netarena.route.episode import RouteEpisode
from netarena.route.solver import ReferenceRouteAgent

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]

SPEC = TopologySpec(2, 2)
CASES = [(k, m, "r0") for k, ms in METHODS.items() for m in ms]
CASES += [(k, m, "host") for k in ("DI", "RI") for m in METHODS[k]]
CASES += [("WR", "unreachable_gateway", "host")]


def _fault_on(kind: str, method: str, where: str) -> dict:
    for attempt in range(200):
        fault = sample_fault(random.Random(f"t/{kind}/{method}/{attempt}"), SPEC, kind, method)
        if (fault["node"] == "r0") == (where == "r0"):
            return fault
    raise AssertionError("no candidate on the wanted node")


def play(episode: RouteEpisode, max_turns: int = 30) -> int:
    agent = ReferenceRouteAgent()
    for turn in range(max_turns):
        reply = asyncio.run(agent.act(Observation(episode.observe(), "c", turn)))
        if episode.step(reply).done:
            return turn + 1
    return max_turns


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "method", "where"), CASES)
def test_method_breaks_and_is_repaired(kind: str, method: str, where: str) -> None:
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    query = app.generate(1, 1, kind)
    fault = _fault_on(kind, method, where)
    truth = {**query.truth, "faults": [{"type": kind, "candidates": [fault]}]}
    episode = app.open(query.model_copy(update={"truth": truth}))
    try:
        assert episode.faults == [fault]
        assert episode.attempts == [1]
        assert not episode.matrix.healthy, "the injection must break connectivity"
        turns = play(episode)
        score = episode.score()
        assert score.correct, episode.matrix.text()
        assert score.safe, episode.ledger
        assert turns <= app.default_max_turns
    finally:
        episode.close()


def test_dud_candidate_is_resampled(small_app: RouteApp) -> None:
    """A candidate that cannot be applied or changes nothing is skipped, deterministically."""
    query = small_app.generate(2, 1, "DR")
    dud = {
        "type": "DR",
        "method": "forward_drop_subnet",
        "subnet": 9,
        "other": 1,
        "node": "r0",
        "intf": "r0-eth1",
    }  # a subnet that does not exist: no effect
    good = _fault_on("DR", "ip_forward_off", "r0")
    truth = {**query.truth, "faults": [{"type": "DR", "candidates": [dud, good]}]}
    with small_app.open(query.model_copy(update={"truth": truth})) as episode:
        assert episode.attempts == [2]
        assert episode.faults == [good]
        assert episode.score().details["injection_attempts"] == "2"
