"""Undisclosed configuration, the collateral diff and the solver's reading of it (no emulator)."""

from __future__ import annotations

import json
import random
from dataclasses import replace

from netarena.route import RouteApp
from netarena.route.emulator.intent import draw_intent
from netarena.route.emulator.plan import draw_plan
from netarena.route.emulator.undisclosed import Undisclosed, draw_undisclosed
from netarena.route.judge.collateral import collateral, footprint
from netarena.route.linux.nodestate import container, describe, inert, ruleset_objects
from netarena.route.static.inventory import Inventory, published
from netarena.route.static.repairs import host_fixes, router_fixes

_HEALTHY = {
    "r0": {
        "link r0-eth1": "up mtu 1500 veth 00:00:00:00:00:05",
        "addr r0-eth1 10.0.1.1/24": "",
        "route main 10.0.1.0/24 tos 0 metric 0": "unicast dev r0-eth1",
        "route main 100.80.3.0/24 tos 0 metric 0": "unicast via 10.0.1.7 dev r0-eth1",
        "route main 198.18.0.0/15 tos 0 metric 0": "blackhole",
        "nft ip nat PREROUTING rule [dnat]": "",
        "sysctl net.ipv4.conf.r0-eth1.rp_filter": "1",
    },
    "h1": {"addr h1-eth0 10.0.1.7/24": "", "addr h1-eth0 100.64.2.9/32": ""},
}


