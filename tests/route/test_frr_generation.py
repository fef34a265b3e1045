"""Dynamic-routing (OSPF) queries: labels, pure generation, the ticket, the solver's reading."""

from __future__ import annotations

import random

import networkx as nx
import pytest

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.route import RouteApp
from netarena.route.frr.faults import OSPF_FAULTS, OSPF_LEVEL_LABELS, draw_faults, fault_lines
from netarena.route.frr.plan import OspfPlan, draw_ospf_plan, render
from netarena.route.frr.solver import DIAGNOSTIC, read_design, router_fixes
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
    for fault in q.truth["faults"]:  # nor the faults' values
        for value in ("area", "cost"):
            if value in fault:
                assert f" {fault[value]} " not in q.prompt.split("## Routing design")[1]


@pytest.mark.parametrize("kind", list(OSPF_FAULTS))
def test_every_fault_changes_the_modelled_routing_and_the_ticket_says_so(kind: str) -> None:
    app = RouteApp()
    for seed in range(20):
        q = app.generate(seed, 1, kind)
        assert "Routing alarms: some routes differ" not in q.prompt, (kind, seed)
        (fault,) = q.truth["faults"]
        lines, kernel = fault_lines(fault, OspfPlan.from_dict(q.truth["plan"]))
        assert lines or kernel


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
        plan = draw_ospf_plan(rng, rng.randint(4, 6))
        faults = draw_faults(rng, plan, "ospf-area+ospf-auth+ospf-redist")
        links = [f["link"] for f in faults if f["link"] is not None]
        assert len(links) == len(set(links))


def test_the_solver_reads_the_design_and_repairs_only_what_differs() -> None:
    app = RouteApp()
    q = app.generate(9, 1, "ospf-auth")
    plan = OspfPlan.from_dict(q.truth["plan"])
    design = read_design(q.prompt)
    assert design.routers == list(plan.routers)
    assert design.redistribute == {s.router for s in plan.stubs if s.mode == "redistribute"}
    for router in plan.routers:  # the healthy configuration needs nothing
        assert router_fixes(router, render(plan, router), design) is None
    (fault,) = q.truth["faults"]
    broken = render(plan, fault["router"]).replace(
        f"md5 {plan.links[fault['link']].key}", f"md5 {fault['key']}"
    )
    fix = router_fixes(fault["router"], broken, design)
    assert fix is not None and fault["intf"] in fix
    assert f"md5 {plan.links[fault['link']].key}" in fix and "ip route" not in fix
    assert DIAGNOSTIC.startswith("vtysh")


def test_the_design_names_router_ids_and_stubs() -> None:
    q = RouteApp().generate(4, 1, "ospf-redist")
    plan = OspfPlan.from_dict(q.truth["plan"])
    design = read_design(q.prompt)
    assert design.router_ids == plan.loopbacks
    assert design.stubs == {
        s.router: (s.router_intf, s.mode == "passive") for s in plan.stubs
    }


def _shape(plan: OspfPlan) -> str:
    n, links = len(plan.routers), len(plan.links)
    degrees = sorted(sum(r in (x.a, x.b) for x in plan.links) for r in plan.routers)
    if n > 3 and links == 2 * n - 3 and degrees[-2:] == [n - 1, n - 1]:
        return "hub-and-spoke"
    return "ring" if links == n else "meshed"


def test_designs_come_in_every_shape_and_survive_any_one_link_lost() -> None:
    shapes = set()
    for seed in range(120):
        rng = random.Random(seed)
        plan = draw_ospf_plan(rng, rng.randint(3, 6))
        graph = nx.MultiGraph([(link.a, link.b) for link in plan.links])
        assert set(graph) == set(plan.routers)
        assert nx.edge_connectivity(graph) >= 2, f"seed {seed}: one lost link cuts the design"
        shapes.add(_shape(plan))
    assert shapes == {"hub-and-spoke", "ring", "meshed"}


def test_the_hello_fault_leaves_fast_hellos_and_the_solver_restores_them() -> None:
    app = RouteApp()
    for seed in range(12):
        q = app.generate(seed, 1, "ospf-hello")
        plan = OspfPlan.from_dict(q.truth["plan"])
        (fault,) = q.truth["faults"]
        lines, _ = fault_lines(fault, plan)
        assert f"ip ospf dead-interval {fault['dead']}" in lines and fault["dead"] >= 3
        assert f"ip ospf hello-interval {fault['hello']}" in lines
        design = read_design(q.prompt)
        head, rest = render(plan, fault["router"]).split(f"interface {fault['intf']}\n", 1)
        section, tail = rest.split("exit\n", 1)
        assert f" {design.timers}\n" in section
        section = section.replace(f" {design.timers}\n", "".join(f" {x}\n" for x in lines[1:]))
        broken = f"{head}interface {fault['intf']}\n{section}exit\n{tail}"
        fix = router_fixes(fault["router"], broken, design)
        assert fix is not None and design.timers in fix and fix.count("interface ") == 1
        assert fix.index(design.timers) < fix.index("no ip ospf hello-interval")  # FRR's timer
