"""Pure query generation, the pingall text format and the public API (no emulator)."""

from __future__ import annotations

import pytest

import netarena.route as route
from netarena.route import METHODS, RouteApp, parse_pingall
from netarena.route.probe import PingMatrix


def test_public_api_is_pinned() -> None:
    assert sorted(route.__all__) == sorted(
        [
            "Action",
            "FAULT_TYPES",
            "ForbiddenCommand",
            "LEVEL_LABELS",
            "METHODS",
            "Network",
            "PingMatrix",
            "ReferenceRouteAgent",
            "RouteApp",
            "RouteConfig",
            "RouteEpisode",
            "TopologySpec",
            "cleanup",
            "parse_pingall",
            "parse_reply",
            "pingmesh",
            "sample_fault",
        ]
    )


def test_same_seed_same_query() -> None:
    a, b = RouteApp(), RouteApp()
    for level in (1, 2, 3):
        assert a.generate(11, level) == b.generate(11, level)
    assert a.generate(11, 2, "DR+WR") != a.generate(12, 2, "DR+WR")


def test_sizes_drawn_from_seed_unless_fixed() -> None:
    sizes = {tuple(RouteApp().generate(s, 1).truth["topology"].values()) for s in range(60)}
    assert all(2 <= n <= 4 and 2 <= m <= 4 for n, m in sizes)
    assert len(sizes) > 4
    fixed = RouteApp({"num_subnets": 5, "hosts_per_subnet": 1}).generate(3, 1)
    assert fixed.truth["topology"] == {"num_subnets": 5, "hosts_per_subnet": 1}
    assert RouteApp.legacy_keys == {
        "num_switches": "num_subnets",
        "num_hosts_per_subnet": "hosts_per_subnet",
    }


def test_labels_and_fault_plan() -> None:
    app = RouteApp()
    assert app.labels[2] == ("DR+DI", "DR+RI", "DR+DT", "DR+WR", "RI+WR")
    q = app.generate(5, 3, "DI+WR")
    slots = q.truth["faults"]
    assert [s["type"] for s in slots] == ["DI", "WR"]
    for slot in slots:
        assert len(slot["candidates"]) == 8
        assert all(c["method"] in METHODS[slot["type"]] for c in slot["candidates"])


def test_prompt_is_complete_and_hides_truth() -> None:
    q = RouteApp({"prompt_style": "fewshot_cot"}).generate(9, 1, "DT")
    assert '"machine"' in q.prompt and "r0-eth1 192.168.1.1/24" in q.prompt
    assert "Example 1" in q.prompt and "step by step" in q.prompt
    for cand in q.truth["faults"][0]["candidates"]:
        assert cand["method"] not in q.prompt
    assert "Example 1" not in RouteApp().generate(9, 1, "DT").prompt


def test_pingall_format_round_trips() -> None:
    nodes = ("h1", "h2", "r0")
    ok = frozenset({("h1", "h2"), ("h2", "h1"), ("h1", "r0"), ("r0", "h1")})
    m = PingMatrix(nodes, ok)
    assert m.text().splitlines() == [
        "*** Ping: testing ping reachability",
        "h1 -> h2 r0",
        "h2 -> h1 X",
        "r0 -> h1 X",
        "*** Results: 33% dropped (4/6 received)",
    ]
    assert parse_pingall(m.text()) == m
    assert not m.healthy and PingMatrix(nodes, frozenset(m.pairs)).healthy


@pytest.mark.parametrize("bad", [{"num_subnets": 1}, {"hosts_per_subnet": 0}, {"bogus": 1}])
def test_bad_parameters_rejected(bad: dict) -> None:
    from netarena.common.errors import ConfigError

    with pytest.raises(ConfigError):
        RouteApp(bad)
