"""Dynamic-routing (OSPF) queries: labels, pure generation, the ticket, the solver's reading."""

from __future__ import annotations

import random

import pytest

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.route import RouteApp
from netarena.route.frr.design import draw_ospf_plan
from netarena.route.frr.faults import OSPF_FAULTS, OSPF_LEVEL_LABELS, draw_faults, fault_lines
from netarena.route.frr.plan import OspfPlan, dead_s, render
from netarena.route.frr.prompts import describe_design
from netarena.route.frr.solver import DIAGNOSTIC, LOOK_AFTER, read_design, router_fixes
from netarena.route.generator import ROUTE_LABEL_SETS


def test_dynamic_labels_run_only_when_asked() -> None:
    app = RouteApp()
    default = plan_queries(app, QueryPlan(num_queries=60, seed=1))
    assert default and not any(q.label.startswith("ospf") for q in default)
    assert all(
        app.pick_label(random.Random(s), 1, None) in ROUTE_LABEL_SETS["static"] for s in range(50)
    )
    for name in ("ospf", "dynamic"):
        asked = plan_queries(app, QueryPlan(num_queries=30, seed=1, labels=(name,)))
        assert {q.label for q in asked} <= set(ROUTE_LABEL_SETS[name])
        assert len({q.label for q in asked}) > 9  # singles and combinations, every level
    assert set(ROUTE_LABEL_SETS["ospf"]) == {lb for v in OSPF_LEVEL_LABELS.values() for lb in v}
    assert app.labels[1][:5] == ("DR", "DI", "RI", "DT", "WR")


def test_generation_is_pure_and_the_prompt_is_a_ticket_not_a_config() -> None:
    app = RouteApp()
    q = app.generate(5, 2, "ospf-area+ospf-cost")
    assert q == app.generate(5, 2, "ospf-area+ospf-cost")
    assert q.truth["kind"] == "ospf" and len(q.truth["faults"]) == 2
    plan = OspfPlan.from_dict(q.truth["plan"])
    assert OspfPlan.from_dict(plan.to_dict()) == plan
    assert "## Incident ticket" in q.prompt and "## Routing design" in q.prompt
    for router in plan.routers:  # no configuration line of any router is shown
        for line in render(plan, router).splitlines():
            if line.strip().startswith(("ip ospf", "ip route", "ip prefix")):
                assert line.strip() not in q.prompt, line
    design = q.prompt.split("## Routing design")[1].split("## Task")[0]
    for link in plan.links:  # nor any setting's value: costs, keys, MTUs, timers, types
        assert not link.key or link.key not in q.prompt
        assert f"cost {link.cost}" not in design and "mtu" not in design.lower()
        assert "hello" not in design and "point-to-point" not in design


@pytest.mark.parametrize("kind", list(OSPF_FAULTS))
def test_every_fault_changes_the_modelled_routing_and_the_ticket_says_so(kind: str) -> None:
    app = RouteApp()
    for seed in range(20):
        q = app.generate(seed, 1, kind)
        assert "Routing alarms: some routes differ" not in q.prompt, (kind, seed)
        (fault,) = q.truth["faults"]
        lines, kernel = fault_lines(fault, OspfPlan.from_dict(q.truth["plan"]))
        assert lines or kernel


@pytest.mark.slow
def test_instances_are_distinct_within_and_across_seeds() -> None:
    app = RouteApp()
    labels = ROUTE_LABEL_SETS["ospf"]
    first = [
        app.instance_key(
            app.generate(s, 1 + labels[s % len(labels)].count("+"), labels[s % len(labels)])
        )
        for s in range(500)
    ]
    assert len(set(first)) >= 0.99 * len(first)
    other = {app.instance_key(app.generate(10_000 + s, 1, "ospf-cost")) for s in range(200)}
    assert not other & set(first)


def test_combined_faults_sit_on_different_links_and_routers() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        plan = draw_ospf_plan(rng, rng.randint(5, 8))
        faults = draw_faults(rng, plan, "ospf-area+ospf-auth+ospf-redist")
        if faults is None:  # a single-area design has no place for an area fault
            continue
        links = [f["link"] for f in faults if f["link"] is not None]
        assert len(links) == len(set(links))


def test_designs_come_from_real_networks_and_vary_link_by_link() -> None:
    """Issue 37: parts of Topology Zoo and SNDlib networks, each link with its own
    settings, both values of each in every design, areas by region in many."""
    multi = 0
    for seed in range(40):
        rng = random.Random(seed)
        plan = draw_ospf_plan(rng, rng.randint(4, 8))
        assert plan.source.startswith(("topozoo/", "sndlib/")) and plan.sites
        links = plan.links
        assert len({x.network_type for x in links}) == 2, seed
        assert len({x.mtu for x in links}) == 2 and len({dead_s(x.timers) for x in links}) == 2
        found = plan.routes()
        assert all(len(h) <= 1 for d in found.values() for _, h in d.values())  # one path
        multi += bool(plan.areas)
    assert multi >= 8


