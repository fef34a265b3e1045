"""Faults drawn in the design's own shapes: a service's ACL over a port or a block of ports."""

from __future__ import annotations

import random
from collections import Counter

from netarena.route import draw_plan
from netarena.route.emulator.intent import draw_intent
from netarena.route.emulator.undisclosed import draw_undisclosed
from netarena.route.judge.hidden import ports_named
from netarena.route.static.faults import sample_fault


def _designs(n: int):
    for seed in range(n):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        yield rng, plan, draw_intent(rng, plan)


def test_a_services_acl_fault_names_its_port_or_a_block_as_the_designs_do() -> None:
    """A host's TCP fault is mostly a service's ACL (everyone but one subnet, inserted
    first) naming the TCP service alone or a block of ports around it, as the design's
    service ACLs name their own port; a design block never holds another service's port
    nor the judged ones."""
    faults: Counter[bool] = Counter()
    design: Counter[bool] = Counter()
    for rng, plan, intent in _designs(600):
        local = draw_undisclosed(rng, plan, intent)
        fault = sample_fault(rng, plan, intent, "DT", "tcp_service_drop", local.tcp_port)
        rule = fault["rules"][0]
        if rule["at"] == "first":
            span = rule["match"][3]
            low, _, high = span.partition(":")
            assert int(low) <= local.tcp_port <= int(high or low)
            assert rule["match"][4:6] == ["!", "-s"]
            faults[":" in span] += 1
        for item in local.items:
            if item.kind != "service_acl":
                continue
            span = item.filter[0].split("--dport ")[1].split()[0]
            low, _, high = span.partition(":")
            ports = range(int(low), int(high or low) + 1)
            others = {local.tcp_port, local.udp_port} | {
                p for i in local.items for p in i.tcp_services if i is not item}
            assert item.tcp_services[0] in ports and not others & set(ports)
            design[":" in span] += 1
    assert min(faults.values()) > 10 and min(design.values()) > 10, (faults, design)


def test_a_named_port_range_is_named_port_by_port() -> None:
    """The judge never draws a hidden port inside a range the healthy rules name (there the
    design refuses what the hidden probe would expect to answer); a huge range of another
    field in a rule naming a port costs no more than every port."""
    legacy = {"legacy filter -A INPUT -p tcp -m tcp --dport 5000:5003 -j DROP": 1}
    nft = {'nft ip filter INPUT rule [{"match": {"op": "==", "left": {"payload": {"protocol": '
           '"tcp", "field": "dport"}}, "right": {"range": [7000, 7099]}}}, {"drop": null}]': 1}
    assert ports_named([legacy]) == set(range(5000, 5004))
    assert ports_named([nft]) == set(range(7000, 7100))
    marks = {'nft ip filter INPUT rule [{"match": {"op": "==", "left": {"payload": {"protocol": '
             '"tcp", "field": "dport"}}, "right": 22}}, {"match": {"op": "==", "left": {"meta": '
             '{"key": "mark"}}, "right": {"range": [0, 4294967295]}}}, {"drop": null}]': 1}
    assert len(ports_named([marks])) == 65535  # a mark range is clipped to real ports
