"""Verified injection backs up when a later fault cannot add any loss."""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.agents import Observation
from netarena.common.app import load_app

pytestmark = [pytest.mark.root]


def test_combination_needing_backtracking_is_still_injected() -> None:
    # DI+DT on 2 subnets: the first DI candidate takes r0's subnet-2 link down and every DT
    # candidate drops subnet 2's traffic, which is then already cut. Without backtracking
    # the query could not be opened (seen in a 30-query run).
    app = load_app("route")
    query = app.generate(1211118078, 3, "DI+DT")
    first_di = query.truth["faults"][0]["candidates"][0]
    assert (first_di["node"], first_di["subnet"]) == ("r0", 2)
    assert {c["subnet"] for c in query.truth["faults"][1]["candidates"]} == {2}
    episode = app.open(query)
    try:
        kinds = [f["type"] for f in episode.faults]
        assert kinds == ["DI", "DT"]
        assert episode.faults[0] != first_di
        assert episode.attempts[0] > 1
        assert "dropped" in episode.observe()
    finally:
        episode.close()


def test_address_fix_is_not_judged_unsafe_while_arp_resolves() -> None:
    # Deleting a wrong primary address makes the host answer from the right one; the
    # router's neighbour entry for it may still be resolving, so the first echoes go
    # unanswered. The probe must confirm a "lost" pair patiently instead of flagging the
    # fix as unsafe (seen in a 150-query run).
    app = load_app("route")
    episode = app.open(app.generate(1149710036, 3, "DI+RI"))
    agent = app.reference_agent()
    try:
        for turn in range(app.default_max_turns):
            text = episode.observe()
            if episode.step(asyncio.run(agent.act(Observation(text, "regression", turn)))).done:
                break
        score = episode.score()
        assert score.correct and score.safe, score.details
    finally:
        episode.close()
