"""Multi-AS BGP queries: labels, pure generation, the ticket, the solver's reading."""

from __future__ import annotations

import random
import shlex
import subprocess

import pytest

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.route import RouteApp
from netarena.route.frr.bgp_faults import (
    BGP_FAULTS,
    BGP_LEVEL_LABELS,
    _draw_all,
    bgp_fault_lines,
)
from netarena.route.frr.bgp_model import best_routes, reachable, unmasks
from netarena.route.frr.bgp_plan import BgpPlan, draw_bgp_plan
from netarena.route.frr.bgp_solver import bgp_router_fix, bgp_visit, read_bgp_design
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.solver import next_dynamic_action
from netarena.route.generator import ROUTE_LABEL_SETS

_ALL = tuple(label for labels in BGP_LEVEL_LABELS.values() for label in labels)


def _query(seed: int, label: str, **params: int):
    return RouteApp(params or None).generate(seed, 1 + label.count("+"), label)


def test_bgp_labels_run_only_when_asked() -> None:
    app = RouteApp()
    default = plan_queries(app, QueryPlan(num_queries=60, seed=1))
    assert not any(q.label.startswith("bgp") for q in default)
    asked = plan_queries(app, QueryPlan(num_queries=30, seed=1, labels=("bgp",)))
    assert {q.label for q in asked} <= set(_ALL) and len({q.label for q in asked}) > 6
    assert set(ROUTE_LABEL_SETS["bgp"]) == set(_ALL)
    assert set(_ALL) < set(ROUTE_LABEL_SETS["dynamic"])
    assert set(ROUTE_LABEL_SETS["ospf"]) < set(ROUTE_LABEL_SETS["dynamic"])
    assert {q.truth["kind"] for q in asked} == {"bgp"}


