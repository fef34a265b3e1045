"""The collateral diff reads IPv6, static neighbours, nexthops, tc classes, filters, rule order."""

from __future__ import annotations

import pytest

from netarena.route import RouteApp
from netarena.route.emulator.network import Network
from netarena.route.emulator.topology import topology_of
from netarena.route.judge.collateral import Footprint, collateral

from .conftest import NEEDS_ROOT, first_query, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


@pytest.fixture(scope="module")
def net():
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 1})
    plan, intent, topo = topology_of(app.generate(3, 1))
    with Network(plan, intent, topo()) as live:
        yield live


def _run(net: Network, command: str) -> None:
    result = net.exec("r0", ["bash", "-c", command])
    assert result.returncode == 0, result.output


CHANGES = {
    "ipv6 address": ("ip -6 addr add 2001:db8::1/64 dev {intf}", "added addr {intf} 2001:db8::1"),
    "ipv6 route": ("ip -6 route add 2001:db8:5::/48 dev {intf}", "added route6 main 2001:db8:5::"),
    "ipv6 rule": ("ip -6 rule add from 2001:db8::/32 prohibit pref 500", "added rule6 500"),
    "ipv6 forwarding": ("sysctl -qw net.ipv6.conf.all.forwarding=1", "ipv6.conf.all.forwarding"),
    "ip6tables": ("ip6tables -A FORWARD -j DROP", "added nft ip6 filter FORWARD"),
    "static neighbour": (
        "ip neigh add 10.99.0.5 lladdr 02:00:00:00:00:09 dev {intf} nud permanent",
        "added neigh {intf} 10.99.0.5",
    ),
    "nexthop": ("ip nexthop add id 7 blackhole", "added nexthop 7 blackhole"),
    "ipsec policy": (  # drops the flow with no filter rule or route to show for it
        "ip xfrm policy add dir out src 10.99.0.1/32 dst 10.99.0.2/32 proto udp action block",
        "added xfrm policy out 10.99.0.1/32 -> 10.99.0.2/32 proto 17",
    ),
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_each_object_kind_is_collateral_when_changed(net: Network, what: str) -> None:
    intf = net.plan.subnets[0].router_intf
    command, seen = (text.format(intf=intf) for text in CHANGES[what])
    before = net.read_states()
    _run(net, command)
    found = collateral(before, net.read_states(), Footprint())
    assert any(seen in line for line in found), found


def test_tc_classes_and_filters_are_compared(net: Network) -> None:
    intf = net.plan.subnets[1].router_intf
    _run(net, f"tc qdisc add dev {intf} root handle 1: htb default 10")
    shaped = net.read_states()
    _run(net, f"tc class add dev {intf} parent 1: classid 1:10 htb rate 10mbit")
    found = collateral(shaped, net.read_states(), Footprint())
    assert any(f"added tclass {intf} 10010 htb" in line for line in found), found
    classed = net.read_states()
    match = "u32 match ip dst 10.0.0.0/8 flowid 1:10"
    _run(net, f"tc filter add dev {intf} parent 1: protocol ip prio 1 {match}")
    found = collateral(classed, net.read_states(), Footprint())
    assert any(f"added tfilter {intf} 10000 prio 1" in line for line in found), found
    inside = Footprint(containers={"r0": frozenset({f"qdisc {intf}"})})
    assert collateral(shaped, net.read_states(), inside) == []  # a fault's queue: free


def test_the_order_of_rules_of_one_priority_is_compared(net: Network) -> None:
    _run(net, "ip rule add from 10.9.0.0/16 lookup 5 pref 40000")
    _run(net, "ip rule add from 10.8.0.0/16 lookup 6 pref 40000")
    ordered = net.read_states()
    _run(net, "ip rule del from 10.9.0.0/16 pref 40000")
    _run(net, "ip rule add from 10.9.0.0/16 lookup 5 pref 40000")
    found = collateral(ordered, net.read_states(), Footprint())
    assert len(found) == 2 and all("changed rule 40000" in line for line in found), found
    inside = Footprint(containers={"r0": frozenset({"rule"})})
    assert collateral(ordered, net.read_states(), inside) == []


def test_link_local_addresses_are_not_state(net: Network) -> None:
    """The kernel makes them from the MAC: flushing and re-adding an address is no damage."""
    intf = net.plan.subnets[1].router_intf
    before = net.read_states()
    gateway = net.plan.subnets[1]
    _run(
        net,
        f"ip addr flush dev {intf} && ip addr add {gateway.gateway}/{gateway.prefixlen} "
        f"brd + dev {intf} && ip route replace {gateway.network} dev {intf}",
    )
    assert collateral(before, net.read_states(), Footprint()) == []


def test_an_address_rewritten_inside_the_footprint_passes() -> None:
    """A wrong router address repaired in another order than the reference's: add, then delete."""
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    query = first_query(app, "RI", lambda f: (f["method"], f["node"]) == ("wrong_ip", "r0"))
    with app.open(query) as episode:
        fault = episode.faults[0]
        assert (fault["method"], fault["node"]) == ("wrong_ip", "r0")
        subnet = episode.plan.subnet(fault["subnet"])
        intf, length = fault["intf"], subnet.prefixlen
        episode.step(
            reply(
                "r0",
                f"ip addr add {subnet.gateway}/{length} brd + dev {intf} && "
                f"ip addr del {fault['value']}/{length} dev {intf}",
            )
        )
        score = episode.score()
        assert score.correct and score.safe and score.collateral == [], (fault, score)
