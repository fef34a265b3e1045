"""Faults drawn in the design's own shapes, and the design's blocks in faults': a service's
ACL over a port or a block of ports, a subnet refused as management is, an out-of-service
host's per-protocol drops."""

from __future__ import annotations

import ipaddress
import math
import random
from collections import Counter

from netarena.common.core.app import load_app
from netarena.route import draw_plan
from netarena.route.emulator.intent import draw_intent
from netarena.route.emulator.plan import ROUTER
from netarena.route.emulator.topology import topology_of
from netarena.route.emulator.twins import draw_twins
from netarena.route.emulator.undisclosed import Undisclosed, draw_undisclosed
from netarena.route.judge.hidden import ports_named
from netarena.route.static.faults import sample_fault
from netarena.route.static.looks import design_looks


def _designs(n: int):
    for seed in range(n):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2, 2])
        yield rng, plan, draw_intent(rng, plan)


def test_a_services_acl_fault_names_a_block_from_below_its_port_as_the_designs_do() -> None:
    """A host's TCP fault is mostly a service's ACL (everyone but one subnet, inserted
    first) naming a block of ports around the TCP service, starting below it, as the
    design's service ACLs name their own port alone or first in a block; a design block
    never holds another service's port nor the judged ones."""
    faults: Counter[bool] = Counter()
    design: Counter[bool] = Counter()
    for rng, plan, intent in _designs(600):
        local = draw_undisclosed(rng, plan, intent)
        fault = sample_fault(rng, plan, intent, "DT", "tcp_service_drop", local.tcp_port)
        rule = fault["rules"][0]
        if rule["at"] == "first":
            span = rule["match"][3]
            low, _, high = span.partition(":")
            assert int(low) < local.tcp_port <= int(high)
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
    assert faults[True] > 50 and min(design.values()) > 10, (faults, design)


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


def test_a_subnets_filter_fault_takes_the_forms_management_is_refused_with() -> None:
    """A subnet's drop or reject on the router keeps both directions, or only what enters
    the subnet: ``-d S`` or ``! -s S -d S``, dropped or administratively prohibited, the
    forms the design refuses traffic toward its management subnet with (faults had neither
    inbound form: an audit tell)."""
    forms: Counter[str] = Counter()
    for rng, plan, intent in _designs(500):
        fault = sample_fault(rng, plan, intent, "DT", rng.choice(("iptables_drop",
                                                                   "iptables_reject")))
        if fault["node"] != ROUTER or fault["target"]["kind"] != "subnet":
            continue
        net = plan.subnet(fault["subnet"]).network
        matches = sorted(" ".join(r["match"]) for r in fault["rules"])
        form = {f"-d {net}|-s {net}": "both", f"-d {net}": "dest",
                f"! -s {net} -d {net}": "others"}.get("|".join(matches))
        assert form is not None, matches
        forms[form] += 1
        if form != "both":  # refused as the design refuses it: dropped, or prohibited
            assert all(r["verdict"][-1] in ("DROP", "icmp-admin-prohibited")
                       for r in fault["rules"]), fault["rules"]
    assert forms["both"] > 8 and forms["dest"] > 25 and forms["others"] > 8, forms


def test_a_hosts_refusal_is_one_rule_or_three_and_the_routers_often_prohibited() -> None:
    """A fault refusing every protocol on a host without a firewall is one rule or one per
    protocol, half the time each, as an out-of-service host's refusal is drawn, and comes
    with a ping or UDP drop beside it as often as the design's does (alone, faults' host
    chains of two rules were 0.2% of their blocking rules, 5.1% of the design's); a
    router's rejects answer ``icmp-admin-prohibited`` about as often as a port unreachable
    (the design's do)."""
    host_rules: Counter[int] = Counter()
    beside: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    for rng, plan, intent in _designs(600):
        fault = sample_fault(rng, plan, intent, "DT", "iptables_reject")
        if fault["node"] == ROUTER:
            answers.update(r["verdict"][-1] for r in fault["rules"])
            continue
        refusal = 1 if fault["rules"][0]["match"] == [] else 3
        host_rules[refusal] += 1
        drops = [r["match"][1] for r in fault["rules"][refusal:]]
        assert set(drops) <= {"icmp", "udp"} and len(drops) == len(set(drops)), fault["rules"]
        beside.update(drops or ["none"])
    assert 0.4 < host_rules[3] / host_rules.total() < 0.6, host_rules
    assert 0.3 < beside["icmp"] / host_rules.total() < 0.5, beside
    assert 0.3 < beside["udp"] / host_rules.total() < 0.5, beside
    assert answers["icmp-admin-prohibited"] > answers["icmp-port-unreachable"] > 20, answers


