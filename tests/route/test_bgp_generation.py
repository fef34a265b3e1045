"""Multi-AS BGP queries: labels, pure generation, designs, the ticket, the solver's reading."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.route import RouteApp
from netarena.route.frr.bgp_design import LIMITS, draw_bgp_plan
from netarena.route.frr.bgp_faults import BGP_FAULTS, BGP_LEVEL_LABELS, bgp_fault_lines
from netarena.route.frr.bgp_model import best_routes, reachable, sent, unmasks
from netarena.route.frr.bgp_plan import BgpPlan
from netarena.route.frr.bgp_policy import LOCAL_PREF, imports
from netarena.route.frr.bgp_reading import read_intent, read_look
from netarena.route.frr.bgp_solver import router_problems
from netarena.route.frr.bgp_ttl import TTL_LINES, ttl_passes, ttl_works
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
    assert {q.truth["kind"] for q in asked} == {"bgp"}


def test_designs_are_regions_of_real_networks_with_policies_on_every_ebgp_neighbour() -> None:
    """Issue 37: ASes are regions of Topology Zoo and SNDlib networks; healthy designs bind
    route-maps and prefix-lists to every eBGP neighbour (customer, peer, transit)."""
    kinds: set[str] = set()
    for seed in range(40):
        plan = draw_bgp_plan(random.Random(seed))
        assert plan.source.startswith(("topozoo/", "sndlib/")) and plan.sites
        assert 4 <= len(plan.routers) <= 8 and 2 <= len(plan.ases) <= 4
        assert all(1 <= len(rs) <= 3 for rs in plan.ases.values())
        inter = [x for x in plan.links if not plan.internal(x)]
        pairs = [frozenset((plan.asn[x.a], plan.asn[x.b])) for x in inter]
        assert len(pairs) == len(set(pairs)) == len(plan.relations)  # one session per pair
        assert len(reachable(plan, [])) == len(plan.routers) * (len(plan.routers) - 1)
        for router in plan.routers:
            for n in plan.neighbors(router):
                if n.ibgp:
                    continue
                assert n.route_map_in, (seed, router, n)
                rel = plan.relation(plan.asn[router], n.remote_as)
                assert bool(n.prefix_list_out) == (rel != "customer")
                kinds.add(rel)
        assert any(s.kind == "multihop" for s in plan.sessions)
    assert kinds == {"customer", "peer", "provider"}
    assert OspfPlan in BgpPlan.__mro__


def test_cones_are_filtered_by_the_route_map_or_by_a_prefix_list_bound_inbound() -> None:
    """Issue 37 (the BGP audit's local-preference tell, AUC 1.000): with every cone matched
    in its route-map, a route-map entry setting a preference without matching a list was
    always the provider's (50), and a fault raising it stood alone. About half the
    customers' and peers' cones are now filtered by a prefix-list bound inbound, their
    route-maps only setting the preference; the list then decides what is admitted."""
    unmatched: Counter[int | None] = Counter()
    styles: set[str] = set()
    for seed in range(40):
        plan = draw_bgp_plan(random.Random(seed))
        for router in plan.routers:
            policy = plan.policy(router)
            for n in plan.neighbors(router):
                if n.ibgp:
                    continue
                rel = plan.relation(plan.asn[router], n.remote_as)
                entries = policy.route_maps[n.route_map_in]
                unmatched.update(p for _, a, m, p in entries if a == "permit" and m is None)
                if not n.prefix_list_in:
                    styles.add("match" if rel != "provider" else "provider")
                    continue
                styles.add("list")
                assert rel != "provider" and all(m is None for _, _, m, _ in entries)
                for prefix in plan.cone(n.remote_as):
                    assert imports(policy, n.address, prefix) == LOCAL_PREF[rel]
                    gone = policy.without_entry(n.prefix_list_in, prefix)
                    assert imports(gone, n.address, prefix) is None
    assert styles == {"list", "match", "provider"}
    assert unmatched[LOCAL_PREF["customer"]] and unmatched[LOCAL_PREF["peer"]]
    assert unmatched[LOCAL_PREF["provider"]] < 0.8 * sum(unmatched.values()), unmatched


def test_ttl_handling_varies_as_operators_vary_it_and_each_as_sets_its_own_end() -> None:
    """Single-hop sessions check TTL security with one hop or two, sometimes one at each
    end (both accept a direct neighbour). A loopback session's two ends, set by two ASes,
    always differ in kind and always work together (TTL security against ``ebgp-multihop
    255``, ``ebgp-multihop 2`` against ``disable-connected-check``): a fault's TTL line,
    whose partner fails it, is then never the only line of a kind that designs pair, and
    a network's count of each kind says nothing (the BGP audit's tells, issue 37)."""
    ways: dict[str, set[str]] = {"multihop": set(), "ebgp": set()}
    mixed = 0
    for seed in range(60):
        plan = draw_bgp_plan(random.Random(seed))
        for s in plan.sessions:
            if s.kind == "ibgp":
                continue
            a, b = plan.ttl_at(s.link, s.a), plan.ttl_at(s.link, s.b)
            ways[s.kind] |= {a, b}
            if s.kind == "multihop":
                assert ttl_works(a, b) and TTL_LINES[a].split()[0] != TTL_LINES[b].split()[0]
            elif a != b:
                assert {a, b} == {"gtsm1", "gtsm2"}, (seed, s)
                mixed += 1
    assert ways == {
        "multihop": {"multihop", "multihop255", "gtsm1", "gtsm2", "connected"},
        "ebgp": {"", "gtsm1", "gtsm2"},
    }
    assert mixed >= 5


def test_which_ttl_handling_works_is_what_frr_does() -> None:
    """The pairs checked on FRR 8 (a loopback session between neighbours): TTL security
    passes only 254 or 255, which ``ebgp-multihop 2`` and ``disable-connected-check`` do
    not send."""
    assert ttl_works("gtsm1", "multihop255") and ttl_works("gtsm2", "gtsm1")
    assert ttl_works("multihop", "connected") and ttl_works("connected", "connected")
    assert not ttl_works("gtsm1", "connected") and not ttl_works("gtsm2", "multihop")
    assert ttl_passes(["ebgp-multihop 254", "update-source lo"], ["ttl-security hops 2"])
    assert not ttl_passes(["ebgp-multihop 254"], ["ttl-security hops 1"])


def test_generation_is_pure_and_the_prompt_is_a_ticket_not_a_config() -> None:
    for label in _ALL:
        q = _query(7, label)
        assert q == _query(7, label) and q.truth["kind"] == "bgp"
        plan = BgpPlan.from_dict(q.truth["plan"])
        assert BgpPlan.from_dict(plan.to_dict()) == plan
        assert "## Incident ticket" in q.prompt and "## Routing design" in q.prompt
        for router in plan.routers:  # no configuration line of any router is shown
            for line in plan.frr_config(router).splitlines():
                if line.strip() not in ("!", "exit", ""):
                    assert line.strip() not in q.prompt, line
        assert label not in q.prompt and "bgp-" not in q.prompt
        assert "maximum-prefix" not in q.prompt and "CONE-" not in q.prompt
        assert "ttl-security" not in q.prompt and "multihop 2" not in q.prompt


@pytest.mark.parametrize("label", _ALL)
def test_every_fault_changes_bgp_routing_and_the_ticket_says_so(label: str) -> None:
    for seed in range(12):
        q = _query(seed, label)
        plan = BgpPlan.from_dict(q.truth["plan"])
        faults = q.truth["faults"]
        assert len(faults) == label.count("+") + 1
        assert best_routes(plan, faults) != best_routes(plan, [])
        assert "Routing alarms" not in q.prompt, (label, seed)
        for fault in faults:
            assert bgp_fault_lines(fault, plan)


@pytest.mark.parametrize("kind", list(BGP_FAULTS))
def test_a_fault_value_is_one_the_design_carries(kind: str) -> None:
    """No fault value is out of the design's distribution (issue 37's shape shortcuts)."""
    for seed in range(10):
        q = _query(seed, kind)
        plan = BgpPlan.from_dict(q.truth["plan"])
        (fault,) = q.truth["faults"]
        if kind == "bgp-remote-as":  # another AS of the design, or the peer's mistyped
            assert fault["asn"] in plan.ases or _one_typo(fault["asn"], plan.asn[fault["peer"]])
        elif kind == "bgp-neighbor":
            links = {ip for x in plan.links for ip in (x.a_ip, x.b_ip)}
            assert fault["address"] in {*plan.loopbacks.values(), *links}
        elif kind == "bgp-maxprefix":  # on eBGP, a step or two of the design's ladder below
            sends = len(sent(plan, fault["peer"], fault["router"]))
            assert fault["limit"] in [x for x in LIMITS if x < sends][-2:]
            assert plan.sessions[fault["session"]].kind != "ibgp"
        elif kind == "bgp-multihop":  # a way the design has, one the peer's end fails
            assert fault["ttl"] in plan.ttl.values()
            session = plan.sessions[fault["session"]]
            assert not ttl_works(fault["ttl"], plan.ttl_at(session.link, fault["peer"]))
        elif kind == "bgp-filter":
            assert fault["name"] in plan.policy(fault["router"]).prefix_lists


def _one_typo(typed: int, right: int) -> bool:
    """Two neighbouring digits swapped, or one digit off by one."""
    a, b = str(typed), str(right)
    diffs = [i for i in range(len(a)) if len(a) == len(b) and a[i] != b[i]]
    if len(diffs) == 1:
        return abs(int(a[diffs[0]]) - int(b[diffs[0]])) == 1
    return len(diffs) == 2 and diffs[1] == diffs[0] + 1 and a[diffs[0]] == b[diffs[1]] and (
        a[diffs[1]] == b[diffs[0]]
    )


@pytest.mark.slow  # hundreds of queries generated (6 s)
def test_instances_are_distinct_within_and_across_seeds() -> None:
    app = RouteApp()
    first = [app.instance_key(_query(s, _ALL[s % len(_ALL)])) for s in range(150)]
    assert len(set(first)) >= 0.99 * len(first)
    other = {app.instance_key(_query(20_000 + s, "bgp-filter")) for s in range(60)}
    assert len(other & set(first)) <= 0.01 * len(other)


@pytest.mark.slow  # every repair order of many queries (6 s)
def test_combined_faults_sit_on_different_sessions_and_no_repair_order_loses_reachability() -> None:
    for seed in range(15):
        for label in (*BGP_LEVEL_LABELS[2], *BGP_LEVEL_LABELS[3]):
            query = _query(seed, label)
            faults = query.truth["faults"]
            sessions = [f["session"] for f in faults if "session" in f]
            assert len(sessions) == len(set(sessions))
            assert not unmasks(BgpPlan.from_dict(query.truth["plan"]), faults), query.id


def test_three_session_faults_fit_a_five_router_network() -> None:
    """A fault's peer may be another fault's router (their routers and sessions stay
    distinct). Kept apart too, three session faults needed six routers, and the label's
    networks were a router larger than the others' (7.6 against 6.4), design lines no
    other label's faults sit among (``netarena audit route``)."""
    from netarena.route.frr.bgp_faults import draw_bgp_faults

    rng = random.Random(3)
    label = "bgp-multihop+bgp-activate+bgp-nexthop"
    drawn = [draw_bgp_faults(rng, draw_bgp_plan(rng, 5), label) for _ in range(120)]
    fitted = [faults for faults in drawn if faults is not None]
    assert len(fitted) >= 3
    for faults in fitted:
        assert len({f["router"] for f in faults}) == len({f.get("session") for f in faults}) == 3


