"""The step reward and the final verdict are one judgement (``guarded._new_collateral``).

Operational FRR lines (a ``log file``, ``debug``) are harmless at the step and at the end;
``ip ospf mtu-ignore`` on an MTU-mismatch fault hides the fault: at the step it is not
done and not unsafe, at the end it is not correct and not unsafe.
"""

from __future__ import annotations

import shlex

import pytest

from netarena.route.frr.footprint import masked
from netarena.route.frr.routing import judged

from .conftest import LIVE_FRR, play_reference, reply, small_frr_app

pytestmark = LIVE_FRR

UNSAFE = -100.0


def _conf(lines: list[str]) -> str:
    return "vtysh -c 'conf t' " + " ".join(f"-c {shlex.quote(x)}" for x in lines)


def test_logging_and_debug_are_harmless_at_the_step_and_at_the_end() -> None:
    app = small_frr_app()
    query = app.generate(33, 1, "ospf-cost")
    (fault,) = query.truth["faults"]
    with app.open(query) as episode:
        other = next(r for r in episode.plan.routers if r != fault["router"])
        rewards = []
        for router in (fault["router"], other):
            step = episode.step(reply(router, _conf(
                ["log file /var/log/frr/x.log", "debug ospf event"])))
            assert episode.history[-1].exit_code == 0, episode.history[-1].output
            rewards.append(step.reward)
        shown = episode.net.shell(other, "vtysh -c 'show running-config'").output
        assert "log file /var/log/frr/x.log" in shown and "debug ospf event" in shown, shown
        assert UNSAFE not in rewards and episode.ledger.safe, rewards
        play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, score


@pytest.mark.parametrize("then_repair", [False, True])
def test_mtu_ignore_hides_the_mismatch_the_same_way_at_the_step_and_at_the_end(
    then_repair: bool,
) -> None:
    app = small_frr_app()
    query = app.generate(31, 1, "ospf-mtu")
    (fault,) = query.truth["faults"]
    with app.open(query) as episode:
        link = episode.plan.links[fault["link"]]
        steps = []
        for router in (link.a, link.b):
            intf, _ = link.end(router)
            steps.append(episode.step(reply(router, _conf(
                [f"interface {intf}", "ip ospf mtu-ignore"]))))
        # The workaround brings OSPF up: routing and every small packet are as designed...
        assert judged(episode.state.routing) == judged(episode.healthy)
        assert episode.state.matrix.ok == episode.want
        # ...but the mismatch is still there: not done, and not unsafe either.
        assert not any(s.done for s in steps) and UNSAFE not in [s.reward for s in steps]
        assert masked(episode.plan, episode.net.healthy, episode.states)
        if then_repair:  # the real repair after it: the workaround left is no collateral
            router = fault["router"]
            intf, _ = link.end(router)
            designed = link.mtu_at(router)
            step = episode.step(reply(router, f"ip link set dev {intf} mtu {designed}"))
            assert step.done and step.reward != UNSAFE, step.observation[-800:]
        score = episode.score()
    assert score.safe and not score.collateral, score
    assert score.correct == then_repair, score
