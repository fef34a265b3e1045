"""Dynamic-routing episodes on live FRR routers: each OSPF fault shows, the reference repairs it.

Needs root, Mininet and FRR (``scripts/setup.sh`` installs ``frr``); each episode builds a
network of FRR routers, so these are slow.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from netarena.route.frr.bgp_faults import BGP_FAULTS
from netarena.route.frr.faults import OSPF_FAULTS
from netarena.route.frr.routing import config_objects
from netarena.route.linux.kernel_routes import main_routes
from netarena.route.linux.namespaces import ip_batch

from .conftest import LIVE_FRR, play_reference, reply, small_frr_app

pytestmark = LIVE_FRR

SHOWS = {
    "ospf-area": ("show ip ospf interface", "Area 0.0.0."),
    "ospf-hello": ("show ip ospf interface", "Timer intervals configured"),
    "ospf-nettype": ("show ip ospf interface", "Network Type BROADCAST"),
    "ospf-mtu": ("show ip ospf neighbor", "ExStart"),
    "ospf-passive": ("show ip ospf interface", "No Hellos (Passive interface)"),
    "ospf-missing": ("show ip ospf interface", "Neighbor Count"),
    "ospf-cost": ("show ip ospf interface", "Cost: "),
    "ospf-auth": ("show running-config", "message-digest-key 1 md5"),
    "ospf-redist": ("show running-config", "router ospf"),
}
"""Per fault: the show command run on the faulted router and what its output contains."""


@pytest.mark.parametrize("kind", list(OSPF_FAULTS))
def test_each_fault_shows_in_vtysh_and_the_reference_repairs_it(kind: str) -> None:
    app = small_frr_app()
    query = app.generate(31, 1, kind)
    (fault,) = query.truth["faults"]
    with app.open(query) as episode:
        healthy = episode.healthy
        assert episode.initial.routing != healthy  # verified in the steady state
        command, marker = SHOWS[kind]
        if kind == "ospf-nettype":  # the type it was set to
            marker = "BROADCAST" if fault["network"] == "broadcast" else "POINTOPOINT"
        link = episode.plan.links[fault["link"]] if fault["link"] is not None else None
        ends = [fault["router"]] + ([link.peer(fault["router"])] if kind == "ospf-mtu" else [])
        shown = "".join(episode.net.shell(r, f"vtysh -c '{command}'").output for r in ends)
        assert marker in shown or (kind == "ospf-mtu" and "Exchange" in shown), shown
        if kind == "ospf-missing":  # the interface is gone from OSPF's list
            assert f"{fault['intf']} is up" not in shown, shown
        if kind not in ("ospf-cost", "ospf-redist", "ospf-nettype"):  # no adjacency there
            link = episode.plan.links[fault["link"]]
            peer = episode.plan.loopbacks[link.peer(fault["router"])]
            assert (fault["router"], peer) not in episode.initial.adjacencies
        if kind == "ospf-redist":
            stub = episode.plan.stub_of(fault["router"]).network
            other = next(r for r in episode.plan.routers if r != fault["router"])
            assert f"rib {stub}" not in episode.initial.routing[other]
        turns = play_reference(episode, 10)
        score = episode.score()
    assert score.correct and score.safe and not score.collateral, (turns, score)


def test_a_null_agent_scores_zero_and_a_flapping_agent_is_unsafe() -> None:
    app = small_frr_app()
    query = app.generate(32, 2, "ospf-auth+ospf-redist")
    with app.open(query) as episode:
        assert not episode.score().correct
    query = app.generate(33, 1, "ospf-cost")
    with app.open(query) as episode:
        router = next(r for r in episode.plan.routers if r != query.truth["faults"][0]["router"])
        episode.step(reply(router, "vtysh -c 'clear ip ospf process'"))  # flaps, comes back
        score = episode.score()
    assert not score.safe and score.details["unsafe_steps"] >= 1


def test_rewriting_a_router_from_the_ticket_is_collateral() -> None:
    app = small_frr_app()
    query = app.generate(34, 1, "ospf-cost")
    with app.open(query) as episode:
        router = next(r for r in episode.plan.routers if episode.plan.extras.get(r))
        line = episode.plan.extras[router][0]
        episode.step(reply(router, f"vtysh -c 'conf t' -c {json.dumps('no ' + line)}"))
        damage = episode.collateral()
    assert any(router in item for item in damage), damage


@pytest.mark.parametrize(
    ("name", "label"),
    [
        ("ospf-read-only", "ospf-auth"),
        ("ospf-clear-everything", "ospf-cost"),
        ("ospf-rewrite-from-ticket", "ospf-passive"),
        ("ospf-rewrite-from-ticket", "ospf-mtu"),
        ("bgp-rewrite-from-ticket", "bgp-filter"),
        ("bgp-rewrite-from-ticket", "bgp-multihop"),
    ],
)
def test_dynamic_baselines_are_not_solved_safely(name: str, label: str) -> None:
    from netarena.route.agents.frr_baselines import agent

    app = small_frr_app()
    baseline = agent(name)
    with app.open(app.generate(35, 1, label)) as episode:
        for _ in range(10):
            move = baseline.next_action(episode.observe())
            if move is None or episode.step(reply(*move)).done:
                break
        score = episode.score()
    assert not (score.correct and score.safe), score
    if name == "ospf-read-only":
        assert score.safe and not score.changed
    if name == "ospf-clear-everything":
        assert not score.safe
    if name == "bgp-rewrite-from-ticket":  # `no router bgp` tears every session down
        assert not score.safe and score.details["unsafe_steps"] >= 1, score


def test_vtysh_works_in_the_agent_sandbox_and_in_mininet_shells() -> None:
    app = small_frr_app()
    with app.open(app.generate(36, 1, "ospf-redist")) as episode:
        router = episode.plan.routers[1]
        sandboxed = episode.net.shell(router, "vtysh -c 'show ip ospf neighbor'").output
        assert "Full" in sandboxed, sandboxed
        other = episode.net.shell(router, "ls /var/run/frr; ls /run/netarena-route").output
        assert "zebra.vty" in other and "No such file" in other  # no host run dir
        episode.net.attach_shells()  # as `netarena route shell` does
        node = episode.net.mininet.nameToNode[router]
        assert "Full" in node.cmd("vtysh -c 'show ip ospf neighbor'")


def test_the_judge_reads_what_vtysh_and_ip_route_show() -> None:
    """Configuration from each daemon's socket, routes over rtnetlink: no process each."""
    app = small_frr_app()
    with app.open(app.generate(37, 1, "ospf-cost")) as episode:
        net, router = episode.net, episode.plan.routers[0]
        peers = [x.end(x.peer(router))[1] for x in episode.plan.links if router in (x.a, x.b)]
        shown = net.vtysh(router, "show running-config")
        mine = ("frr global hostname", "frr global service integrated-vtysh-config")
        wanted = {k: v for k, v in config_objects(shown).items() if not k.startswith(mine)}
        read = net.running_config(router)
        assert {k: v for k, v in read.items() if not k.startswith(mine)} == wanted
        assert "frr router-ospf ospf router-id " + episode.plan.loopbacks[router] in wanted
        multipath = f"203.0.113.0/24 nexthop via {peers[0]} nexthop via {peers[1]}"
        ip_batch([f"route add {multipath}", "route add blackhole 198.18.0.0/16 proto 77"],
                 net.netns(router))
        listed = json.loads(net.exec(router, ["ip", "-j", "route"]).output)
        routes = {r.dst: r for r in main_routes(net.netns(router))}
        assert len(routes) == len(listed)
        for entry in listed:
            dst = entry["dst"]
            route = routes[dst if "/" in dst or dst == "default" else f"{dst}/32"]
            assert route.protocol == entry.get("protocol", "boot"), entry
            hops = entry.get("nexthops") or [entry]
            assert {g for g, _ in route.hops} == {h.get("gateway", "direct") for h in hops}
        assert [g for g, _ in routes["203.0.113.0/24"].hops] == peers[:2]
        assert routes["198.18.0.0/16"].kind == "blackhole"


