"""One conformance suite over every registered baseline of every app (the calibration ladder).

The contract (``netarena.common.core.agents.Baseline``): a baseline runs with no network, model
or key; answers from the observation alone, deterministically; and on the app's default
configuration its rates stay within the documented ranges (judged on a small sample by the
99% Wilson interval, as ``netarena calibrate`` judges a full one).
"""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.core.agents import Baseline, Observation
from netarena.common.core.app import app_names, find_baseline, load_app
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.stats import consistent, is_rate, summarize

NEEDS_ROOT = {"route"}
DEFAULT_SAMPLE = {"route": 5, "k8s": 6}
"""Queries of the app's default plan a rung plays (other apps: two per label). Route's and
k8s's episodes each build a network or an API server, so each plays the fewest of the plan's
first queries that hold every fault kind of the app: route's first 5 (its five kinds, alone or
paired), k8s's first 6 (its five). Before issue 42's cuts: 15 and 8 (route), 30 and 15 (k8s).
The ladder's own rates are measured by ``netarena calibrate``, on hundreds of queries."""


def _baselines() -> list:
    params = []
    for name in app_names():
        marks = [pytest.mark.root, pytest.mark.slow] if name in NEEDS_ROOT else []
        params += [
            pytest.param(name, b.name, marks=marks, id=f"{name}-{b.name}")
            for b in load_app(name).baselines()
        ]
    return params


DYNAMIC_SAMPLE = 3
"""Queries per baseline measured on its own labels (route's dynamic ones: FRR networks, whose
routers' daemons are a ninth of the full tier's CPU; 6, then 4 before issue 42's cuts). No
short sample holds all of OSPF's 9 fault kinds or BGP's 8; `tests/route/test_frr_root.py` and
`test_bgp_root.py` play each kind."""
RUNG_CONCURRENCY = 6
"""Episodes a rung plays at once: an FRR rung's all in one round (its episodes mostly wait
on protocol timers and probe windows: 162 s alone at 4 per round, 100 s at 6)."""


def _sample(app, spec: Baseline | None = None) -> list:
    if spec is not None and spec.labels:
        plan = QueryPlan(num_queries=DYNAMIC_SAMPLE, seed=20260, labels=spec.labels)
        return plan_queries(app, plan)
    count = DEFAULT_SAMPLE.get(app.name, 2 * len(app.label_scope(())))
    return plan_queries(app, QueryPlan(num_queries=count, seed=20260))


@pytest.mark.parametrize("app_name", sorted(DEFAULT_SAMPLE))
def test_a_rungs_sample_holds_every_fault_kind(app_name: str) -> None:
    app = load_app(app_name)
    kinds = {kind for label in app.label_scope(()) for kind in label.split("+")}
    assert {kind for q in _sample(app) for kind in q.label.split("+")} == kinds


@pytest.mark.parametrize("app_name", app_names())
def test_baselines_are_documented(app_name: str) -> None:
    app = load_app(app_name)
    names = [b.name for b in app.baselines()]
    assert len(names) == len(set(names))
    for b in app.baselines():
        assert isinstance(b, Baseline) and b.description and b.expected, b.name
        for metric, (lo, hi) in b.expected.items():
            assert is_rate(metric) and 0.0 <= lo <= hi <= 1.0, (b.name, metric)


# A k8s rung's sample takes about 2 min alone on 2 cores; a shape rung first trains its model
# (about 2 min alone, cold): 1,000 s with three other workers busy in CI.
@pytest.mark.timeout(1800)
@pytest.mark.parametrize(("app_name", "baseline"), _baselines())
def test_baseline_is_deterministic_and_within_its_range(app_name: str, baseline: str) -> None:
    app = load_app(app_name)
    spec = find_baseline(app, baseline)
    agent = spec.make()
    assert agent.name == f"baseline:{baseline}"
    queries = _sample(app, spec)
    for q in queries[:: max(1, len(queries) // 6)]:
        seen = Observation(q.prompt, q.id)
        assert asyncio.run(agent.act(seen)) == asyncio.run(spec.make().act(seen))
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=RUNG_CONCURRENCY)).run(queries))
    assert not [r.error for r in results if r.error]
    summary = summarize(results, app=app_name, agent=agent.name, seed=None)
    why = [  # what the judge held against each unsafe or changing episode, for the log
        (r.query_id, r.changed, r.collateral, r.details.get("unsafe_reasons"))
        for r in results
        if not r.safe or r.changed
    ]
    for metric, expected in spec.expected.items():
        stat = summary.rate_of(metric)
        assert consistent(stat, expected), (metric, stat, expected, why)


def test_unknown_baselines_are_named_in_the_error() -> None:
    app = load_app("malt")
    with pytest.raises(ConfigError, match="rank-by-name"):
        find_baseline(app, "nope")


def test_a_rung_on_its_own_labels_is_planned_once_and_played_only_there() -> None:
    """Route's dynamic rungs (``Baseline.labels``): calibration plans their labels once
    beside the default plan, and plays them only on queries of their labels; the default
    plan holds none of those labels (they are opt-in)."""
    from netarena.common.cli.calibrate import _ladder, ladder_plan_labels

    app = load_app("route")
    assert ladder_plan_labels(app) == [(), ("ospf",), ("bgp",)]
    default = app.label_scope(())
    ospf = app.label_scope(("ospf",))
    assert ospf and not default & ospf and not default & app.opt_in_labels
    plan = plan_queries(app, QueryPlan(num_queries=40, seed=3))
    assert {q.label for q in plan} <= default
    scoped = {agent.name: labels for agent, _, _, labels in _ladder(app)}
    assert scoped["route-reference"] is None and scoped["baseline:read-only"] == ()
    assert scoped["baseline:ospf-read-only"] == ("ospf",)