def test_standby_links_are_kept_at_one_end_or_both_and_the_ticket_says_which() -> None:
    """A passive or out-of-OSPF transit interface alone on its link is part of designs, as
    a fault's is (the OSPF audit's passive tell, issue 37): the other end is then a plain
    OSPF interface, and the ticket names the end kept."""
    seen: set[tuple[str, bool]] = set()
    for seed in range(60):
        rng = random.Random(seed)
        plan = draw_ospf_plan(rng, rng.randint(4, 8))
        for link in plan.links:
            if link.role == "active":
                continue
            seen.add((link.role, bool(link.standby_end)))
            for router in (link.a, link.b):
                intf, _ = link.end(router)
                section = render(plan, router).split(f"interface {intf}\n")[1].split("exit")[0]
                kept = link.standby_end in ("", router)
                assert ("ip ospf passive" in section) == (kept and link.role == "passive")
                assert ("ip ospf area" in section) == (not kept or link.role == "passive")
            q_line = next(
                x for x in describe_design(plan) if f"{link.a_ip} <-> " in x and link.b_ip in x
            )
            where = f"at {link.standby_end}'s end only" if link.standby_end else "at both ends"
            assert "standby" in q_line and where in q_line, q_line
    assert seen == {("passive", True), ("passive", False), ("off", True), ("off", False)}


@pytest.mark.parametrize(
    "kind", ["ospf-area", "ospf-hello", "ospf-nettype", "ospf-mtu", "ospf-cost"]
)
def test_a_fault_value_is_one_the_design_carries_on_another_link(kind: str) -> None:
    """No fault value is out of the design's distribution (the majority-normaliser and
    shape shortcuts of issue 37): an area, timers, type, MTU or cost some link's end has."""
    app = RouteApp()
    for seed in range(15):
        q = app.generate(seed, 1, kind)
        plan = OspfPlan.from_dict(q.truth["plan"])
        (fault,) = q.truth["faults"]
        others = [x for i, x in enumerate(plan.links) if i != fault["link"]]
        carried = {
            "ospf-area": ("area", {x.area for x in others}),
            "ospf-hello": ("timers", {x.timers for x in others}),
            "ospf-nettype": ("network", {x.network_type for x in others}),
            "ospf-mtu": ("mtu", {x.mtu_at(r) for x in others for r in (x.a, x.b)}),
            "ospf-cost": ("cost", {x.cost_at(r) for x in others for r in (x.a, x.b)}),
        }[kind]
        assert fault[carried[0]] in carried[1], (seed, fault)


def test_the_solver_mends_the_end_of_a_link_that_differs() -> None:
    app = RouteApp()
    q = app.generate(9, 1, "ospf-cost")
    plan = OspfPlan.from_dict(q.truth["plan"])
    design = read_design(q.prompt)
    assert design.routers == list(plan.routers)
    assert design.redistribute == {s.router for s in plan.stubs if s.mode == "redistribute"}
    seen = {r: render(plan, r) for r in plan.routers}
    for router in plan.routers:  # the healthy configuration needs nothing
        assert router_fixes(router, seen, set(plan.routers), design) is None
    (fault,) = q.truth["faults"]
    link = plan.links[fault["link"]]
    head, rest = seen[fault["router"]].split(f"interface {fault['intf']}\n", 1)
    section, tail = rest.split("exit\n", 1)
    section = section.replace(f" ip ospf cost {link.cost}\n", f" ip ospf cost {fault['cost']}\n")
    seen[fault["router"]] = f"{head}interface {fault['intf']}\n{section}exit\n{tail}"
    fix = router_fixes(fault["router"], seen, set(plan.routers), design)
    assert fix is not None and f"ip ospf cost {link.cost}" in fix
    assert "ip route" not in fix.removesuffix(LOOK_AFTER)  # mended in OSPF, not the kernel
    peer = link.peer(fault["router"])
    assert router_fixes(peer, seen, set(plan.routers), design) is None
    assert DIAGNOSTIC.startswith("vtysh")


def test_the_solver_looks_along_a_left_primary_path_before_a_partition_the_alarms_explain() -> None:
    """Two adjacencies down split this network in two, so every host is cut off from
    some; a cost fault moved h8 -> h4 off r8 r6 r4. The reference looks at the alarms'
    routers, then along the primary path (r4), and only then behind the cut-off hosts
    (r1, r7, r2; it ran out of ten turns when a path's router came last)."""
    from netarena.route.frr.solver import _order

    q = RouteApp().generate(1002, 3, "ospf-hello+ospf-mtu+ospf-cost")
    design = read_design(q.prompt)
    assert design.primaries[0] == ["r8", "r6", "r4"]
    assert q.prompt.count("cannot be reached from") == len(design.stub_router)
    order = _order(q.prompt, design)
    assert order[:5] == ["r6", "r8", "r3", "r5", "r4"], order


def test_the_solver_follows_a_flow_where_its_routes_now_lead() -> None:
    """A cost lowered at r8, on no primary path, draws h4 -> h5 off r4 r3 r2 r5: once r4 is
    seen, its route to h5's stub names r8's address, so r8 is looked at next (it was looked
    at last, past the ten turns)."""
    from netarena.route.frr.solver import _order

    q = RouteApp().generate(1049, 3, "ospf-hello+ospf-mtu+ospf-cost")
    design = read_design(q.prompt)
    assert design.primaries[0] == ["r4", "r3", "r2", "r5"] and design.targets[0] == "h5"
    assert any(f["type"] == "ospf-cost" and f["router"] == "r8" for f in q.truth["faults"])
    r8_ip = next(ip for ip, router in design.owner.items() if router == "r8")
    seen = {"r4": f"{design.stub_net['h5']} via {r8_ip} dev r4-eth1 proto ospf metric 20\n"}
    order = _order(q.prompt, design, seen)
    assert order.index("r8") == order.index("r4") + 1, order
    assert "r8" not in _order(q.prompt, design)[:8 - 1], "r8 is named nowhere in the ticket"