def test_the_solver_reads_the_intent_and_the_routers() -> None:
    q = _query(9, "bgp-filter", num_routers=6)
    plan = BgpPlan.from_dict(q.truth["plan"])
    intent = read_intent(q.prompt)
    assert intent.routers == list(plan.routers) and intent.asn == plan.asn
    assert intent.pref == LOCAL_PREF
    for router in plan.routers:
        assert intent.stub[router] == plan.stub_of(router).network
        assert {a for a, _ in intent.neighbors[router].items()} == {
            n.address for n in plan.neighbors(router)
        }
    for asn in plan.ases:
        assert intent.cone(asn) == plan.cone(asn)
    looks = {r: read_look(plan.frr_config(r)) for r in plan.routers}
    for router in plan.routers:  # the healthy configuration needs nothing
        assert router_problems(router, looks[router], intent, looks) is None, router


def _mended(label: str, seed: int) -> tuple[str, str]:
    """A fault of ``label`` read back into its router's look, and the solver's repair."""
    q = _query(seed, label, num_routers=6)
    plan = BgpPlan.from_dict(q.truth["plan"])
    intent = read_intent(q.prompt)
    (fault,) = q.truth["faults"]
    router = fault["router"]
    look = read_look(plan.frr_config(router))
    lines = bgp_fault_lines(fault, plan)
    peer = fault.get("peer")
    address = next((s.addr(peer) for s in plan.sessions_of(router) if s.peer(router) == peer), "")
    if label == "bgp-remote-as":
        look.neighbors[address] = [
            x if not x.startswith("remote-as") else f"remote-as {fault['asn']}"
            for x in look.neighbors[address]
        ]
    elif label == "bgp-neighbor":
        look.neighbors[fault["address"]] = look.neighbors.pop(address)
    elif label == "bgp-activate":
        look.neighbors[address].remove("activate")
    elif label == "bgp-network":
        look.networks.discard(fault["prefix"])
    elif label == "bgp-nexthop":
        look.neighbors[address].remove("next-hop-self")
    elif label == "bgp-maxprefix":
        look.state[address] = "Idle (PfxCt)"
    elif label == "bgp-filter":
        entries = look.prefix_lists[fault["name"]]
        look.prefix_lists[fault["name"]] = [e for e in entries if e[2] != fault["prefix"]]
    looks = {r: read_look(plan.frr_config(r)) for r in plan.routers} | {router: look}
    fix = router_problems(router, look, intent, looks)
    assert fix is not None, (label, lines)
    return fix, address


@pytest.mark.parametrize(
    "label",
    ["bgp-remote-as", "bgp-neighbor", "bgp-activate", "bgp-network", "bgp-nexthop",
     "bgp-maxprefix", "bgp-filter"],
)
def test_the_solver_mends_what_a_look_shows_against_the_intent(label: str) -> None:
    for seed in range(4):
        fix, address = _mended(label, seed)
        assert "ip route" not in fix and "no router bgp" not in fix
        if label in ("bgp-remote-as", "bgp-neighbor", "bgp-activate", "bgp-maxprefix"):
            assert f"clear bgp {address}" in fix  # a session it brings back is restarted


def test_the_solver_looks_first_where_the_evidence_points() -> None:
    q = _query(2, "bgp-network", num_routers=6)
    (fault,) = q.truth["faults"]
    machine, command = next_dynamic_action(q.prompt) or ("", "")
    assert machine == fault["router"] and "show running-config" in command
    q = _query(4, "bgp-activate", num_routers=6)
    (fault,) = q.truth["faults"]
    machine, _ = next_dynamic_action(q.prompt) or ("", "")
    assert machine in (fault["router"], fault["peer"])  # an end of the session down
