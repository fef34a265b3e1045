"""The judge's rtnetlink helpers against the kernel: route changes are notified, and
interfaces configured over netlink equal ``ifconfig``'s.

Needs root (network namespaces).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.kernel_routes import RouteEvents
from netarena.route.linux.namespaces import ip_batch
from netarena.route.linux.rtnetlink import VethEnd, add_address, add_veth, is_up, set_up

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def test_route_events_date_every_change_and_nothing_else() -> None:
    names = [f"naxev{uuid.uuid4().hex[:6]}" for _ in range(2)]
    for name in names:
        ip_batch([f"netns add {name}"])
    try:
        for name in names:
            links = ["link add d0 type veth peer name d1", "link set d0 up", "link set d1 up"]
            ip_batch(links, name)
        events = RouteEvents(names)
        try:
            first = events.last
            assert events.wait(0.2) == first  # nothing changed
            ip_batch(["route add 198.18.0.0/16 dev d0"], names[1])
            started = time.monotonic()
            changed = events.wait(5.0)
            assert started <= changed <= time.monotonic()
            assert events.wait(0.2) == changed  # read once
            ip_batch(["addr add 192.0.2.1/24 dev d0"], names[0])  # its local routes change
            assert events.wait(5.0) > changed
        finally:
            events.close()
    finally:
        for name in names:
            ip_batch([f"netns del {name}"])


def test_interfaces_configured_over_netlink_equal_ifconfigs() -> None:
    """Mininet's interfaces get their addresses and ``up`` over rtnetlink
    (``mininet_build.NetlinkIntf``): the kernel holds what ``ifconfig`` would have made."""
    name = f"naxif{uuid.uuid4().hex[:6]}"
    ip_batch([f"netns add {name}"])
    try:
        ip_batch(["link add va type veth peer name vb"], name)
        run = ["ip", "netns", "exec", name]
        subprocess.run([*run, "ifconfig", "va", "10.9.0.1/24", "up"], check=True)
        assert not is_up(name, "vb")
        add_address(name, "vb", "10.9.1.1", 24)
        set_up(name, "vb")
        assert is_up(name, "vb")
        shown = json.loads(subprocess.run([*run, "ip", "-j", "-4", "addr"], check=True,
                                          capture_output=True, text=True).stdout)
        by_name = {i["ifname"]: i for i in shown}
        made = [
            {k: v for k, v in by_name[n]["addr_info"][0].items() if k not in ("local", "label")}
            for n in ("va", "vb")
        ]
        assert made[0] == {**made[1], "broadcast": "10.9.0.255"}, made
        assert made[1]["broadcast"] == "10.9.1.255" and made[1]["prefixlen"] == 24
        assert ("UP" in by_name["va"]["flags"]) == ("UP" in by_name["vb"]["flags"])
    finally:
        ip_batch([f"netns del {name}"])


def test_ipsec_policies_are_read_and_counted() -> None:
    """An xfrm policy is an object of the node (collateral when added), counted to its budget."""
    from netarena.route.linux.xfrm_objects import count_xfrm, read_xfrm

    name = f"naxxf{uuid.uuid4().hex[:6]}"
    ip_batch([f"netns add {name}"])
    try:
        assert read_xfrm(name) == {} and count_xfrm(name, 10) == 0
        policy = "xfrm policy add dir in src 10.9.0.0/24 dst 10.9.1.1/32 action block priority 7"
        ip_batch([policy, "xfrm policy add dir out src 10.9.1.1/32 dst 10.9.0.0/24"], name)
        read = read_xfrm(name)
        assert read["xfrm policy in 10.9.0.0/24 -> 10.9.1.1/32 proto 0"].startswith(
            "block priority 7"
        ), read
        assert read["xfrm policy out 10.9.1.1/32 -> 10.9.0.0/24 proto 0"].startswith("allow")
        assert count_xfrm(name, 10) == 2 and count_xfrm(name, 1) == 1
        assert read_xfrm(name) == read  # nothing in it moves by itself
    finally:
        ip_batch([f"netns del {name}"])


def test_a_veth_pair_made_over_netlink_equals_ip_link_add() -> None:
    """``add_veth`` (a link's pair, each end straight in its node's namespace) makes what
    ``ip link add ... netns PID type veth peer ... netns PID`` makes."""
    names = [f"naxv{uuid.uuid4().hex[:6]}" for _ in range(2)]
    holders = []
    try:
        for name in names:
            ip_batch([f"netns add {name}"])
            holders.append(subprocess.Popen(["ip", "netns", "exec", name, "sleep", "60"]))
        time.sleep(0.2)
        a, b = (h.pid for h in holders)
        add_veth(VethEnd("n1-eth0", "02:00:00:00:00:01", a), VethEnd("n2-eth0", None, b))
        ip_batch([f"link add n1-eth1 netns {a} type veth peer n2-eth1 netns {b}"])

        def links(netns: str) -> dict[str, dict[str, object]]:
            out = subprocess.run(["ip", "-n", netns, "-j", "-d", "link"], check=True,
                                 capture_output=True, text=True).stdout
            keep = ("link_type", "mtu", "operstate", "linkinfo", "flags")
            return {i["ifname"]: {k: i.get(k) for k in keep} for i in json.loads(out)}

        first, second = links(names[0]), links(names[1])
        assert first["n1-eth0"] == first["n1-eth1"] and second["n2-eth0"] == second["n2-eth1"]
        assert first["n1-eth0"]["linkinfo"]["info_kind"] == "veth"  # type: ignore[index]
        shown = subprocess.run(["ip", "-n", names[0], "link", "show", "n1-eth0"], check=True,
                               capture_output=True, text=True).stdout
        assert "02:00:00:00:00:01" in shown
        with pytest.raises(EmulatorError):  # the name is taken
            add_veth(VethEnd("n1-eth0", None, a), VethEnd("n2-eth9", None, b))
    finally:
        for holder in holders:
            holder.kill()
        for name in names:
            ip_batch([f"netns del {name}"], check=False)


def test_a_namespace_never_given_rules_has_an_empty_ruleset() -> None:
    """The judge skips ``nft list ruleset`` where the nftables generation never moved."""
    from netarena.route.linux.nodestate import NEVER_CHANGED, ruleset_generation, ruleset_objects

    name = f"naxnft{uuid.uuid4().hex[:6]}"
    ip_batch([f"netns add {name}"])
    try:
        run = ["ip", "netns", "exec", name, "nft"]
        listing = subprocess.run([*run, "-j", "list", "ruleset"], check=True,
                                 capture_output=True, text=True).stdout
        assert ruleset_generation(name) == NEVER_CHANGED and ruleset_objects(listing) == {}
        subprocess.run([*run, "add", "table", "ip", "t"], check=True)
        subprocess.run([*run, "delete", "table", "ip", "t"], check=True)
        assert ruleset_generation(name) != NEVER_CHANGED
    finally:
        ip_batch([f"netns del {name}"])
