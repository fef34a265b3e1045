"""No free guesses: agents that read nothing stay at or under 0.3 solved safely (issue 19).

Each blind strategy (``netarena.k8s.blind``) patches from the probe report, the runbook and
fault-family knowledge alone. Over 45 queries (three per label) each solves at most 0.3 of
them safely; every write it sends is blind (it never reads a policy).
"""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.k8s import K8sApp

pytestmark = pytest.mark.slow


@pytest.mark.timeout(900)  # 30 episodes took 6 min on 2 busy cores; 20 here
@pytest.mark.parametrize("name", ["runbook-rerender", "add-only", "test-guarded"])
def test_blind_strategies_solve_at_most_three_in_ten(name: str) -> None:
    app = K8sApp()
    queries = plan_queries(app, QueryPlan(num_queries=20, seed=31))
    agent = find_baseline(app, name).make()
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=2)).run(queries))
    assert not [r.error for r in results if r.error]
    solved = [r for r in results if r.correct and r.safe and not r.collateral]
    assert len(solved) <= 0.3 * len(results), (name, len(solved))
    writes = [r for r in results if r.details.get("write_attempts")]
    # The first write to each policy is blind (a later one follows the agent's own write),
    # so no episode of theirs is solved safely.
    assert writes and all(r.blind_writes >= 1 for r in writes)
