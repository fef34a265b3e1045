"""Multi-AS BGP episodes on live FRR routers: each fault shows in vtysh, the reference repairs it.

Needs root, Mininet and FRR (``scripts/setup.sh`` installs ``frr``); each episode builds a
network of four FRR routers in two ASes, so these are slow.
"""

from __future__ import annotations

from typing import Any

import pytest

from netarena.route import RouteApp
from netarena.route.frr.bgp_faults import BGP_FAULTS, BGP_LEVEL_LABELS
from netarena.route.frr.bgp_model import reachable
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.bgp_ttl import TTL_LINES

from .conftest import LIVE_FRR, play_reference, reply, small_frr_app

pytestmark = LIVE_FRR


def _addr(episode: Any, router: str, peer: str) -> str:
    session = next(s for s in episode.plan.sessions_of(router) if s.peer(router) == peer)
    return str(session.addr(peer))


def _row(summary: str, address: str) -> list[str]:
    """The ``show bgp summary`` row of ``address`` (empty when it is not listed)."""
    return next((ln.split() for ln in summary.splitlines() if ln.startswith(address + " ")), [])


def _shows(episode: Any, fault: dict[str, Any]) -> None:
    """Assert that ``fault`` shows in the faulted router's (or its peer's) vtysh output."""
    router, kind = fault["router"], fault["type"]

    def vtysh(at: str, command: str) -> str:
        return str(episode.net.shell(at, f"vtysh -c '{command}'").output)

    summary = vtysh(router, "show bgp summary")
    if kind == "bgp-network":
        assert fault["prefix"] not in vtysh(router, "show ip bgp")
        return
    if kind == "bgp-filter":
        config = vtysh(router, "show running-config")
        assert f"ip prefix-list {fault['name']} " in config, config  # its entry is gone
        assert f"{fault['name']} seq" not in config or not any(
            line.endswith(fault["prefix"]) and f" {fault['name']} " in line
            for line in config.splitlines()
        ), config
        return
    address = _addr(episode, router, fault["peer"])
    row = _row(summary, address)
    if kind == "bgp-remote-as":  # the wrong AS, and the session is not up
        assert row[2] == str(fault["asn"]) and not row[9].isdigit(), summary
    elif kind == "bgp-neighbor":  # a neighbour at an address it does not peer with, never up
        wrong = _row(summary, fault["address"])
        assert wrong and not wrong[9].isdigit() and not row, summary
    elif kind == "bgp-activate":  # configured but not in the IPv4 unicast summary
        assert not row and address in vtysh(router, "show running-config"), summary
    elif kind == "bgp-maxprefix":
        assert "PfxCt" in summary, summary
    elif kind == "bgp-multihop":
        assert not row[9].isdigit(), summary
        shown = vtysh(router, "show running-config")
        assert fault["ttl"] in ("multihop", "connected", "gtsm1", "gtsm2"), fault
        assert TTL_LINES[fault["ttl"]] in shown, shown
    elif kind == "bgp-nexthop":  # the peer holds routes whose next hop does not resolve
        assert "invalid" in vtysh(fault["peer"], "show bgp nexthop"), kind
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize("kind", list(BGP_FAULTS))
def test_each_fault_shows_in_vtysh_and_the_reference_repairs_it(kind: str) -> None:
    app = small_frr_app()
    query = app.generate(41, 1, kind)
    (fault,) = query.truth["faults"]
    with app.open(query) as episode:
        assert episode.initial.routing != episode.healthy  # verified in the steady state
        _shows(episode, fault)
        behind = {s.host: s.router for s in episode.plan.stubs}
        answered = {
            (behind[a], behind[b])
            for a, b in episode.initial.matrix.ok
            if a in behind and b in behind
        }
        assert answered == reachable(episode.plan, [fault])  # the ticket's model is the network
        turns = play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, (turns, score)


def _inbound_entry(query: Any) -> bool:
    (fault,) = query.truth["faults"]
    plan = BgpPlan.from_dict(query.truth["plan"])
    inbound = plan.policy(fault["router"]).filter_in.values()
    return bool(fault["name"] in inbound)


def test_an_entry_gone_from_a_list_bound_inbound_changes_routing_and_is_repaired() -> None:
    """bgpd applies an edited prefix-list bound to a neighbour inbound to routes it has
    already received only when they are read again (``clear bgp * soft in``): without that,
    such a fault left routing as designed (1 of 40 reference queries at seed 400)."""
    app = small_frr_app()
    drawn = (app.generate(seed, 1, "bgp-filter") for seed in range(60))
    query = next(q for q in drawn if _inbound_entry(q))
    with app.open(query) as episode:
        assert episode.initial.routing != episode.healthy
        turns = play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, (turns, score)


def test_a_null_agent_scores_zero_and_resetting_a_healthy_session_is_unsafe() -> None:
    app = RouteApp({"num_routers": 5})
    query = app.generate(42, 2, "bgp-activate+bgp-filter")
    with app.open(query) as episode:
        score = episode.score()
    assert not score.correct and score.safe
    query = app.generate(43, 1, "bgp-network")
    with app.open(query) as episode:
        assert any(p.startswith("BGP ") for _, p in episode.healthy_adjacencies)
        router = next(r for r in episode.plan.routers if r != query.truth["faults"][0]["router"])
        episode.step(reply(router, "vtysh -c 'clear bgp *'"))  # every session resets
        score = episode.score()
    assert not score.safe and score.details["unsafe_steps"] >= 1


def test_the_reference_repairs_combined_faults() -> None:
    app = RouteApp({"num_routers": 5})
    with app.open(app.generate(44, 3, "bgp-remote-as+bgp-filter+bgp-network")) as episode:
        turns = play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, (turns, score)


@pytest.mark.parametrize("label", BGP_LEVEL_LABELS[3])
def test_the_reference_repairs_three_faults_on_eight_routers_within_ten_turns(label: str) -> None:
    """The largest case: up to four ASes, eight routers, three faults; looking where the
    ticket and earlier looks point, then repairing (and looking again), solves it within
    ten turns."""
    app = RouteApp({"num_routers": 8})
    query = app.generate(45, 3, label)
    with app.open(query) as episode:
        turns = play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, (turns, score)


def test_the_ticket_names_the_designed_path_router_by_router_as_traced() -> None:
    """Where a flow left its AS path, the ticket names the routers the design sends it
    across; those are the routers a traceroute crosses in the healthy network (what the
    judge holds the repaired network to)."""
    app = RouteApp({"num_routers": 6})
    query = next(
        q
        for seed in range(200)
        if (q := app.generate(seed, 1, "bgp-remote-as")).truth["watch"]
    )
    with app.open(query) as episode:
        assert episode.intended_paths, query.prompt
        for (src, dst), path in episode.intended_paths.items():
            assert f"router by router {src} {' '.join(path)} {dst}." in query.prompt, path