def test_plans_have_two_or_three_ases_of_two_or_three_routers() -> None:
    for seed in range(200):
        plan = draw_bgp_plan(random.Random(seed))
        assert 4 <= len(plan.routers) <= 8 and len(plan.ases) in (2, 3)
        assert all(len(rs) in (2, 3) for rs in plan.ases.values())
        assert all(64512 <= asn <= 65534 for asn in plan.ases)
        kinds = [s.kind for s in plan.sessions]
        assert kinds.count("multihop") == 1
        inter = [x for x in plan.links if not plan.internal(x)]
        pairs = [frozenset((plan.asn[x.a], plan.asn[x.b])) for x in inter]
        assert len(pairs) == len(set(pairs)) >= len(plan.ases) - 1  # one link per AS pair
        ibgp = sum(len(rs) * (len(rs) - 1) // 2 for rs in plan.ases.values())
        assert kinds.count("ibgp") == ibgp  # a full mesh inside each AS
        assert len(reachable(plan, [])) == len(plan.routers) * (len(plan.routers) - 1)
    for n in range(4, 9):
        assert len(draw_bgp_plan(random.Random(n), n).routers) == n


def test_generation_is_pure_and_the_prompt_is_a_ticket_not_a_config() -> None:
    for label in _ALL:
        q = _query(7, label)
        assert q == _query(7, label) and q.truth["kind"] == "bgp"
        plan = BgpPlan.from_dict(q.truth["plan"])
        assert BgpPlan.from_dict(plan.to_dict()) == plan
        assert isinstance(plan, OspfPlan)  # the episode, network and prompts take it as one
        assert "## Incident ticket" in q.prompt and "## Routing design" in q.prompt
        for router in plan.routers:  # no configuration line of any router is shown
            for line in plan.frr_config(router).splitlines():
                if line.strip() not in ("!", "exit", ""):
                    assert line.strip() not in q.prompt, line
        assert label not in q.prompt and "bgp-" not in q.prompt
        for fault in q.truth["faults"]:  # nor the faults' values
            for key in ("asn", "address", "name"):
                if key in fault:
                    assert str(fault[key]) not in q.prompt, (label, fault)
            if "limit" in fault:
                assert "maximum-prefix" not in q.prompt


@pytest.mark.parametrize("label", _ALL)
def test_every_fault_changes_bgp_routing_and_the_ticket_says_so(label: str) -> None:
    for seed in range(25):
        q = _query(seed, label)
        plan = BgpPlan.from_dict(q.truth["plan"])
        faults = q.truth["faults"]
        assert len(faults) == label.count("+") + 1
        assert best_routes(plan, faults) != best_routes(plan, [])
        assert "Routing alarms" not in q.prompt, (label, seed)
        for fault in faults:
            assert bgp_fault_lines(fault, plan)[0].startswith(("router bgp", "ip prefix-list"))


def test_instances_are_distinct_within_and_across_seeds() -> None:
    app = RouteApp()
    first = [app.instance_key(_query(s, _ALL[s % len(_ALL)])) for s in range(500)]
    assert len(set(first)) >= 0.99 * len(first)
    other = {app.instance_key(_query(20_000 + s, "bgp-filter")) for s in range(200)}
    assert len(other & set(first)) <= 0.01 * len(other)


def test_combined_faults_sit_on_different_sessions() -> None:
    for seed in range(40):
        for label in BGP_LEVEL_LABELS[3]:
            faults = _query(seed, label).truth["faults"]
            sessions = [f["session"] for f in faults if "session" in f]
            assert len(sessions) == len(set(sessions))


def test_no_drawn_combination_has_a_repair_order_that_loses_reachability() -> None:
    """Masking pairs exist (a prefix limit lifted onto a border without next-hop-self)."""
    rng = random.Random(3)
    for _ in range(2000):
        plan = draw_bgp_plan(rng)
        faults = _draw_all(rng, plan, "bgp-nexthop+bgp-maxprefix")
        if unmasks(plan, faults):
            break
    else:
        raise AssertionError("no masking pair in 2000 draws")
    nexthop_only = [f for f in faults if f["type"] == "bgp-nexthop"]
    assert reachable(plan, faults) - reachable(plan, nexthop_only)
    for seed in range(40):
        for label in (*BGP_LEVEL_LABELS[2], *BGP_LEVEL_LABELS[3]):
            query = _query(seed, label)
            plan = BgpPlan.from_dict(query.truth["plan"])
            assert not unmasks(plan, query.truth["faults"]), query.id


def test_the_solver_reads_the_design_and_repairs_only_what_differs() -> None:
    q = _query(9, "bgp-filter", num_routers=5)
    plan = BgpPlan.from_dict(q.truth["plan"])
    design = read_bgp_design(q.prompt)
    assert design.routers == list(plan.routers) and design.asn == plan.asn
    assert design.router_ids == plan.loopbacks
    for router in plan.routers:  # the healthy configuration needs nothing
        assert design.neighbors[router] == plan.neighbors(router)
        assert bgp_router_fix(router, plan.frr_config(router), design) is None
    (fault,) = q.truth["faults"]
    router = fault["router"]
    peer = next(n.address for n in plan.neighbors(router) if n.address != plan.loopbacks[router])
    config = plan.frr_config(router).replace(
        f"  neighbor {peer} activate",
        f"  neighbor {peer} activate\n  neighbor {peer} route-map X in",
    )
    fix = bgp_router_fix(router, config, design)
    assert fix is not None and f"'no neighbor {peer} route-map X in'" in fix
    assert "prefix-list" not in fix and "ip route" not in fix  # undisclosed lines stay
    wrong = plan.frr_config(router).replace(f"neighbor {peer} ", "neighbor 10.9.9.9 ")
    fix = bgp_router_fix(router, wrong, design)
    assert fix is not None and "'no neighbor 10.9.9.9'" in fix
    assert fix.index(f"neighbor {peer} remote-as") < fix.index(f"neighbor {peer} timers")


def test_the_solver_looks_first_where_the_evidence_points() -> None:
    q = _query(3, "bgp-network", num_routers=6)
    (fault,) = q.truth["faults"]
    machine, command = next_dynamic_action(q.prompt) or ("", "")
    assert machine == fault["router"] and "show running-config" in command


def _on_router(command: str, config: str, tmp_path) -> list[str]:
    """What a visit's repair would type into vtysh on a router holding ``config``."""
    path = tmp_path / "running-config"
    path.write_text(config)
    diff = command.split("fix=$(", 1)[1].split('); [ -z "$fix" ]', 1)[0]
    diff = diff.replace("vtysh -c 'show running-config bgpd'", f"cat {path}")
    out = subprocess.run(["bash", "-c", diff], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def test_a_visit_repairs_on_the_router_what_the_solver_reads_from_a_look(tmp_path) -> None:
    """The repair a visit computes on the router (awk over the running configuration) is
    the one ``bgp_router_fix`` computes from the same configuration, for every fault."""
    for label in BGP_FAULTS:
        q = _query(5, label, num_routers=5)
        plan = BgpPlan.from_dict(q.truth["plan"])
        design = read_bgp_design(q.prompt)
        healthy = plan.frr_config(plan.routers[0])
        assert _on_router(bgp_visit(plan.routers[0], design), healthy, tmp_path) == []
        (fault,) = q.truth["faults"]
        router = fault["router"]
        config = _faulted_config(plan, router, bgp_fault_lines(fault, plan))
        fix = bgp_router_fix(router, config, design)
        assert fix is not None, label
        typed = _on_router(bgp_visit(router, design), config, tmp_path)
        vty = shlex.split(fix.split(" && ", 1)[0])[4::2]  # the -c arguments after 'conf t'
        wrapped = ["configure terminal", *vty]
        if "exit-address-family" not in vty:
            wrapped += ["address-family ipv4 unicast", "exit-address-family"]
        assert typed[:2] == wrapped[:2] and typed[-1] == "end", (label, typed)
        assert sorted(typed[:-1]) == sorted(wrapped), (label, typed, vty)  # the same lines
        for at, line in enumerate(typed):  # a new neighbour's remote AS comes first
            if " remote-as " in line:
                assert not [x for x in typed[:at] if x.startswith(line.split(" remote-as")[0])]


def _faulted_config(plan: BgpPlan, router: str, lines: list[str]) -> str:
    """``router``'s configuration as FRR prints it once ``lines`` are applied (the faults'
    few shapes: a neighbour line changed, added or removed, a network removed)."""
    config = plan.frr_config(router)
    for line in lines:
        words = line.split()
        if words[0] == "no" and words[1] == "network":
            config = config.replace(f"  {' '.join(words[1:])}\n", "")
        elif words[0] == "no" and len(words) == 3:  # a whole neighbour
            config = "\n".join(x for x in config.splitlines() if f"neighbor {words[2]} " not in x)
        elif words[0] == "no":
            config = config.replace(f" {' '.join(words[1:])}\n", "\n")
        elif words[0] == "neighbor" and "remote-as" in words:
            head = f" neighbor {words[1]} remote-as "
            kept = [x for x in config.splitlines() if not x.startswith(head)]
            at = next(i for i, x in enumerate(kept) if x.startswith(" timers bgp"))
            config = "\n".join([*kept[: at + 1], f" {line}", *kept[at + 1 :]])
        elif words[0] == "neighbor":
            where = (
                "  neighbor"
                if words[2]
                in ("activate", "maximum-prefix", "next-hop-self", "prefix-list", "route-map")
                else " neighbor"
            )
            at = " exit-address-family" if where == "  neighbor" else " !\n address-family"
            config = config.replace(at, f"{where} {' '.join(words[1:])}\n{at}", 1)
    return config


def test_a_router_visited_before_its_peer_was_repaired_is_visited_again() -> None:
    q = _query(11, "bgp-remote-as", num_routers=4)
    plan = BgpPlan.from_dict(q.truth["plan"])
    design = read_bgp_design(q.prompt)
    (fault,) = q.truth["faults"]
    router, peer = fault["router"], fault["peer"]
    address = next(s.addr(peer) for s in plan.sessions_of(router) if s.peer(router) == peer)
    mine = next(s.addr(router) for s in plan.sessions_of(peer) if s.peer(peer) == router)
    summary = f"{address:<15} 4 {fault['asn']:>10} 0 0 0 0 0 never Active 0 N/A"
    look = f"{summary}\n{plan.frr_config(router).replace(str(plan.asn[peer]), str(fault['asn']))}"
    theirs = f"{mine:<15} 4 {plan.asn[router]:>10} 0 0 0 0 0 never Active 0 N/A"
    history = (
        f"\n## History of your commands\n[turn 1] {peer} $ {bgp_visit(peer, design)}\n"
        f"{theirs}\n{plan.frr_config(peer)}\n[exit 0]\n"
    )
    assert next_dynamic_action(q.prompt + history)[0] == router  # the far end of a down session
    history += f"[turn 2] {router} $ {bgp_visit(router, design)}\n{look}\n[exit 0]\n"
    machine, command = next_dynamic_action(q.prompt + history) or ("", "")
    assert machine == peer and command == bgp_visit(peer, design)  # it backs off: again
    history += f"[turn 3] {peer} $ {command}\n{theirs}\n{plan.frr_config(peer)}\n[exit 0]\n"
    assert next_dynamic_action(q.prompt + history)[0] not in (peer, router)
