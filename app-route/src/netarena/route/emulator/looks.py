"""What the audit would class an object a record leaves as: its look.

The design holds addresses and refusing policy rules one of a kind (a service address, an
address held for another machine, a host's own under another length; a block's rule), so
a fault whose object takes a look the design already holds stands out as the second of a
kind (``faults._ANOTHER_LOOK``). The classes follow ``static.addressbook``'s.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from netarena.route.emulator.plan import ROUTER, NetworkPlan

__all__ = ["address_class", "line_look", "record_look"]


def address_class(plan: NetworkPlan, node: str, address: str) -> str:
    """What ``address`` held by ``node`` is to the plan, as the audit classes it.

    ``own`` (the machine's own), ``gateway`` (a router's), ``machine`` (another host's) or
    ``subnet`` (one no machine holds).
    """
    ip = address.split("/")[0]
    gateways = {s.gateway for s in plan.subnets}
    if ip in gateways:
        return "own" if node == ROUTER else "gateway"
    if any(h.ip == ip for h in plan.hosts):
        return "own" if node != ROUTER and plan.host(node).ip == ip else "machine"
    return "subnet"


def _to_class(plan: NetworkPlan, selector: list[str]) -> str:
    """What a refusing rule's ``to`` names: ``any``, ``one`` machine, a ``subnet`` or a part."""
    if "to" not in selector:
        return "any"
    net = ipaddress.IPv4Network(selector[selector.index("to") + 1], strict=False)
    if net.prefixlen == 32:
        return "one"
    return "subnet" if any(str(net) == s.network for s in plan.subnets) else "part"


def record_look(plan: NetworkPlan, record: dict[str, Any]) -> tuple[str, str] | None:
    """The kind and class of the one-of-a-kind object a record leaves, else ``None``.

    An address (``address_class``) or a refusing policy rule (``_to_class``): the design
    holds each of these one of a kind, and a fault's is drawn again when the design holds
    its look (``faults._ANOTHER_LOOK``).
    """
    method = record.get("method")
    if method == "wrong_prefix":
        return ("address", "own")
    if method in ("wrong_ip", "duplicate_ip") and "value" in record:
        return ("address", address_class(plan, record["node"], str(record["value"])))
    if method == "rule_prohibit":
        return ("rule", _to_class(plan, list(record["selector"])))
    return None


def line_look(plan: NetworkPlan, node: str, line: str) -> tuple[str, str] | None:
    """``record_look`` of an ``ip -batch`` line (the design's undisclosed items)."""
    words = line.split()
    if words[:2] == ["addr", "add"]:
        return ("address", address_class(plan, node, words[2]))
    if words[:2] == ["rule", "add"] and set(words) & {"prohibit", "unreachable", "blackhole"}:
        return ("rule", _to_class(plan, words))
    return None
