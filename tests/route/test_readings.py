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