def test_an_out_of_service_hosts_input_drops_ping_or_udp_alone_as_faults_do() -> None:
    """The design's host out of service repeats an ICMP or a UDP drop now and then, on its
    own INPUT as a fault on a host writes it (faults' per-protocol host rules were a tell)."""
    protocols: Counter[str] = Counter()
    for rng, plan, intent in _designs(250):
        off = [b for b in intent.blocks if b.kind == "host_off"]
        for record in draw_twins(rng, plan, tuple(off), (5000, 6000)):
            if record["node"] == ROUTER or record["method"] not in ("icmp_drop", "udp_reject"):
                continue
            assert all(r["chain"] == "INPUT" for r in record["rules"])
            protocols[record["rules"][0]["match"][1]] += 1
    assert protocols["icmp"] > 25 and protocols["udp"] > 25, protocols


def test_the_design_never_leaves_a_down_link_with_a_small_mtu_as_no_fault_does() -> None:
    """A fault takes a link down or shrinks its MTU, never both; the design's blocks did
    both to one interface (31 of its 454 link objects, none of 400 faults')."""
    methods: Counter[str] = Counter()
    for rng, plan, intent in _designs(600):
        by_target: dict[str, set[str]] = {}
        for record in draw_twins(rng, plan, intent.blocks, (5000, 6000)):
            by_target.setdefault(str(record.get("target")), set()).add(record["method"])
            methods[record["method"]] += 1
        for held in by_target.values():
            assert not ("mtu_too_small" in held and held & {"link_down", "ifconfig_down"}), held
    assert methods["mtu_too_small"] > 20 and methods["link_down"] > 40, methods


def test_the_design_routes_a_hosts_service_addresses_as_a_block_not_one_by_one() -> None:
    """A route to one unassigned address of a subnet was the design's alone (no fault routes
    one): a host's service addresses inside its subnet are a free block routed to it whole,
    and the host holds one address of it."""
    pools = 0
    for rng, plan, intent in _designs(200):
        subnets = [ipaddress.ip_network(s.network) for s in plan.subnets]
        items = [i for i in draw_undisclosed(rng, plan, intent).items if i.kind == "vip"]
        held = {ipaddress.ip_address(i.ip[0].split()[2].removesuffix("/32"))
                for i in items if i.node != ROUTER}
        for item in items:
            if item.node != ROUTER or not item.ip[0].startswith("route add "):
                continue
            dest = ipaddress.ip_network(item.ip[0].split()[2])
            if any(dest.subnet_of(net) for net in subnets):
                assert dest.prefixlen < 32, item.ip
                assert any(a in dest for a in held), item.ip
                pools += 1
    assert pools > 10


def test_the_designs_routes_and_addresses_stay_inside_the_inventorys_subnets() -> None:
    """A route to a range outside the inventory's subnets, or a host's route through its own
    gateway, breaks no probed flow, so no fault takes either form: the audit ranked them as
    the design's with certainty. The design takes an unused part of a subnet instead."""
    seen = 0
    for rng, plan, intent in _designs(300):
        subnets = [ipaddress.ip_network(s.network) for s in plan.subnets]
        for item in draw_undisclosed(rng, plan, intent).items:
            if item.kind not in ("vip", "static_route", "host_route", "policy_routing"):
                continue
            for line in item.ip:
                words = line.split()
                if words[0] == "rule":
                    continue
                target = ipaddress.ip_network(words[2], strict=False)
                assert any(target.subnet_of(net) for net in subnets), line
                seen += 1
                if item.kind == "host_route":
                    gateway = words[words.index("via") + 1]
                    host = plan.host(item.node)
                    assert gateway != plan.subnet(host.subnet).gateway, line
    assert seen > 300


def test_a_fault_inside_a_hosts_firewall_refuses_as_the_firewall_itself_does() -> None:
    """Below an undisclosed firewall's established shortcut, a fault refuses everything in
    one appended rule, as a guarded host's final rule does; below a guarded host's, it
    writes nothing (after the final rule it would refuse nothing). An ICMP, TCP or UDP rule
    goes inside a firewall never (the design holds none there: a third of faults' blocking
    rules on hosts did), but a service's ACL may still be inserted above everything, and
    the faults that would have landed inside go to another host."""
    seen: Counter[str] = Counter()
    for rng, plan, intent in _designs(800):
        local = draw_undisclosed(rng, plan, intent)
        firewalled = frozenset(i.node for i in local.items if i.kind == "host_firewall")
        guarded = {p.host for p in intent.protected}
        method = rng.choice(("icmp_drop", "udp_reject", "tcp_service_drop", "iptables_drop",
                             "iptables_reject"))
        fault = sample_fault(rng, plan, intent, "DT", method, local.tcp_port, firewalled)
        inside = [r for r in fault["rules"] if r["chain"] == "INPUT" and r["at"] != "first"]
        seen["host"] += fault["node"] != ROUTER
        if fault["node"] in guarded:
            assert not inside, fault["rules"]
            seen["guarded"] += 1
        elif fault["node"] in firewalled:
            for rule in inside:
                assert rule["match"] == [] and rule["at"] is None, (method, fault["rules"])
            seen["acl" if not inside else "final"] += 1
    assert seen["acl"] > 5 and seen["final"] > 20 and seen["guarded"] > 5, seen
    assert seen["host"] > 200, seen  # a third of these faults still sit on a host


