"""Pure query generation: plans, intents, prompts, the pingall format (no emulator)."""

from __future__ import annotations

import ipaddress
import random
from pathlib import Path

import pytest

import netarena.route as route
from netarena.common.core.errors import ConfigError
from netarena.route import METHODS, RouteApp, RouterTopo, draw_plan, intended_pairs, parse_pingall
from netarena.route.emulator.intent import Intent, Restricted, draw_intent
from netarena.route.emulator.plan import NetworkPlan
from netarena.route.emulator.topology import load_topo_class, plan_of
from netarena.route.judge.pingall import PingMatrix
from netarena.route.static.faults import CANDIDATES_PER_FAULT


def test_public_api_is_pinned() -> None:
    assert sorted(route.__all__) == sorted(
        [
            "Action",
            "FAULT_TYPES",
            "ForbiddenCommand",
            "Intent",
            "LEVEL_LABELS",
            "METHODS",
            "Network",
            "NetworkPlan",
            "PingMatrix",
            "ReferenceRouteAgent",
            "RouteApp",
            "RouteConfig",
            "RouteEpisode",
            "RouterTopo",
            "cleanup",
            "draw_plan",
            "intended_pairs",
            "parse_pingall",
            "parse_reply",
            "pingmesh",
            "plan_of",
            "sample_fault",
        ]
    )


def test_same_seed_same_query() -> None:
    a, b = RouteApp(), RouteApp()
    for level in (1, 2, 3):
        assert a.generate(11, level) == b.generate(11, level)
    assert a.generate(11, 2, "DR+WR") != a.generate(12, 2, "DR+WR")


def test_sizes_drawn_from_seed_unless_fixed() -> None:
    plans = [NetworkPlan.from_dict(RouteApp().generate(s, 1).truth["plan"]) for s in range(60)]
    shapes = {tuple(len(p.hosts_in(s.index)) for s in p.subnets) for p in plans}
    assert all(2 <= len(shape) <= 4 and all(2 <= m <= 4 for m in shape) for shape in shapes)
    assert len(shapes) > 10 and any(len(set(shape)) > 1 for shape in shapes)
    fixed = RouteApp({"num_subnets": 5, "hosts_per_subnet": 1}).generate(3, 1)
    plan = NetworkPlan.from_dict(fixed.truth["plan"])
    assert [len(plan.hosts_in(s.index)) for s in plan.subnets] == [1] * 5
    assert RouteApp.legacy_keys == {
        "num_switches": "num_subnets",
        "num_hosts_per_subnet": "hosts_per_subnet",
    }


def test_addressing_varies_and_is_consistent() -> None:
    families, lengths, gateways = set(), set(), set()
    for seed in range(200):
        plan = draw_plan(random.Random(seed), [3, 2, 4])
        families.add(plan.subnets[0].network.split(".")[0])
        for s in plan.subnets:
            lengths.add(s.prefixlen)
            gateways.add(s.gateway.rsplit(".", 1)[1])
            assert s.contains(s.gateway)
            addresses = [h.ip for h in plan.hosts_in(s.index)]
            assert all(s.contains(ip) for ip in addresses)
            assert len(set(addresses + [s.gateway])) == len(addresses) + 1
        assert NetworkPlan.from_dict(plan.to_dict()) == plan
        assert plan.nodes[-1] == "r0" and plan.nodes[:2] == ("h1", "h2")
    assert families == {"10", "172", "192"} and {24, 25, 26, 27} <= lengths
    assert len(gateways) > 5


def test_every_intent_keeps_something_blocked() -> None:
    kinds = set()
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2] * rng.randint(2, 4))
        intent = draw_intent(rng, plan)
        pairs = intended_pairs(plan, intent)
        assert 0 < len(pairs) < len(plan.nodes) * (len(plan.nodes) - 1), intent
        assert Intent.from_dict(intent.to_dict()) == intent
        kinds |= {"management"} if intent.management else set()
        kinds |= {"restricted"} if intent.restricted else set()
        kinds |= {"protected"} if intent.protected else set()
    assert kinds == {"management", "restricted", "protected"}


