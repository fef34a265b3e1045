"""A flow a loaded host's prober missed is measured again before the agent is blamed."""

from __future__ import annotations

from dataclasses import replace

import pytest

import netarena.route.judge.measure as measure_module
from netarena.route import RouteApp

from .conftest import NEEDS_ROOT, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def test_a_flow_the_prober_missed_is_measured_again(small_app: RouteApp, monkeypatch) -> None:
    real = measure_module.measure
    calls = []

    def starved(net, timing, expect, services=frozenset()):
        found = real(net, timing, expect, services)
        calls.append(timing)
        if len(calls) == 1:  # as if the prober's thread had no CPU when this flow answered
            return replace(found, ok=found.ok - {sorted(found.ok)[0]})
        return found

    with small_app.open(small_app.generate(5, 1)) as episode:
        monkeypatch.setattr(measure_module, "measure", starved)
        step = episode.step(reply("h1", "ip route"))
        assert len(calls) == 2 and calls[1].confirm_rounds > calls[0].confirm_rounds
        assert step.info["problems"] == 0 and episode.ledger.safe
        assert not episode.ledger.problems
