"""What the audit's and the shape rung's reader takes for a statement (``static/readings.py``)."""

from __future__ import annotations

import pytest

from netarena.route import RouteApp
from netarena.route.static.addressbook import AddressBook
from netarena.route.static.inventory import read_inventory
from netarena.route.static.readings import read_objects


@pytest.mark.parametrize(("forwarding", "read"), [("1", False), ("0", True)])
def test_all_accept_redirects_off_is_the_kernels_on_a_forwarding_host(
    forwarding: str, read: bool
) -> None:
    """Turning ``ip_forward`` on turns ``all.accept_redirects`` off (the kernel's doing): no
    statement of the host's then, while the same value on a host that does not forward is."""
    query = RouteApp().generate(7, 1, "DR")
    book = AddressBook(read_inventory(query.prompt))
    output = (f"#sysctl\nip_forward={forwarding}\n"
              "accept_redirects all=0 default=1 lo=1\n")
    kinds = [r.kind for r in read_objects("h1", output, book)]
    assert ("sysctl_accept_redirects" in kinds) is read, kinds
    assert ("sysctl_forwarding" in kinds) is (forwarding == "1"), kinds


def test_a_shapers_burst_is_read_in_bytes() -> None:
    """A shaper's burst is a field (a tiny one passes no frame): bytes, whatever ``tc``'s unit."""
    query = RouteApp().generate(7, 1, "DT")
    book = AddressBook(read_inventory(query.prompt))
    output = ("#qdisc\n"
              "qdisc tbf 8001: dev h1-eth0 root refcnt 2 rate 100Mbit burst 37b lat 50ms\n"
              "qdisc tbf 8002: dev r0-eth1 root refcnt 2 rate 1Gbit burst 256Kb lat 50ms\n"
              "qdisc pfifo 8003: dev r0-eth2 root refcnt 2 limit 0p\n")
    readings = read_objects("r0", output, book)
    found = {r.identity: r.fields for r in readings}
    assert found["qdisc h1-eth0 root"]["burst"] == 37
    assert found["qdisc r0-eth1 root"]["burst"] == 256 * 1024
    assert found["qdisc r0-eth2 root"]["burst"] is None and found["qdisc r0-eth2 root"]["empty"]
    # the tiny shaper and the empty FIFO pass nothing; the 256 KB shaper passes traffic
    assert {r.identity: r.kind for r in readings} == {
        "qdisc h1-eth0 root": "qdisc_block", "qdisc r0-eth1 root": "qdisc_pass",
        "qdisc r0-eth2 root": "qdisc_block"}
