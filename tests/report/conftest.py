"""Real results for report tests: the core runner plays the toy app with three agents."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from netarena.common import NullAgent, Observation, QueryPlan, Runner, plan_queries
from tests.helpers.toy import ToyApp


class HalfAgent:
    """Solves only even targets (odd ones it overshoots): a mid-scoring, partly unsafe agent."""

    name = "toy-half"

    async def act(self, observation: Observation) -> str:
        target = int(re.search(r"reach (\d+)", observation.text).group(1))
        value = int(re.search(r"value=(-?\d+)", observation.text).group(1))
        return f"add {target - value}" if target % 2 == 0 else f"add {target + 1}"


def play(app: ToyApp, agent, n: int, out: Path, seed: int = 7) -> Path:
    queries = plan_queries(app, QueryPlan(num_queries=n, seed=seed))
    asyncio.run(Runner(app, agent).run(queries, out=out))
    return out


@pytest.fixture(scope="session")
def toy_results(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three results files (reference, half, null) from real runs of 120 toy queries each."""
    root = tmp_path_factory.mktemp("toy-results")
    app = ToyApp()
    return [
        play(app, app.reference_agent(), 120, root / "reference" / "results.jsonl"),
        play(app, HalfAgent(), 120, root / "half" / "results.jsonl"),
        play(app, NullAgent(), 120, root / "null.jsonl"),
    ]
