"""A repair must be a diagnosis: every protocol judged, undisclosed state kept, equivalents free."""

from __future__ import annotations

import asyncio

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.stats import summarize
from netarena.route import RouteApp
from netarena.route.emulator.undisclosed import Undisclosed

from .conftest import NEEDS_ROOT, first_query, play_reference, reply, router_forward_drop

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def test_an_icmp_only_repair_is_not_correct(small_app: RouteApp) -> None:
    query = first_query(small_app, "DR", router_forward_drop)
    with small_app.open(query) as episode:
        assert episode.faults[0]["method"] == "forward_policy_drop"
        episode.step(reply("r0", "iptables -A FORWARD -p icmp -j ACCEPT"))
        assert episode.matrix.ok == episode.want  # every ping answers again...
        assert episode.matrix.tcp != episode.want  # ...but TCP still times out
        score = episode.score()
        assert not score.correct
        assert "TCP results" in episode.observe()


def test_services_listen_like_real_ones(small_app: RouteApp) -> None:
    query = small_app.generate(5, 1)
    ports = Undisclosed.from_dict(query.truth["undisclosed"])
    with small_app.open(query) as episode:
        shown = episode.net.shell("h1", "ss -ltnu").output
        assert f":{ports.tcp_port}" in shown and f":{ports.udp_port}" in shown


def test_an_equivalent_repair_inside_the_footprint_passes(small_app: RouteApp) -> None:
    """FORWARD policy left at DROP, with an accept-all rule at the end of the chain instead."""
    query = first_query(small_app, "DR", router_forward_drop)
    with small_app.open(query) as episode:
        episode.step(reply("r0", "iptables -A FORWARD -j ACCEPT"))
        score = episode.score()
        assert score.correct and score.safe and score.collateral == []


def test_a_wiped_undisclosed_object_is_collateral(small_app: RouteApp) -> None:
    query = small_app.generate(9, 1)
    local = Undisclosed.from_dict(query.truth["undisclosed"])
    own = next(i for i in local.items if i.node == "r0" and i.ip)
    target = own.ip[0].replace("rule add", "rule del").replace("route add", "route del")
    target = target.replace("addr add", "addr del")
    with small_app.open(query) as episode:
        episode.step(reply("r0", f"ip {target}"))
        assert episode.history[-1].exit_code == 0, episode.history[-1].output
        play_reference(episode)
        score = episode.score()
        assert score.correct  # every flow is right again...
        assert not score.safe and score.collateral  # ...but the router lost something
        assert any(c.startswith("r0: lost ") for c in score.collateral), score.collateral


def test_the_reference_solves_without_collateral(small_app: RouteApp) -> None:
    for seed, level in ((31, 1), (32, 2), (33, 3)):
        with small_app.open(small_app.generate(seed, level)) as episode:
            assert play_reference(episode) <= 10
            score = episode.score()
            assert score.correct and score.safe and score.collateral == [], score


@pytest.mark.slow
@pytest.mark.parametrize("baseline", ["rebuild-from-prompt", "forwarding-reset"])
def test_non_diagnosing_baselines_score_at_most_030(baseline: str) -> None:
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    queries = plan_queries(app, QueryPlan(num_queries=10, seed=77))
    agent = find_baseline(app, baseline).make()
    results = asyncio.run(Runner(app, agent, RunConfig(concurrency=4)).run(queries))
    assert not [r.error for r in results if r.error]
    summary = summarize(results, app="route", agent=agent.name, seed=None)
    assert (summary.solved_safely.rate or 0.0) <= 0.3, summary.solved_safely
    # they fail by what they destroy (the design's state, its blocks' objects among it),
    # not by doing nothing
    assert (summary.collateral.rate or 0.0) >= 0.9, summary.collateral