def _copy(state: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {node: dict(objects) for node, objects in state.items()}


def test_undisclosed_configuration_varies_by_seed_and_round_trips() -> None:
    app = RouteApp()
    drawn = [Undisclosed.from_dict(app.generate(s, 1).truth["undisclosed"]) for s in range(40)]
    kinds = [tuple(sorted({i.kind for i in d.items})) for d in drawn]
    assert len(set(kinds)) > 20  # never one template
    assert all(any(i.node == "r0" and (i.ip or i.nat) for i in d.items) for d in drawn)
    assert len({(d.tcp_port, d.udp_port) for d in drawn}) == 40
    placements = {i.node for d in drawn for i in d.items}
    assert "r0" in placements and len(placements) > 5
    for d in drawn:
        assert Undisclosed.from_dict(json.loads(json.dumps(d.to_dict()))) == d
    plan = draw_plan(random.Random(3), [2, 2, 3])
    intent = draw_intent(random.Random(4), plan)
    one = draw_undisclosed(random.Random(5), plan, intent)
    assert one == draw_undisclosed(random.Random(5), plan, draw_intent(random.Random(4), plan))


def test_prompt_discloses_services_but_not_the_configuration() -> None:
    query = RouteApp().generate(4, 2)
    local = Undisclosed.from_dict(query.truth["undisclosed"])
    assert f"TCP service on port {local.tcp_port}" in query.prompt
    assert "not described here" in query.prompt and "for ICMP, TCP and UDP" in query.prompt
    for item in local.items:
        for line in (*item.ip, *item.nat, *item.filter):
            assert line not in query.prompt


def test_a_wiped_undisclosed_object_is_collateral() -> None:
    final = _copy(_HEALTHY)
    del final["r0"]["route main 100.80.3.0/24 tos 0 metric 0"]
    del final["h1"]["addr h1-eth0 100.64.2.9/32"]
    final["r0"]["sysctl net.ipv4.conf.r0-eth1.rp_filter"] = "0"
    found = collateral(_HEALTHY, final, footprint(_HEALTHY, _copy(_HEALTHY)))
    assert found == [
        "r0: lost route main 100.80.3.0/24 tos 0 metric 0",
        "r0: changed sysctl net.ipv4.conf.r0-eth1.rp_filter: 1 -> 0",
        "h1: lost addr h1-eth0 100.64.2.9/32",
    ]


def test_repairs_inside_the_footprint_are_free_and_outside_it_are_not() -> None:
    faulted = _copy(_HEALTHY)
    faulted["r0"]["route main 10.0.1.0/24 tos 0 metric 500"] = "unicast dev r0-eth1"
    faulted["r0"]["route main 10.0.1.0/24 tos 0 metric 10"] = "unicast dev r0-eth2"
    del faulted["r0"]["route main 10.0.1.0/24 tos 0 metric 0"]
    inside = footprint(_HEALTHY, faulted)
    repaired = _copy(faulted)  # another metric: the same route to the same place
    repaired["r0"]["route main 10.0.1.0/24 tos 0 metric 5"] = "unicast dev r0-eth1"
    assert collateral(_HEALTHY, repaired, inside) == []
    repaired["r0"]["route main 10.9.0.0/16 tos 0 metric 0"] = "unicast dev r0-eth1"
    repaired["r0"]['nft ip filter INPUT rule [{"log":{"prefix":"x"}}]'] = ""  # only logs
    assert collateral(_HEALTHY, repaired, inside) == [
        "r0: added route main 10.9.0.0/16 tos 0 metric 0 unicast dev r0-eth1"
    ]


def test_rulesets_normalise_counters_and_empty_chains() -> None:
    listing = {
        "nftables": [
            {"metainfo": {"version": "1.0.6"}},
            {"table": {"family": "ip", "name": "filter", "handle": 1}},
            {"chain": {"family": "ip", "table": "filter", "name": "INPUT", "policy": "accept"}},
            {"chain": {"family": "ip", "table": "filter", "name": "FORWARD", "policy": "drop"}},
            {"rule": {"family": "ip", "table": "filter", "chain": "FORWARD", "handle": 4,
                      "expr": [{"counter": {"packets": 9, "bytes": 756}}, {"accept": None}]}},
        ]
    }
    objects = ruleset_objects(json.dumps(listing))
    again = json.loads(json.dumps(listing))
    again["nftables"][4]["rule"]["expr"][0]["counter"] = {"packets": 0, "bytes": 0}
    again["nftables"][4]["rule"]["handle"] = 9
    assert ruleset_objects(json.dumps(again)) == objects
    assert set(objects) == {
        "nft ip filter FORWARD policy",
        'nft ip filter FORWARD rule [{"counter":null},{"accept":null}]',
    }
    assert container('nft ip filter FORWARD rule [{"accept":null}]') == "nft ip filter FORWARD"
    log = '[{"counter":null},{"xt":{"name":"LOG","type":"target"}}]'
    assert inert(f"nft ip filter INPUT rule {log}")
    assert not inert('nft ip filter INPUT rule [{"counter":null},{"drop":null}]')


_INV = Inventory(
    {"s1": ("10.0.1.0/24", "10.0.1.1", "r0-eth1"), "s2": ("10.0.2.0/24", "10.0.2.1", "r0-eth2")},
    {"h1": ("h1-eth0", "10.0.1.7", "s1"), "h2": ("h2-eth0", "10.0.2.7", "s2")},
    {},
    "10.0.1.1",
    (8123, 5310),
)


_PAIRS = {("h1", "h2"), ("h2", "h1"), ("h1", "r0"), ("r0", "h1"), ("h2", "r0"), ("r0", "h2")}


def test_the_solver_keeps_what_breaks_nothing_however_it_looks() -> None:
    """Objects of faults' shapes stay unless a flow that must pass runs into them."""
    host = "\n".join([
        "#link", "h1-eth0@if9: <BROADCAST,UP,LOWER_UP> 1500",
        "#addr", "h1-eth0    inet 10.0.1.7/24 scope global h1-eth0",
        "h1-eth0    inet 100.64.2.9/32 scope global h1-eth0",
        "h1-eth0    inet 10.0.1.99/32 scope global h1-eth0",  # a service address: stays
        "h1-eth0    inet 10.0.2.7/32 scope global h1-eth0",  # h2's address: stolen
        "#route", "10.0.1.0/24 dev h1-eth0 proto kernel scope link src 10.0.1.7",
        "default via 10.0.1.1 dev h1-eth0", "100.100.4.0/24 via 10.0.1.1 dev h1-eth0",
    ])
    assert host_fixes(host, _INV, "h1", _PAIRS) == ["ip addr del 10.0.2.7/32 dev h1-eth0"]
    router = "\n".join([
        "#link", "r0-eth1@if3: <BROADCAST,UP,LOWER_UP> 1500",
        "r0-eth2@if4: <BROADCAST,UP,LOWER_UP> 1500",
        "#addr", "r0-eth1    inet 10.0.1.1/24 scope global r0-eth1",
        "r0-eth2    inet 10.0.2.1/24 scope global r0-eth2",
        "#route", "10.0.1.0/24 dev r0-eth1 proto kernel scope link src 10.0.1.1",
        "10.0.2.0/24 dev r0-eth1 scope link metric 10",  # wins over the right one: astray
        "10.0.2.0/24 dev r0-eth2 scope link metric 500",
        "10.0.2.192/27 via 10.0.1.50 dev r0-eth1",  # a quarantined range: nobody lives there
        "10.0.1.0/24 via 10.0.2.9 dev r0-eth2 metric 300",  # a backup behind the connected
        "#rule", "0:\tfrom all lookup local", "100:\tfrom all to 10.0.2.0/24 prohibit",
        "150:\tfrom all to 10.0.2.192/27 prohibit",
        "1200:\tfrom 10.0.1.0/24 to 100.96.3.0/24 lookup 140", "32766:\tfrom all lookup main",
        "#filter", "*filter", ":INPUT ACCEPT [0:0]", ":FORWARD ACCEPT [0:0]",
        '[5:300] -A FORWARD -s 10.0.1.0/24 -m comment --comment "audit"',
        "[0:0] -A FORWARD -d 10.0.2.192/27 -j DROP",
        "[9:500] -A FORWARD -d 10.0.2.0/24 -p tcp -m tcp --dport 8123 -j DROP",
        "[0:0] -A FORWARD -d 10.0.2.0/24 -p tcp -m tcp --dport 9000 -j DROP",
        "[4:200] -A FORWARD -s 10.0.2.0/24 -p udp -j REJECT --reject-with icmp-port-unreachable",
        "COMMIT",
        "#qdisc", "qdisc tbf 8001: dev r0-eth1 root refcnt 2 rate 200Mbit burst 256Kb lat 50ms",
        "qdisc pfifo 8002: dev r0-eth2 root refcnt 2 limit 0p",
        "#sysctl", "ip_forward=1", "forwarding all=1 default=1 lo=1 r0-eth1=1 r0-eth2=0",
    ])
    assert router_fixes(router, _INV, _PAIRS) == [
        "ip route del 10.0.2.0/24 dev r0-eth1 metric 10",
        "ip rule del pref 100 from all to 10.0.2.0/24 prohibit",
        "sysctl -qw net.ipv4.conf.r0-eth2.forwarding=1",
        "iptables -D FORWARD -d 10.0.2.0/24 -p tcp -m tcp --dport 8123 -j DROP",
        "iptables -D FORWARD -s 10.0.2.0/24 -p udp -j REJECT --reject-with icmp-port-unreachable",
        "tc qdisc del dev r0-eth2 root",
    ]
    cut = {("h1", "r0"), ("r0", "h1")}  # h2 out of service: its interface may be anything
    assert not [f for f in router_fixes(router, _INV, cut) if "r0-eth2" in f]


def test_a_host_holding_an_address_the_router_forwards_a_service_at_gives_it_back() -> None:
    """Another subnet's gateway on a host is harmless, unless the router publishes a service
    there: the host's connections to it stay local (the design never puts one there)."""
    host = "\n".join([
        "#link", "h1-eth0@if9: <BROADCAST,UP,LOWER_UP> 1500",
        "#addr", "h1-eth0    inet 10.0.1.7/24 scope global h1-eth0",
        "h1-eth0    inet 10.0.2.1/32 scope global h1-eth0",
        "#route", "10.0.1.0/24 dev h1-eth0 proto kernel scope link src 10.0.1.7",
        "default via 10.0.1.1 dev h1-eth0",
    ])
    router = "\n".join([
        "#filter", "*nat", ":PREROUTING ACCEPT [0:0]",
        '[3:180] -A PREROUTING -d 10.0.2.1/32 -p tcp -m tcp --dport 4325 -m comment '
        '--comment "h2 service" -j DNAT --to-destination 10.0.2.7:2981',
        "[0:0] -A POSTROUTING -s 10.0.2.0/24 -d 100.72.34.0/24 -j MASQUERADE", "COMMIT",
    ])
    assert published(router) == {"10.0.2.1"}
    assert host_fixes(host, _INV, "h1", _PAIRS) == []
    forwarded = replace(_INV, published=published(router))
    assert host_fixes(host, forwarded, "h1", _PAIRS) == ["ip addr del 10.0.2.1/32 dev h1-eth0"]


def test_rules_are_described_in_words() -> None:
    key = (
        'nft ip nat PREROUTING rule [{"match":{"left":{"payload":{"field":"daddr",'
        '"protocol":"ip"}},"op":"==","right":"10.0.0.1"}},{"match":{"left":{"payload":'
        '{"field":"dport","protocol":"tcp"}},"op":"==","right":8443}},{"counter":null},'
        '{"dnat":{"addr":"10.0.1.5","port":9000}}]'
    )
    words = "ip daddr 10.0.0.1 tcp dport 8443 dnat to 10.0.1.5:9000"
    assert describe(key) == f"nft ip nat PREROUTING: {words}"
    assert describe("route main default tos 0 metric 0") == "route main default tos 0 metric 0"


def test_service_matrices_read_back() -> None:
    from netarena.route.judge.pingall import PingMatrix, parse_pingall

    pairs = frozenset({("h1", "h2"), ("h2", "h1"), ("r0", "h1")})
    matrix = PingMatrix(("h1", "h2", "r0"), pairs, frozenset({("h1", "h2")}), frozenset())
    assert parse_pingall("## Current connectivity\n" + matrix.text()) == matrix
    assert parse_pingall(PingMatrix(("h1", "r0"), frozenset()).text()).tcp is None


def test_frr_lines_that_only_log_or_name_are_inert_and_others_are_not() -> None:
    healthy = {"r1": {"frr global hostname r1": "", "frr router-ospf ospf router-id 1.1.1.1": ""}}
    final = _copy(healthy)
    harmless = [
        "frr global log file /var/log/frr/x.log",
        "frr global debug ospf event",
        "frr interface-r1-eth1 description to r2",
        "frr router-ospf log-adjacency-changes detail",
        "frr router-bgp-65001 bgp log-neighbor-changes",
        "frr router-bgp-65001 neighbor 10.0.0.2 description core",
    ]
    harmful = [
        "frr interface-r1-eth1 ip ospf mtu-ignore",
        "frr router-ospf timers throttle spf 0 50 400",
        "frr router-bgp-65001 neighbor 10.0.0.2 remote-as 65002",
    ]
    for key in harmless + harmful:
        final["r1"][key] = ""
    assert all(inert(k) for k in harmless) and not any(inert(k) for k in harmful)
    nothing = footprint(healthy, healthy)
    found = collateral(healthy, final, nothing)
    assert found == [f"r1: added {k}" for k in sorted(harmful)], found
    del final["r1"]["frr global hostname r1"]  # a design's line lost still counts
    assert "r1: lost frr global hostname r1" in collateral(healthy, final, nothing)


def test_a_port_forward_opens_no_path_the_intent_closes() -> None:
    """A DNAT on a restricted subnet's gateway once carried its hosts to a host they have no
    route to; a fault's rule cutting only that path had no symptom, and the reference kept
    it (a CI run's query, about 1 port-forward in 60). Published addresses now avoid it."""
    from netarena.route.emulator.intent import reaches
    from netarena.route.emulator.services import endpoints

    forwards = 0
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [rng.randint(1, 3) for _ in range(rng.randint(2, 5))])
        intent = draw_intent(rng, plan)
        for e in endpoints(plan, draw_undisclosed(rng, plan, intent)).values():
            if e.address == plan.address(e.node):
                continue  # a service at its own address
            forwards += 1
            for src in e.sources:
                assert not reaches(plan, intent, src, e.node, e.address) or \
                    reaches(plan, intent, src, e.node), (seed, e.label, src)
    assert forwards > 100