def test_intended_pairs_model() -> None:
    plan = draw_plan(random.Random(1), [2, 2, 2])
    h = {s.index: [x.name for x in plan.hosts_in(s.index)] for s in plan.subnets}
    management = Intent(2, False, False, (), None)
    pairs = intended_pairs(plan, management)
    assert (h[1][0], h[2][0]) not in pairs and (h[2][0], h[1][0]) in pairs
    assert (h[2][0], h[2][1]) in pairs and ("r0", h[2][0]) in pairs
    restricted = Intent(None, False, False, (), Restricted(3, (1,), "lab"))
    pairs = intended_pairs(plan, restricted)
    assert (h[3][0], h[1][0]) in pairs and (h[3][0], h[2][0]) not in pairs
    assert (h[2][0], h[3][0]) not in pairs and ("r0", h[3][0]) in pairs


def test_labels_and_fault_plan() -> None:
    app = RouteApp()
    assert app.labels[2][:5] == ("DR+DI", "DR+RI", "DR+DT", "DR+WR", "RI+WR")
    assert all(label.startswith(("ospf-", "bgp-")) for label in app.labels[2][5:])  # opt-in, FRR
    q = app.generate(5, 3, "DI+WR")
    slots = q.truth["faults"]
    assert [s["type"] for s in slots] == ["DI", "WR"]
    for slot in slots:
        assert len(slot["candidates"]) == CANDIDATES_PER_FAULT
        assert all(c["method"] in METHODS[slot["type"]] for c in slot["candidates"])


def test_prompt_gives_intent_not_configuration() -> None:
    q = RouteApp({"prompt_style": "fewshot_cot"}).generate(9, 1, "DT")
    plan = NetworkPlan.from_dict(q.truth["plan"])
    assert '"machine"' in q.prompt and "Example 1" in q.prompt and "step by step" in q.prompt
    assert all(h.ip in q.prompt and h.intf in q.prompt for h in plan.hosts)
    assert "Expected ping matrix" in q.prompt and "must stay blocked opens" in q.prompt
    assert "iptables -A" not in q.prompt and "DROP" not in q.prompt
    for cand in q.truth["faults"][0]["candidates"]:
        assert cand["method"] not in q.prompt
    assert "Example 1" not in RouteApp().generate(9, 1, "DT").prompt


@pytest.mark.slow  # 400 queries generated (6 s)
def test_prompts_are_fresh_across_seeds() -> None:
    """Issue 13: >= 99% distinct prompts in a run, < 1% shared between two seeds' runs
    (the full 500-query figures come from benchmarks/route_instances.py)."""
    app = RouteApp()
    run_a = [app.generate(s, 1 + s % 3).prompt for s in range(200)]
    run_b = [app.generate(10_000 + s, 1 + s % 3).prompt for s in range(200)]
    assert len(set(run_a)) >= 198
    assert len(set(run_a) & set(run_b)) <= 2


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


def test_topologies_are_mininet_topos(tmp_path: Path) -> None:
    plan = draw_plan(random.Random(4), [2, 3])
    topo = RouterTopo(plan)
    assert plan_of(topo) == plan
    assert topo.nodeInfo("r0")["ip"] == f"{plan.router_ip}/{plan.subnets[0].prefixlen}"
    custom = tmp_path / "mytopo.py"
    custom.write_text(
        "from mininet.topo import Topo\n"
        "class Two(Topo):\n"
        "    def build(self):\n"
        "        r = self.addNode('r0', ip='10.9.1.1/24')\n"
        "        for i in (1, 2):\n"
        "            s = self.addSwitch(f's{i}')\n"
        "            self.addLink(s, r, intfName2=f'r0-eth{i}', params2={'ip': f'10.9.{i}.1/24'})\n"
        "            h = self.addHost(f'h{i}', ip=f'10.9.{i}.10/24',\n"
        "                             defaultRoute=f'via 10.9.{i}.1')\n"
        "            self.addLink(h, s)\n"
    )
    spec = f"{custom}:Two"
    read = plan_of(load_topo_class(spec)())
    assert [s.network for s in read.subnets] == ["10.9.1.0/24", "10.9.2.0/24"]
    assert [(h.name, h.intf, h.ip) for h in read.hosts] == [
        ("h1", "h1-eth0", "10.9.1.10"),
        ("h2", "h2-eth0", "10.9.2.10"),
    ]
    query = RouteApp({"topo": spec}).generate(1, 1)
    assert NetworkPlan.from_dict(query.truth["plan"]) == read and query.truth["topo"] == spec


