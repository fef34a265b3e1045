"""A namespace's IPsec (xfrm) policies and states, as comparable objects.

An xfrm policy drops (``action block``) or diverts a flow, and a state carries it in a
tunnel, with no link, route or packet filter to show for it. The judge reads them as it
reads the rest of a node (``nodestate.py``), so one an agent adds is collateral like an
added filter rule, and counts them against the object budget (``limits.py``). Keys name
a policy by direction and selector, a state by its addresses, SPI and protocol; values
hold what may change about them, without counters or timestamps.
"""

from __future__ import annotations

import socket
import struct

from netarena.route.linux.kernel_objects import NodeState, _dump, _ip, attributes
from netarena.route.linux.namespaces import enter

__all__ = ["read_xfrm", "count_xfrm"]

_NETLINK_XFRM = 6
_GETSA, _GETPOLICY = 0x12, 0x15
_SELECTOR = struct.Struct("=16s16sHHHHHBBBxxxiI")
"""``struct xfrm_selector``: addresses, ports and masks, family, prefix lengths, protocol,
interface, user (56 bytes)."""
_POLICY_TAIL = struct.Struct("=IIBBBB")
"""After the selector and the lifetimes: priority, index, direction, action, flags, share."""
_POLICY_SIZE, _SA_SIZE = 168, 224
"""``sizeof`` of ``xfrm_userpolicy_info`` and ``xfrm_usersa_info``: their attributes follow."""
_VOLATILE = frozenset({10, 15, 23})
"""State attributes that move with traffic: replay counters (plain, ESN) and last use."""
_DIRECTIONS = {0: "in", 1: "out", 2: "fwd"}
_NO_LIMITS = b"\xff" * 32 + b"\x00" * 32
"""``struct xfrm_lifetime_cfg`` as ``ip xfrm`` leaves it: no byte, packet or time limit."""


def _details(lifetime: bytes, extra: bytes) -> str:
    """Limits other than none, and the attributes (templates, marks...), as hex."""
    shown = f" limits {lifetime.hex()}" if lifetime != _NO_LIMITS else ""
    return shown + (f" attributes {extra.hex()}" if extra else "")


def _selector(raw: bytes) -> str:
    daddr, saddr, dport, dmask, sport, smask, family, dlen, slen, proto, ifindex, _ = (
        _SELECTOR.unpack(raw)
    )
    size = 4 if family == socket.AF_INET else 16
    text = f"{_ip(saddr[:size])}/{slen} -> {_ip(daddr[:size])}/{dlen} proto {proto}"
    if smask or dmask:
        text += f" sport {socket.ntohs(sport)} dport {socket.ntohs(dport)}"
    return text + (f" dev {ifindex}" if ifindex else "")


def _socket(netns: str) -> socket.socket | None:
    """An xfrm netlink socket in ``netns``; None when the kernel has no xfrm (none can exist)."""
    with enter(netns):
        try:
            return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_XFRM)
        except OSError:
            return None


def read_xfrm(netns: str) -> NodeState:
    """Every xfrm policy and state of namespace ``netns``."""
    sock = _socket(netns)
    if sock is None:
        return {}
    state: NodeState = {}
    with sock:
        for data, at in _dump(sock, _GETPOLICY, b""):
            priority, _, direction, action, flags, _ = _POLICY_TAIL.unpack_from(data, at + 152)
            where = _selector(data[at : at + 56])
            key = f"xfrm policy {_DIRECTIONS.get(direction, direction)} {where}"
            details = _details(data[at + 56 : at + 120], data[at + _POLICY_SIZE :])
            verdict = "block" if action else "allow"
            state[key] = f"{verdict} priority {priority} flags {flags}{details}"
        for data, at in _dump(sock, _GETSA, b""):
            daddr, spi, proto = data[at + 56 : at + 72], data[at + 72 : at + 76], data[at + 76]
            saddr = data[at + 80 : at + 96]
            reqid, family, mode = struct.unpack_from("=IHB", data, at + 208)
            size = 4 if family == socket.AF_INET else 16
            key = (
                f"xfrm state {_ip(saddr[:size])} -> {_ip(daddr[:size])} "
                f"spi 0x{spi.hex()} proto {proto}"
            )
            kept = b"".join(
                struct.pack("=H", kind) + raw
                for kind, raw in sorted(attributes(data, at + _SA_SIZE).items())
                if kind not in _VOLATILE
            )
            details = _details(data[at + 96 : at + 160], kept)
            state[key] = f"mode {mode} reqid {reqid} for {_selector(data[at : at + 56])}{details}"
    return state


def count_xfrm(netns: str, ceiling: int) -> int:
    """How many IPsec policies and states ``netns`` holds, counted up to ``ceiling``."""
    sock = _socket(netns)
    if sock is None:
        return 0
    count = 0
    with sock:
        for kind in (_GETPOLICY, _GETSA):
            for _ in _dump(sock, kind, b""):
                count += 1
                if count >= ceiling:
                    return count
    return count