def test_an_address_fault_holds_what_the_designs_addresses_hold() -> None:
    """A wrong address sits on the router's ports about as often as on hosts (the design's
    service addresses do); a duplicate is never the holder's own gateway's nor, on the
    router, a gateway's at all (the design's router holds a machine's); and only a host's
    address takes another length. Networks of two subnets too, where a host's subnet may
    have no other gateway than the router's first."""
    wrong: Counter[bool] = Counter()
    for seed in range(400):
        rng = random.Random(seed)
        plan = draw_plan(rng, [2, 2] if seed % 2 else [2, 2, 2])
        intent = draw_intent(rng, plan)
        gateways = {s.gateway for s in plan.subnets}
        fault = sample_fault(rng, plan, intent, "RI", "duplicate_ip")
        if fault["node"] == ROUTER:
            assert fault["value"] not in gateways
        else:
            assert fault["value"] != plan.subnet(fault["subnet"]).gateway
        assert sample_fault(rng, plan, intent, "RI", "wrong_prefix")["node"] != ROUTER
        wrong[sample_fault(rng, plan, intent, "RI", "wrong_ip")["node"] == ROUTER] += 1
    assert 0.35 < wrong[True] / 400 < 0.65, wrong


def test_a_hosts_refusal_lands_mostly_in_a_firewall_and_names_no_service_port() -> None:
    """A refusal of everything aimed at a host goes mostly to one running a firewall (its
    final rule then, as the design's refusals on hosts mostly are: aimed at any host,
    faults' refusals sat alone on a bare host in 41% of their host rules against the
    design's 12%); and a TCP drop on a host's INPUT names the service port only inside an
    ACL's block (none of the design's host rules names it)."""
    placed: Counter[bool] = Counter()
    for rng, plan, intent in _designs(600):
        local = draw_undisclosed(rng, plan, intent)
        firewalled = frozenset(i.node for i in local.items if i.kind == "host_firewall")
        method = rng.choice(("iptables_drop", "iptables_reject", "tcp_service_drop"))
        fault = sample_fault(rng, plan, intent, "DT", method, local.tcp_port, firewalled)
        if fault["node"] == ROUTER:
            continue
        if method == "tcp_service_drop":
            named = [r for r in fault["rules"] if str(local.tcp_port) in r["match"]]
            assert all(r["at"] == "first" for r in named), fault["rules"]
        elif firewalled:
            placed[fault["node"] in firewalled] += 1
    assert placed[True] > 2 * placed[False] > 20, placed


def test_a_fault_seldom_takes_a_look_the_designs_one_of_a_kind_objects_hold() -> None:
    """The design's extra addresses come one of a kind (a service address, one held for
    another machine, a host's own under another length), and so do its refusing policy
    rules: an address fault drawn blind to them shared its class (``looks.DesignLooks.look_of``)
    with one of them 43% of the time, a refusing rule its destination's 52%; the design's
    addresses with each other 17%, its rules 25%."""
    app = load_app("route")
    shared: dict[str, Counter[bool]] = {"address": Counter(), "rule": Counter()}
    for seed in range(300):
        for label in ("RI", "DR"):
            query = app.generate(seed, 1, label)
            plan, _, _ = topology_of(query)
            local = Undisclosed.from_dict(query.truth["undisclosed"])
            held = design_looks(plan, local)
            for fault in query.truth["faults"][0]["candidates"]:
                if (look := held.look_of(fault)) is not None:
                    shared[look[0]][look in held.held] += 1
    for kind, counts in shared.items():
        assert counts[True] < 0.25 * sum(counts.values()) and counts[False] > 200, (kind, counts)


def test_the_designs_policy_lookups_per_network_vary_as_a_poisson_count() -> None:
    """A fault's rule sits among the design's lookups of its network, so their count must
    vary as a count of independent rules does: from one or two tables, 45% of networks had
    one lookup against a Poisson's 36% (variance 0.72 of the mean), and a fault's rule was
    its network's lowest or highest preference more often than the design's."""
    app = load_app("route")
    counts: Counter[int] = Counter()
    for seed in range(600):
        query = app.generate(seed, 1, ("RI", "DR", "DI", "DT", "WR")[seed % 5])
        local = Undisclosed.from_dict(query.truth["undisclosed"])
        counts[sum(" lookup " in line for i in local.items for line in i.ip)
               + sum(1 for r in local.twins if r.get("table"))] += 1
    n = counts.total()
    mean = sum(k * v for k, v in counts.items()) / n
    variance = sum((k - mean) ** 2 * v for k, v in counts.items()) / n
    assert 0.85 < variance / mean < 1.15, (mean, variance, counts)
    assert abs(counts[1] / n - mean * math.exp(-mean)) < 0.04, (mean, counts)