@pytest.mark.parametrize(
    "bad",
    [
        {"num_subnets": 1},
        {"hosts_per_subnet": 0},
        {"bogus": 1},
        {"num_subnets": 16, "hosts_per_subnet": 16},
        {"topo": "os:path"},
        {"topo": "no such thing"},
        {"topo": "netarena.route.emulator.topology:RouterTopo", "num_subnets": 2},
    ],
)
def test_bad_parameters_rejected(bad: dict) -> None:
    with pytest.raises(ConfigError):
        RouteApp(bad).generate(1, 1)


def test_concurrency_above_the_measured_limit_is_rejected() -> None:
    from netarena.common.core.agents import NullAgent
    from netarena.common.core.runner import RunConfig, Runner
    from netarena.route.sandbox.limits import MAX_CONCURRENT_EPISODES

    app = RouteApp()
    Runner(app, NullAgent(), RunConfig(concurrency=MAX_CONCURRENT_EPISODES))
    with pytest.raises(ConfigError, match="at most 8 episodes"):
        Runner(app, NullAgent(), RunConfig(concurrency=MAX_CONCURRENT_EPISODES + 1))


def test_live_networks_share_a_pair_budget() -> None:
    import threading

    from netarena.route.sandbox.limits import LiveNetworks

    gate = LiveNetworks(episodes=3, pairs=1000)
    gate.acquire(600)
    gate.acquire(300)
    waiting = threading.Thread(target=gate.acquire, args=(400,))
    waiting.start()
    waiting.join(0.2)
    assert waiting.is_alive()  # 1300 > 1000 pairs: it waits
    gate.release(600)
    waiting.join(2)
    assert not waiting.is_alive()
    gate.release(300)
    gate.release(400)
    gate.acquire(5000)  # alone, a network always fits
    gate.release(5000)


def test_a_remote_request_cannot_choose_code_to_import() -> None:
    import json as _json

    from netarena.common.serving.request import load_request, parse_request

    text = _json.dumps(
        {"participants": {"route_operator": "http://127.0.0.1:1"}, "config": {"topo": "os:sep"}}
    )
    with pytest.raises(ConfigError, match="topo"):
        parse_request(load_request(text), RouteApp)


def test_a_hosts_dead_gateway_fault_often_adds_a_route_to_a_part_of_a_subnet() -> None:
    """Not only its default route: a route to a part of a live subnet holding a host, its
    own subnet or another, with a metric at times, as the design's hosts hold routes of their
    own (the audit's default-route tell)."""
    from netarena.route.static.faults import sample_fault

    routes = []
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        fault = sample_fault(rng, plan, intent, "WR", "unreachable_gateway")
        if fault["node"] == "r0" or (intent.restricted and
                                     intent.restricted.subnet == plan.host(fault["node"]).subnet):
            continue
        routes.append((plan, intent, fault))
    specific = [(p, i, f) for p, i, f in routes if f.get("route", "default") != "default"]
    assert 0.75 < len(specific) / len(routes) < 0.97, (len(specific), len(routes))
    own_subnet = 0
    for plan, intent, fault in specific:
        cut = {b.subnet for b in intent.blocks if b.kind == "subnet_cut"}
        holders = [s for s in plan.subnets if s.index not in cut
                   and ipaddress.ip_network(fault["route"]).subnet_of(
                       ipaddress.ip_network(s.network))]
        assert holders and any(ipaddress.ip_address(h.ip) in ipaddress.ip_network(fault["route"])
                               for h in plan.hosts_in(holders[0].index)), fault
        own_subnet += holders[0].index == plan.host(fault["node"]).subnet
    assert 0.15 < own_subnet / len(specific) < 0.5, own_subnet
    assert 0.4 < sum(bool(f.get("metric")) for _, _, f in specific) / len(specific) < 0.8


def test_route_faults_take_only_destinations_the_designs_routes_have() -> None:
    """A host's dead-gateway route goes to a part of a subnet, and a loop never to one
    machine: the design's hosts route parts only, and its routes to one machine are device
    routes (each shape was a fault's alone, 2.3% and 3.5% of faults' routes)."""
    from netarena.route.static.faults import sample_fault

    host_routes = 0
    for seed in range(400):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        fault = sample_fault(rng, plan, intent, "WR", "unreachable_gateway")
        if fault["node"] != "r0" and fault.get("route", "default") != "default":
            host_routes += 1
            whole = {s.network for s in plan.subnets}
            assert fault["route"] not in whole, fault
        loop = sample_fault(rng, plan, intent, "WR", "loop")
        assert not loop["dst"].endswith("/32"), loop
    assert host_routes > 100


