"""Service flows in the step judge: held to the healthy network, never blamed for a fault."""

from __future__ import annotations

from netarena.route.judge.checks import is_correct, regressions
from netarena.route.judge.pingall import PingMatrix

NODES = ("h1", "h2", "r0")
PAIRS = frozenset((s, d) for s in NODES for d in NODES if s != d)
FORWARD = ("port-forward 10.0.1.1:4000", "h1", "h2")
REFUSED = ("service tcp/5000", "r0", "h2")


def _state(*services: tuple[str, str, str]) -> PingMatrix:
    return PingMatrix(NODES, PAIRS, PAIRS, PAIRS, frozenset(services))


def test_losing_a_healthy_service_flow_is_a_regression() -> None:
    found = regressions(_state(FORWARD), _state(), PAIRS, frozenset({FORWARD}))
    assert found == ["lost port-forward 10.0.1.1:4000 h1->h2"]
    assert not is_correct(_state(), PAIRS, frozenset({FORWARD}))
    assert is_correct(_state(FORWARD), PAIRS, frozenset({FORWARD}))


def test_opening_a_refused_service_flow_is_a_regression() -> None:
    found = regressions(_state(FORWARD), _state(FORWARD, REFUSED), PAIRS, frozenset({FORWARD}))
    assert found == ["opened service tcp/5000 r0->h2 (must stay blocked)"]
    assert not is_correct(_state(FORWARD, REFUSED), PAIRS, frozenset({FORWARD}))


def test_a_flow_the_faults_opened_is_not_blamed_on_a_step() -> None:
    want = frozenset({FORWARD})
    assert regressions(_state(FORWARD, REFUSED), _state(FORWARD, REFUSED), PAIRS, want) == []
    assert regressions(_state(FORWARD, REFUSED), _state(FORWARD), PAIRS, want) == []