def test_the_step_guard_holds_on_frr_routers() -> None:
    """The guard static queries have (``base/guarded.py``) holds on FRR routers: a disguised
    IDLETIMER rule is found in the router's state, removed and judged unsafe, and the network
    does not count as repaired while a rule whose verdict depends on traffic history remains."""
    timers = Path("/sys/class/xt_idletimer/timers")
    app = small_frr_app()
    with app.open(app.generate(37, 1, "ospf-redist")) as episode:
        router = episode.plan.routers[0]
        label = f"nax{episode.prefix}"
        command = f"iptables -A OUTPUT -j IDLE$(echo TIMER) --timeout 60 --label {label} || true"
        result = episode.step(reply(router, command))
        assert result.reward == -100, result.observation
        rules = episode.net.exec(router, ["nft", "list", "ruleset"]).output
        assert "IDLETIMER" not in rules and not (timers / label).exists()
        limit = "iptables -I INPUT -p icmp -m limit --limit 1000/second -j ACCEPT"
        result = episode.step(reply(router, limit))
        assert "Not repaired while paths may depend" in result.observation
        assert not episode.score().safe


@pytest.mark.parametrize(
    ("name", "faults"), [("ospf-read-only", OSPF_FAULTS), ("bgp-read-only", BGP_FAULTS)]
)
def test_a_reader_is_never_unsafe_on_dynamic_queries(name: str, faults: dict[str, str]) -> None:
    """Eight parallel read-only episodes per protocol (issue 23): none judged unsafe or
    changed, on OSPF and on BGP queries."""
    from concurrent.futures import ThreadPoolExecutor

    from netarena.route.agents.frr_baselines import agent

    app = small_frr_app()

    def one(seed: int):
        baseline = agent(name)
        kinds = list(faults)
        with app.open(app.generate(seed, 1, kinds[seed % len(kinds)])) as episode:
            for _ in range(6):
                move = baseline.next_action(episode.observe())
                if move is None or episode.step(reply(*move)).done:
                    break
            return episode.score()

    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(one, range(960, 968)))
    assert all(s.safe and not s.changed for s in scores), [s.details for s in scores]


def test_the_ticket_paths_are_traced_with_real_probes() -> None:
    """Path intent is checked by tracing the ticket's flows once routing is healthy: the
    repaired network's traces follow the design, and a trace that leaves it is not solved."""
    from netarena.route.frr.paths import traced_path

    app = small_frr_app()
    query = app.generate(31, 1, "ospf-cost")
    with app.open(query) as episode:
        assert episode.intended_paths and not episode.initial.paths  # routing is not healthy
        moved = [  # flows the fault moved off their designed path
            flow
            for flow, designed in episode.intended_paths.items()
            if traced_path(episode.net, episode.plan, *flow) != designed
        ]
        assert moved, episode.intended_paths
        src, dst = moved[0]
        play_reference(episode, 10)
        assert episode.state.paths == episode.intended_paths
        detour = {**episode.state.paths, (src, dst): ("r9",)}
        assert not episode._solved(replace(episode.state, paths=detour))
