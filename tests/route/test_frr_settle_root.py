"""How long the dynamic-routing judge waits, judged by state: looks are measured at once,
changes wait out the dead interval, the final score's wait for a silent break still runs
from the last change, and a repair a daemon applies late is waited for.

Needs root, Mininet and FRR.
"""

from __future__ import annotations

import time

from netarena.route.frr.adjacencies import faulted, read_adjacencies
from netarena.route.frr.daemon_work import bgp_heard_since, ospf_heard_since
from netarena.route.frr.settle import HEARD_AFTER_S

from .conftest import LIVE_FRR, play_reference, reply, small_frr_app

pytestmark = LIVE_FRR


def test_a_look_changes_nothing_and_a_bounce_or_a_clear_does() -> None:
    """Judged by state, not by the command: a look is measured without the dead-interval
    wait; a link taken down and up again, or an OSPF process cleared, leaves the same
    configuration but restarts adjacencies, so it waits (whether it is unsafe depends on
    what it leaves once read: other links of a real design may carry the traffic)."""
    app = small_frr_app()
    query = app.generate(41, 1, "ospf-cost")
    with app.open(query) as episode:
        link = next(x for x in episode.plan.links if x.role == "active")  # an adjacency
        episode.step(reply(link.a, "vtysh -c 'show ip ospf neighbor'; ip -o link show"))
        assert not episode.changed and not episode.ledger.problems
        bounce = f"ip link set {link.a_intf} down; ip link set {link.a_intf} up"
        episode.step(reply(link.a, bounce))
        assert episode.changed
    with app.open(query) as episode:
        episode.step(reply(episode.plan.routers[-1], "vtysh -c 'clear ip ospf process'"))
        assert episode.changed


def test_a_silent_break_is_caught_after_a_look() -> None:
    """A dead interval the neighbour does not share drops the adjacency only when the
    neighbour's own dead interval runs out; a look right after it, measured at once, does
    not hide the drop from the final score."""
    app = small_frr_app()
    query = app.generate(42, 1, "ospf-cost")
    with app.open(query) as episode:
        play_reference(episode, 10)
        link = next(x for x in episode.plan.links if x.role == "active")  # an adjacency
        # a dead interval no design uses (fast hellos: 1 s; or hello 1 dead 3)
        silent = f"vtysh -c 'conf t' -c 'interface {link.a_intf}' -c 'ip ospf dead-interval 7'"
        episode.step(reply(link.a, silent))
        assert episode.changed
        episode.step(reply(link.b, "vtysh -c 'show running-config'"))
        score = episode.score()
    assert not score.correct and not score.safe, score.details


def test_a_silent_break_as_the_last_command_is_caught() -> None:
    """The final score right after the break: its steady period ends early only once every
    neighbour was heard since the command, which the silenced one never is."""
    app = small_frr_app()
    with app.open(app.generate(43, 1, "ospf-cost")) as episode:
        play_reference(episode, 10)
        plan, touched = episode.plan, faulted(episode.plan, episode.faults)  # repairs reset
        link = next(
            x
            for x in plan.links
            if x.role == "active" and (x.a, plan.loopbacks[x.b]) not in touched
        )  # a dead interval no design uses (fast hellos: 1 s; or hello 1 dead 3)
        silent = f"vtysh -c 'conf t' -c 'interface {link.a_intf}' -c 'ip ospf dead-interval 7'"
        episode.step(reply(link.a, silent))
        score = episode.score()
    assert not score.correct and not score.safe, score.details


def test_neighbours_are_heard_until_one_falls_silent() -> None:
    """``ospf_heard_since``: true a little after any moment in a steady network; after one
    router stops hearing its neighbours, false until that router has dropped them."""
    app = small_frr_app()
    with app.open(app.generate(44, 1, "ospf-cost")) as episode:
        net = episode.net
        moment, deadline = time.monotonic(), time.monotonic() + 5.0
        while not ospf_heard_since(net, moment):  # a hello every 0.25 s, later on a busy machine
            assert time.monotonic() < deadline, "no hello heard for 5 s in a steady network"
            time.sleep(0.1)
        link = episode.plan.links[0]
        net.shell(link.a, "iptables -I INPUT -p ospf -j DROP")
        moment = time.monotonic()  # as the judge dates a command: once it has ended
        time.sleep(HEARD_AFTER_S)
        assert not ospf_heard_since(net, moment)  # up, unheard: the drop is still ahead
        silenced = (link.a, episode.plan.loopbacks[link.b])
        while time.monotonic() < moment + 2.5:
            if ospf_heard_since(net, moment):  # only once the silenced adjacency went down
                assert silenced not in read_adjacencies(net, episode.plan).up
            time.sleep(0.1)


def test_a_route_map_edited_as_the_last_command_is_waited_for() -> None:
    """bgpd applies an edited route-map only at its route-map timer (1 s by design, FRR's
    default 5 s): a repair whose last command takes back a deny added to the provider's
    route-map is scored correct once applied. Without the take-back the same episode is not
    correct, so the deny moved routes and the wait is what the score rests on."""
    app = small_frr_app()
    query = app.generate(61, 1, "bgp-network")
    (fault,) = query.truth["faults"]
    router, deny = fault["router"], "route-map FROM-TRANSIT deny 1"
    for take_back in (False, True):
        with app.open(query) as episode:
            plan = episode.plan
            border = next(r for r in plan.routers if "FROM-TRANSIT" in plan.policy(r).route_maps)
            family = f"-c 'router bgp {plan.asn[router]}' -c 'address-family ipv4 unicast'"
            repair = f"vtysh -c 'conf t' {family} -c 'network {fault['prefix']}'"
            episode.step(reply(router, repair))
            episode.step(reply(border, f"vtysh -c 'conf t' -c '{deny}'"))
            if take_back:
                episode.step(reply(border, f"vtysh -c 'conf t' -c 'no {deny}'"))
            score = episode.score()
        assert score.correct == take_back, score.details  # (the deny's own step is unsafe)


def test_bgp_peers_are_heard_until_one_falls_silent() -> None:
    """``bgp_heard_since``: true a little after any moment in a steady network; after one
    router stops reading its peers' messages, false until its sessions have dropped; and a
    final score right after the silent break sees it."""
    app = small_frr_app()
    with app.open(app.generate(45, 1, "bgp-network")) as episode:
        net = episode.net
        moment, deadline = time.monotonic(), time.monotonic() + 5.0
        while not bgp_heard_since(net, moment):  # a keepalive every second
            assert time.monotonic() < deadline, "no keepalive heard for 5 s in a steady network"
            time.sleep(0.1)
        router = episode.plan.sessions[0].a
        net.shell(router, "iptables -I INPUT -p tcp --dport 179 -j DROP")
        net.shell(router, "iptables -I INPUT -p tcp --sport 179 -j DROP")
        moment = time.monotonic()
        time.sleep(1.2)
        assert not bgp_heard_since(net, moment)  # up, unheard: the drop is still ahead
    with app.open(app.generate(46, 1, "bgp-network")) as episode:
        play_reference(episode, 10)
        router = episode.plan.sessions[0].a
        silence = "iptables -I INPUT -p tcp --dport 179 -j DROP"
        episode.step(reply(router, f"{silence}; {silence.replace('dport', 'sport')}"))
        score = episode.score()
    assert not score.correct and not score.safe, score.details
