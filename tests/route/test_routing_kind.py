"""One place says what a route query runs: static routes, OSPF or BGP."""

from __future__ import annotations

import pytest

from netarena.route import RouteApp
from netarena.route.base.routing_kind import is_dynamic, routing_kind
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.episode import dynamic_plan
from netarena.route.frr.plan import OspfPlan


@pytest.mark.parametrize(("label", "kind"), [("DR", "static"), ("ospf-cost", "ospf"),
                                             ("bgp-filter", "bgp")])
def test_each_label_family_is_decided_from_the_truth(label: str, kind: str) -> None:
    query = RouteApp().generate(3, 1, label)
    assert routing_kind(query.truth) == kind
    assert is_dynamic(query.truth) == (kind != "static")
    if kind != "static":
        plan = dynamic_plan(query.truth)
        assert type(plan) is (BgpPlan if kind == "bgp" else OspfPlan)
        assert plan.routing == kind


def test_a_truth_without_a_kind_is_static() -> None:
    assert routing_kind({}) == "static" and not is_dynamic({"kind": None})