def test_ranges_holding_a_host_take_the_lengths_free_ranges_take() -> None:
    """One length law for a fault's range (it holds a host) and the design's free one: drawn
    from the same state, both are the same length (the audit's ``prefix_delta`` tell: a
    range one bit longer than its subnet was a fault's nine times in ten)."""
    from netarena.route.emulator.targets import draw_range

    deltas = []
    for seed in range(200):
        plan = draw_plan(random.Random(seed), [3, 2])
        subnet = plan.subnets[seed % 2]
        held = draw_range(random.Random(f"r{seed}"), plan, subnet.index, with_hosts=True)
        free = draw_range(random.Random(f"r{seed}"), plan, subnet.index, with_hosts=False)
        if held is None or free is None:
            continue
        held_net, free_net = ipaddress.ip_network(held), ipaddress.ip_network(free)
        assert held_net.prefixlen == free_net.prefixlen, (held, free)
        assert any(ipaddress.ip_address(h.ip) in held_net for h in plan.hosts_in(subnet.index))
        assert not any(ipaddress.ip_address(a) in free_net
                       for a in (subnet.gateway, *(h.ip for h in plan.hosts_in(subnet.index))))
        deltas.append(held_net.prefixlen - ipaddress.ip_network(subnet.network).prefixlen)
    assert len(deltas) > 150 and len(set(deltas)) > 3


def test_the_design_routes_a_range_twice_and_hosts_take_a_gateways_address() -> None:
    """Twins of two fault shapes: a metric fault's pair of routes to one range (the design's
    primary and backup paths), and a host's duplicate address that is another subnet's
    gateway, as the addresses the design's hosts hold are (never its own gateway's)."""
    from netarena.route.emulator.undisclosed import draw_undisclosed
    from netarena.route.static.faults import sample_fault

    pairs = gateways = duplicates = 0
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        for item in draw_undisclosed(rng, plan, intent).items:
            dsts = [line.split()[2] for line in item.ip if line.startswith("route add ")]
            pairs += item.kind == "static_route" and len(dsts) == 2 and dsts[0] == dsts[1]
        fault = sample_fault(rng, plan, intent, "RI", "duplicate_ip")
        if fault["node"] != "r0":
            duplicates += 1
            assert fault["value"] != plan.subnet(fault["subnet"]).gateway
            gateways += fault["value"] in {s.gateway for s in plan.subnets}
    assert pairs > 10
    assert 0.2 < gateways / duplicates < 0.6, (gateways, duplicates)


def test_wrong_routes_sometimes_aim_at_one_machine_as_the_designs_pinned_routes_do() -> None:
    """A /32 route is no fault's mark: faults send one machine astray, and the design pins
    machines to their own links (the audit's ``destination=one-machine``)."""
    from netarena.route.emulator.undisclosed import draw_undisclosed
    from netarena.route.static.faults import sample_fault

    faults = pins = 0
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        machines = {f"{h.ip}/32" for h in plan.hosts}
        fault = sample_fault(rng, plan, intent, "WR", rng.choice(("wrong_interface", "loop")))
        faults += fault.get("dst") in machines
        for item in draw_undisclosed(rng, plan, intent).items:
            pins += item.kind == "static_route" and item.ip[0].split()[2] in machines
    assert 0.05 < faults / 300 < 0.3, faults
    assert pins > 10, pins


