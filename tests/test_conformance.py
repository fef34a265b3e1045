"""One conformance suite, run over every registered app (STYLE.md: like gymnasium's check_env).

For each app: the same seed gives the same query; the reference solver scores 100%
correctness and safety; the null agent scores about 0; close() is idempotent.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest

from netarena.common.core.agents import NullAgent
from netarena.common.core.app import app_names, load_app
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner

NEEDS_ROOT = {"route"}


SLOW_EPISODES = {"k8s"}
"""Apps whose episodes take seconds each (an API server per episode): their episode tests
run in the full tier only."""


def _apps(episodes: bool = False) -> list[pytest.param]:
    def marks(name: str) -> list[pytest.MarkDecorator]:
        if name in NEEDS_ROOT:
            return [pytest.mark.root, pytest.mark.slow]
        return [pytest.mark.slow] if episodes and name in SLOW_EPISODES else []

    return [pytest.param(name, marks=marks(name)) for name in app_names()]


def test_every_app_of_the_card_is_registered() -> None:
    assert {"malt", "route", "k8s"} <= set(app_names())


@pytest.mark.parametrize("name", _apps())
def test_generation_is_deterministic(name: str) -> None:
    app = load_app(name)
    for level in (1, 2, 3):
        a, b = app.generate(1234, level), load_app(name).generate(1234, level)
        assert a == b and a.level == level and a.app == name
        assert app.generate(1235, level).id != a.id


@pytest.mark.parametrize("name", _apps(episodes=True))
def test_reference_solves_everything_and_null_nothing(name: str) -> None:
    app = load_app(name)
    qs = plan_queries(app, QueryPlan(num_queries=6, seed=2026))
    ref = asyncio.run(Runner(app, app.reference_agent(), RunConfig(concurrency=3)).run(qs))
    failed = [(r.query_id, r.error, r.details) for r in ref if not (r.correct and r.safe)]
    assert not failed
    null = asyncio.run(Runner(app, NullAgent(), RunConfig(concurrency=3, max_turns=2)).run(qs))
    assert sum(r.correct for r in null) <= 0.1 * len(null)


@pytest.mark.parametrize("name", _apps())
def test_close_is_idempotent(name: str) -> None:
    app = load_app(name)
    episode = app.open(app.generate(7, 1))
    assert episode.observe()
    episode.close()
    episode.close()


_DIGEST = """
import hashlib, sys
from netarena.common.core.app import load_app
app = load_app(sys.argv[1])
h = hashlib.sha256()
for seed in (1, 2):
    for level in (1, 2, 3):
        h.update(app.generate(seed, level).model_dump_json().encode())
print(h.hexdigest())
"""


@pytest.mark.parametrize("name", app_names())
def test_generation_is_identical_across_processes(name: str) -> None:
    """Same seed, same query in another process with other hash seeds (no set-order or
    hash() leaks into generation)."""
    digests = {
        subprocess.run(
            [sys.executable, "-c", _DIGEST, name],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout.strip()
        for hash_seed in ("1", "2")
    }
    assert len(digests) == 1


def test_runtime_parameters_do_not_change_query_ids() -> None:
    """Timeouts, rewards and worker counts shape episodes, not queries."""
    assert load_app("malt", {"sandbox_workers": 3}).generate(5, 2) == load_app("malt").generate(
        5, 2
    )
    assert load_app("k8s", {"reward_fix": 1}).generate(5, 2) == load_app("k8s").generate(5, 2)
    route = load_app("route", {"probe_timeout_s": 0.5, "reward_unsafe": -1})
    assert route.generate(5, 2) == load_app("route").generate(5, 2)
