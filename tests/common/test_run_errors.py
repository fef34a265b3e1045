"""A run whose queries all end in an error says so and exits 1 (ABC T.3).

Before: with the agent's endpoint or model API unreachable, every query failed with the
same transport error and ``netarena run`` printed an ordinary-looking scorecard (solved
safely 0.000) and exited 0, so a dead connection passed for an agent's score.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import netarena.common.training.runspec as runspec
from netarena.common.cli.root import cli
from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError


class _Down:
    def __init__(self, fail_every: int) -> None:
        self.name = "down"
        self.calls = 0
        self.fail_every = fail_every

    async def act(self, observation: Observation) -> str:
        self.calls += 1
        if self.calls % self.fail_every == 0:
            raise AgentError("cannot connect to http://127.0.0.1:9/")
        return ""


def _run(monkeypatch: pytest.MonkeyPatch, fail_every: int, n: int) -> tuple[int, str]:
    agent = _Down(fail_every)
    monkeypatch.setattr(runspec, "make_agent", lambda spec, app: agent)
    result = CliRunner().invoke(cli, ["run", "malt", "-n", str(n), "--seed", "2",
                                      "--concurrency", "1", "--max-turns", "1"])
    return result.exit_code, " ".join(result.output.split())  # rich wraps long lines


def test_a_run_where_every_query_errs_warns_and_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _run(monkeypatch, fail_every=1, n=3)
    assert code == 1, output
    assert "3 of 3 queries ended in an error" in output
    assert "cannot connect to http://127.0.0.1:9/" in output and "not the agent" in output


def test_half_erring_warns_and_fewer_say_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _run(monkeypatch, fail_every=2, n=4)
    assert code == 0 and "2 of 4 queries ended in an error" in output
    code, output = _run(monkeypatch, fail_every=4, n=4)
    assert code == 0 and "ended in an error" not in output
