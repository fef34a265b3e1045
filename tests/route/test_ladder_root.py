"""Route's calibration baselines make only their one mistake, in played episodes and over A2A.

Their rates are checked by ``tests/test_baselines.py`` (every app's ladder); here each
baseline's commands, as the runner recorded them, show the behaviour its description
names: the router only, forwarding fixes only, reads only, or resets without a look.
"""

from __future__ import annotations

import asyncio
import json
import re

import pytest

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.route import RouteApp
from netarena.route.static.repairs import HOST_DIAGNOSTIC, ROUTER_DIAGNOSTIC
from tests.a2a.servers import gateway_records, stream_03
from tests.a2a.test_cli import _port, _start, _wait_card

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]

_SMALL = {"num_subnets": 3, "hosts_per_subnet": 2}
_FORWARDING_FIX = re.compile(
    r"echo 1 > /proc/sys/net/ipv4/ip_forward|iptables -P FORWARD ACCEPT|"
    r"iptables -D FORWARD .*|ip rule del pref \d+( .*)?"
)


def _play(baseline: str, **plan: object) -> list[list[tuple[str, str] | None]]:
    """Per episode, each reply as ``(machine, command)``, or ``None`` for an empty reply.

    Five queries of every level by default; ``plan`` overrides ``QueryPlan`` fields.
    """
    app = RouteApp(_SMALL)
    queries = plan_queries(app, QueryPlan(**{"num_queries": 5, "seed": 41, **plan}))
    runner = Runner(app, find_baseline(app, baseline).make(), RunConfig(concurrency=4))
    runner.trajectories = {}
    results = asyncio.run(runner.run(queries))
    assert not [r.error for r in results if r.error]
    return [
        [
            (json.loads(t.action)["machine"], json.loads(t.action)["command"]) if t.action else None
            for t in turns
        ]
        for turns in runner.trajectories.values()
    ]


def _acts(episodes: list[list[tuple[str, str] | None]]) -> list[tuple[str, str]]:
    return [act for episode in episodes for act in episode if act is not None]


@pytest.mark.slow
def test_r0_only_never_touches_a_host_and_repairs_the_router() -> None:
    acts = _acts(_play("r0-only"))
    assert {machine for machine, _ in acts} == {"r0"}
    assert any(command != ROUTER_DIAGNOSTIC for _, command in acts)


@pytest.mark.slow
def test_fix_forwarding_only_sends_forwarding_fixes_only() -> None:
    acts = _acts(_play("fix-forwarding-only", levels=(1, 2), labels=("DR", "DR+DT")))
    assert {machine for machine, _ in acts} == {"r0"}
    fixes = [command for _, command in acts if command != ROUTER_DIAGNOSTIC]
    assert fixes, "no forwarding fault in the sample: the test shows nothing"
    for command in fixes:
        assert all(_FORWARDING_FIX.fullmatch(part) for part in command.split("; ")), command


@pytest.mark.slow
def test_read_only_only_runs_diagnostics_then_gives_up() -> None:
    for episode in _play("read-only"):
        assert episode[-1] is None  # gave up: nothing ran on its last turns
        for act in filter(None, episode):
            assert act[1] == (ROUTER_DIAGNOSTIC if act[0] == "r0" else HOST_DIAGNOSTIC)


@pytest.mark.slow
def test_blind_fixer_never_looks_and_resets_each_machine_once() -> None:
    for episode in _play("blind-fixer"):
        acts = [act for act in episode if act is not None]
        assert not {command for _, command in acts} & {ROUTER_DIAGNOSTIC, HOST_DIAGNOSTIC}
        machines = [machine for machine, _ in acts]
        assert machines[0] == "r0" and len(machines) == len(set(machines))
        assert all("iptables -F" in command for _, command in acts)


_READS = re.compile(
    r"\b(iptables -S|iptables -L|iptables-save|ip (-\S+ )*(route|addr|rule|link) show|"
    r"cat |tc qdisc show)"
)


@pytest.mark.slow
def test_non_diagnosing_baselines_never_read_a_machine() -> None:
    """rebuild-from-prompt: r0 then hosts in wrong pairs; forwarding-reset: every machine."""
    for name in ("rebuild-from-prompt", "forwarding-reset"):
        for episode in _play(name, levels=(1, 2)):
            acts = [act for act in episode if act is not None]
            machines = [machine for machine, _ in acts]
            assert machines[0] == "r0" and len(machines) == len(set(machines)), machines
            for _, command in acts:
                assert not _READS.search(command), command
                assert "ip addr flush" in command
                assert "iptables -P FORWARD ACCEPT" in command or name != "forwarding-reset"


@pytest.mark.slow
async def test_a_route_baseline_served_as_a_purple_agent_plays_as_in_process() -> None:
    """``netarena purple --solver baseline:blind-fixer --app route`` scores as the runner does.

    The blind fixer's moves depend on the turn, which it reads from the observation text:
    served over A2A it must play the same episodes to the same verdicts.
    """
    gport, pport = _port(), _port()
    green_url, purple_url = f"http://127.0.0.1:{gport}/", f"http://127.0.0.1:{pport}/"
    green = _start("serve", "route", "--port", str(gport), "--card-url", green_url)
    purple = _start(
        "purple", "--solver", "baseline:blind-fixer", "--app", "route", "--port", str(pport)
    )
    config = {"num_queries": 3, "seed": 5, "levels": [1], **_SMALL}
    try:
        await _wait_card(green_url, green)
        card = await _wait_card(purple_url, purple)
        events = await stream_03(
            green_url, {"participants": {"route_operator": purple_url}, "config": config}
        )
    finally:
        for proc in (green, purple):
            proc.terminate()
            proc.wait(10)
    assert "baseline:blind-fixer" in json.dumps(card)
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    *records, _ = gateway_records(artifact["parts"])
    app = RouteApp(_SMALL)
    plan = plan_queries(app, QueryPlan(num_queries=3, seed=5, levels=[1]))
    agent = find_baseline(app, "blind-fixer").make()
    local = await Runner(app, agent, RunConfig(concurrency=4)).run(plan)
    served = {r["query_id"]: (r["correct"], r["safe"], r["turns"]) for r in records}
    assert served == {r.query_id: (r.correct, r.safe, r.turns) for r in local}