def test_a_fault_refusing_a_host_is_written_as_the_designs_hosts_refuse() -> None:
    """One rule, or one per protocol, for a fault's all-protocol block on a host's INPUT as
    for the design's out-of-service host (a lone rule per host was faults' alone; the drops
    beside it: ``test_fault_shapes``); and
    faults' filters aim at hosts, pairs, ranges and subnets as the design's rules do."""
    from collections import Counter

    from netarena.route.static.faults import sample_fault

    shapes: Counter[int] = Counter()
    aims: Counter[str] = Counter()
    for seed in range(400):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        fault = sample_fault(rng, plan, intent, "DT", rng.choice(("iptables_drop",
                                                                  "iptables_reject")))
        aims[fault["target"]["kind"]] += 1
        if fault["node"] != "r0" and fault["rules"][0]["match"][:1] != ["!"]:
            refusal = 1 if fault["rules"][0]["match"] == [] else 3  # then drops beside it
            shapes[refusal] += 1
            if refusal == 3:
                assert [r["match"] for r in fault["rules"][:3]] == [
                    ["-p", "icmp"], ["-p", "tcp"], ["-p", "udp"]]
    assert set(shapes) == {1, 3} and min(shapes.values()) > 10, shapes
    assert aims["host"] > aims["range"] > aims["subnet"] > 20, aims


def test_hosts_run_firewalls_and_a_fault_may_finish_one() -> None:
    """About half the hosts in service and unguarded run a stateful firewall (a fault's rule
    sat alone in an empty chain more often than the design's did), some with an allow-list
    staged before a final rule that never lets every subnet in; hosts out of service have
    none (their own traffic would come back as established). A fault refusing a whole host
    in one rule is mostly appended, as a guarded host's final rule is."""
    from netarena.route.emulator.undisclosed import draw_undisclosed
    from netarena.route.static.faults import sample_fault

    walled = eligible = staged = appended = whole = 0
    for seed in range(300):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        kept_out = {p.host for p in intent.protected} | {
            b.host for b in intent.blocks if b.kind == "host_off"}
        hosts = {item.node: item for item in draw_undisclosed(rng, plan, intent).items
                 if item.kind == "host_firewall"}
        assert not set(hosts) & kept_out
        eligible += sum(h.name not in kept_out and h.subnet not in intent.cut_subnets
                        for h in plan.hosts)
        walled += len(hosts)
        for item in hosts.values():
            allowed = [line for line in item.filter if line.startswith("-A INPUT -s ")]
            staged += bool(allowed)
            assert len(allowed) < len(plan.subnets)
        fault = sample_fault(rng, plan, intent, "DT", "iptables_drop")
        if fault["node"] != "r0" and [r["match"] for r in fault["rules"]] == [[]]:
            whole += 1
            appended += fault["rules"][0]["at"] is None
    assert 0.4 < walled / eligible < 0.6 and 0.3 < staged / walled < 0.7, (walled, staged)
    assert 0.55 < appended / whole < 0.85, (appended, whole)


def test_policy_rules_select_as_the_designs_do() -> None:
    """A fault's wrong route in a policy table is chosen by a rule shaped as the design's:
    from one subnet, for all its traffic, its traffic to the target's whole subnet, or to
    the range (a rule to the whole subnet was the design's alone); never a table for one
    machine (the design's tables route ranges); and the design sometimes sends one source's
    traffic to two tables (two rules from one subnet were faults' alone), and sometimes
    through a gateway no machine holds (faults' dead gateways were the only ones in tables)."""
    from collections import Counter

    from netarena.route.emulator.undisclosed import draw_undisclosed
    from netarena.route.static.faults import sample_fault

    selects: Counter[str] = Counter()
    doubles = gone = 0
    for seed in range(400):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        intent = draw_intent(rng, plan)
        fault = sample_fault(rng, plan, intent, "WR", rng.choice(("wrong_interface", "loop")))
        if fault.get("table"):
            assert not fault["dst"].endswith("/32"), fault
            if fault["from"] is None:
                selects["from all"] += 1
            elif fault["to"] is None:
                selects["all of a subnet's"] += 1
            else:
                whole = plan.subnet_of_ip(fault["dst"].split("/")[0])
                selects["subnet" if whole and fault["to"] == whole.network else "range"] += 1
        held = {s.gateway for s in plan.subnets} | {h.ip for h in plan.hosts}
        for item in draw_undisclosed(rng, plan, intent).items:
            rules = [line for line in item.ip if line.startswith("rule add from")]
            doubles += item.kind == "policy_routing" and len(rules) == 2
            gone += sum(line.split()[4] not in held for line in item.ip
                        if item.kind == "policy_routing" and " table " in line and " via " in line)
    assert min(selects.values()) > 5 and len(selects) == 4, selects
    assert doubles > 5 and gone > 5, (doubles, gone)
