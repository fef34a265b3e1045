"""Failure-targeted generation: an imperfect agent's adaptive plan concentrates on the labels
it fails, keeps every label covered, is reproducible, and is reported apart from the
uniform set."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.app import load_app
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner, read_results
from netarena.common.core.types import QueryResult
from netarena.common.training.adaptive import ADAPTIVE_SUFFIX, adaptive_plan, apportion
from netarena.common.training.runspec import RunSpec
from tests.helpers.agents import FailsOn

FAILING = {"rank", "remove-rank", "loop-add"}


@pytest.fixture(scope="module")
def uniform(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A uniform run (4 queries per label) of an agent that fails three MALT labels."""
    app = load_app("malt")
    queries = plan_queries(app, QueryPlan(num_queries=4, per_label=True, seed=1))
    agent = FailsOn.on_labels(app.reference_agent(), FAILING).expect(queries)
    out = tmp_path_factory.mktemp("uniform") / "results.jsonl"
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=4)).run(queries, out=out))
    assert {r.label for r in results if not r.correct} == FAILING
    return out


def _spec(n: int, seed: int) -> RunSpec:
    return RunSpec(app="malt", agent="reference", plan=QueryPlan(num_queries=n, seed=seed))


def test_an_adaptive_run_concentrates_on_the_failing_labels_reproducibly(uniform: Path) -> None:
    results = read_results(uniform)
    spec = _spec(120, 7).with_adaptive(results, str(uniform), floor=0.2)
    queries = [q for _, qs in spec.groups() for q in qs]
    counts = Counter(q.label for q in queries)
    assert len(queries) == 120
    assert sum(counts[lb] for lb in FAILING) > 0.35 * 120  # 3 of 21 labels: 14% if uniform
    assert all(counts[lb] < counts[f] for lb in counts if lb not in FAILING for f in FAILING)
    assert set(counts) == {lb for lbs in load_app("malt").labels.values() for lb in lbs}

    again = _spec(120, 7).with_adaptive(read_results(uniform), str(uniform), floor=0.2)
    assert again.adaptive == spec.adaptive  # the same slots: the same queries
    other = _spec(120, 8).with_adaptive(results, str(uniform), floor=0.2)
    assert Counter(s.label for s in other.adaptive.slots) == counts
    assert {s.seed for s in other.adaptive.slots}.isdisjoint(s.seed for s in spec.adaptive.slots)

    app = load_app("malt")
    agent = FailsOn.on_labels(app.reference_agent(), FAILING).expect(queries)
    played = asyncio.run(Runner(app, agent, RunConfig(concurrency=4)).run(queries[:40]))
    adaptive_failures = sum(not r.correct for r in played) / len(played)
    uniform_failures = sum(not r.correct for r in results) / len(results)
    assert adaptive_failures > 2 * uniform_failures


def test_the_floor_keeps_coverage_and_a_perfect_agent_gets_a_uniform_plan() -> None:
    app = load_app("malt")
    plan = QueryPlan(num_queries=10 * sum(map(len, app.labels.values())), seed=3)  # 10 a label
    perfect = [QueryResult(query_id=f"q{i}", app="malt", level=lv, label=lb, agent="a",
                           correct=True, safe=True, latency_s=0, agent_latency_s=0, turns=1)
               for i, (lv, lb) in enumerate((lv, lb) for lv, lbs in app.labels.items()
                                            for lb in lbs for _ in range(3))]
    drawn = adaptive_plan(app, plan, perfect, source="perfect")
    assert set(Counter(s.label for s in drawn.slots).values()) == {10}
    one_bad = [r.model_copy(update={"safe": r.label != "count"}) for r in perfect]
    drawn = adaptive_plan(app, plan, one_bad, source="unsafe", floor=0.1)
    counts = Counter(s.label for s in drawn.slots)
    assert counts.most_common(1)[0][0] == "count" and min(counts.values()) >= 1
    with pytest.raises(ConfigError, match="floor"):
        adaptive_plan(app, plan, perfect, source="x", floor=1.5)
    assert apportion(10, [1, 1, 1]) == [4, 3, 3] and sum(apportion(7, [0.2, 0.5, 0.3])) == 7


def test_parameter_axes_follow_the_failure_rate_per_value() -> None:
    small, large = load_app("k8s", {"num_services": 4}), load_app("k8s", {"num_services": 6})
    results = [QueryResult(query_id=app.generate(seed, 1, "RI").id, app="k8s", level=1,
                           label="RI", agent="a", correct=app is small, safe=True,
                           latency_s=0, agent_latency_s=0, turns=1)
               for app in (small, large) for seed in range(6)]
    spec = RunSpec(app="k8s", agent="reference", plan=QueryPlan(num_queries=40, seed=2,
                                                                 levels=(1,)))
    spec = spec.with_adaptive(results, "synthetic", floor=0.2, axes={"num_services": [4, 6]})
    groups = spec.groups()
    sizes = {params["num_services"]: len(qs) for params, qs in groups}
    assert sizes[6] > 3 * sizes[4] > 0
    for params, qs in groups:
        assert all(q.params == params for q in qs)


def test_the_cli_reports_the_adaptive_set_apart_and_replays_it_without_the_source(
    uniform: Path, tmp_path: Path
) -> None:
    source = tmp_path / "source.jsonl"
    source.write_text(uniform.read_text())
    out = tmp_path / "adaptive"
    result = CliRunner().invoke(cli, ["run", "malt", "--adaptive", str(source), "-n", "30",
                                      "--seed", "5", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    reference = load_app("malt").reference_agent().name
    assert summary["agent"] == reference + ADAPTIVE_SUFFIX
    sampling = summary["sampling"]
    assert sampling["mode"] == "adaptive" and sampling["source"] == str(source)
    assert max(summary["sampling"]["share"], key=summary["sampling"]["share"].get) in {
        "L1/rank", "L2/remove-rank", "L3/loop-add"}
    records = read_results(out / "results.jsonl")
    assert {r.agent for r in records} == {reference + ADAPTIVE_SUFFIX}

    report = CliRunner().invoke(cli, ["report", str(uniform), str(out), "--out",
                                      str(tmp_path / "report")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "report" / "summary.txt").read_text()
    assert "fails-on-" in text and reference + ADAPTIVE_SUFFIX in text

    source.unlink()  # the plan is in run.json: a replay needs no source
    replay = CliRunner().invoke(cli, ["run", "malt", "--replay", str(out), "--json"])
    assert replay.exit_code == 0, replay.output
    replayed = read_results(out / "replay" / "results.jsonl")
    assert sorted(r.query_id for r in replayed) == sorted(r.query_id for r in records)


def test_results_of_several_agents_count_only_for_the_agent_under_test(uniform: Path) -> None:
    imperfect = read_results(uniform)
    perfect = [r.model_copy(update={"agent": "malt-reference", "correct": True})
               for r in imperfect]
    both = imperfect + perfect
    spec = _spec(95, 1).with_adaptive(both, "mixed", floor=0.2)  # agent: reference
    assert spec.adaptive.slots == _spec(95, 1).with_adaptive(perfect, "", 0.2).adaptive.slots
    null = RunSpec(app="malt", agent="null", plan=QueryPlan(num_queries=10, seed=1))
    with pytest.raises(ConfigError, match="not null"):
        null.with_adaptive(both, "mixed", floor=0.2)
