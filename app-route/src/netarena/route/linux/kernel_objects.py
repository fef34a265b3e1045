"""A node's kernel objects over rtnetlink, as ``nodestate.py`` compares them.

Links, addresses, routes, policy rules, neighbours, nexthops, queueing disciplines,
traffic-control classes and filters, and the forwarding sysctls.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from collections import Counter
from collections.abc import Iterator

from netarena.common.core.errors import EmulatorError

__all__ = ["HEADER", "NodeState", "attributes", "read_rtnetlink"]

NodeState = dict[str, str]
"""Object key → value (``"route main 10.0.1.0/24 metric 0"`` → ``"unicast dev r0-eth1"``)."""

HEADER = struct.Struct("=IHHII")


_ATTR = struct.Struct("=HH")


_DUMP = 0x1 | 0x300


_IFINFO = struct.Struct("=BxHiII")


_IFADDR = struct.Struct("=BBBBI")


_RTMSG = struct.Struct("=BBBBBBBBI")


_TCMSG = struct.Struct("=BxxxiIII")


_NDMSG = struct.Struct("=BxxxiHBB")


_NHMSG = struct.Struct("=BBBBI")


_NUD_PERMANENT = 0x80


_CLASSIFIERS = {
    "u32": (1, 7),
    "flower": (1, 3),
    "matchall": (1, 2),
    "basic": (1, 3),
    "fw": (1, 4),
    "route": (1, 6),
    "bpf": (3, 1),
    "cgroup": (0, 1),
}
"""Classifier kind → its ``*_CLASSID`` and ``*_ACT`` option numbers (0: none)."""


_LINK_LOCAL6 = ipaddress.IPv6Network("fe80::/10")
_FAMILIES = {socket.AF_INET: "", socket.AF_INET6: "6"}
"""Address family → the suffix its keys carry (``route``, ``route6``)."""


_ROUTE_TYPES = {1: "unicast", 6: "blackhole", 7: "unreachable", 8: "prohibit", 9: "throw"}


_RULE_ACTIONS = {1: "lookup", 2: "goto", 3: "nop", 6: "blackhole", 7: "unreachable", 8: "prohibit"}


_RTM_F_CLONED = 0x200
"""A cached exception (learned from a redirect or a PMTU message), not configuration."""


_TABLES = {253: "default", 254: "main", 255: "local"}


_DEVCONF = {
    1: "forwarding",
    3: "proxy_arp",
    4: "accept_redirects",
    6: "send_redirects",
    8: "rp_filter",
    11: "log_martians",
    18: "arp_announce",
    19: "arp_ignore",
    20: "promote_secondaries",
}
"""``IPV4_DEVCONF_*`` index → sysctl name, of the settings that change forwarding."""


_NETCONF = {2: "forwarding", 3: "rp_filter", 5: "proxy_arp"}


_NETCONF_SCOPES = {-1: "all", -2: "default"}


def attributes(data: bytes, at: int) -> dict[int, bytes]:
    """The netlink attributes from offset ``at`` of ``data``, by type."""
    found: dict[int, bytes] = {}
    while at + _ATTR.size <= len(data):
        size, kind = _ATTR.unpack_from(data, at)
        if size < _ATTR.size:
            break
        found[kind & 0x3FFF] = data[at + _ATTR.size : at + size]
        at += (size + 3) & ~3
    return found


def _dump(sock: socket.socket, kind: int, body: bytes) -> Iterator[tuple[bytes, int]]:
    """``(message, offset of its body)`` of each answer to a dump request."""
    sock.send(HEADER.pack(HEADER.size + len(body), kind, _DUMP, 1, 0) + body)
    while True:
        data = sock.recv(1 << 17)
        offset = 0
        while offset + HEADER.size <= len(data):
            length, mtype, _, _, _ = HEADER.unpack_from(data, offset)
            if mtype == 2:
                raise EmulatorError(f"netlink dump {kind} failed")
            if mtype == 3 or length < HEADER.size:
                return
            yield data[offset : offset + length], HEADER.size
            offset += (length + 3) & ~3


def _ip(raw: bytes | None) -> str:
    if raw and len(raw) == 16:
        return socket.inet_ntop(socket.AF_INET6, raw)
    return socket.inet_ntoa(raw) if raw and len(raw) == 4 else "0.0.0.0"


def _link_local(raw: bytes | None) -> bool:
    return bool(raw) and len(raw or b"") == 16 and ipaddress.IPv6Address(raw) in _LINK_LOCAL6


def _u32(raw: bytes | None, default: int = 0) -> int:
    return struct.unpack("=I", raw[:4])[0] if raw and len(raw) >= 4 else default


def _text(raw: bytes | None) -> str:
    return raw.split(b"\0", 1)[0].decode(errors="replace") if raw else ""


def _links(sock: socket.socket, state: NodeState) -> dict[int, str]:
    names = {}
    for data, at in _dump(sock, 18, _IFINFO.pack(0, 0, 0, 0, 0)):
        _, _, index, flags, _ = _IFINFO.unpack_from(data, at)
        attrs = attributes(data, at + _IFINFO.size)
        name = _text(attrs.get(3))
        names[index] = name
        kind = _text(attributes(attrs.get(18, b""), 0).get(1))
        mac = attrs.get(1, b"").hex(":")
        updown = "up" if flags & 1 else "down"
        state[f"link {name}"] = f"{updown} mtu {_u32(attrs.get(4))} {kind or 'device'} {mac}"
        inet = attributes(attributes(attrs.get(26, b""), 0).get(socket.AF_INET, b""), 0).get(1, b"")
        values = struct.unpack(f"={len(inet) // 4}I", inet[: len(inet) // 4 * 4])
        for index, setting in _DEVCONF.items():
            if index <= len(values):
                state[f"sysctl net.ipv4.conf.{name}.{setting}"] = str(values[index - 1])
    return names


def _addresses(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    for data, at in _dump(sock, 22, _IFADDR.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
        _, length, _, _, index = _IFADDR.unpack_from(data, at)
        attrs = attributes(data, at + _IFADDR.size)
        if _link_local(raw := attrs.get(2) or attrs.get(1)):
            continue
        local = _ip(raw)
        name = names.get(index, str(index))
        label = _text(attrs.get(3)) or name
        state[f"addr {name} {local}/{length}"] = f"label {label}" if label != name else ""


def _routes(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    found: dict[str, list[str]] = {}
    for data, at in _dump(sock, 26, _RTMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0, 0)):
        family, dst_len, _, tos, table, _, _, kind, flags = _RTMSG.unpack_from(data, at)
        attrs = attributes(data, at + _RTMSG.size)
        table = _u32(attrs.get(15), table)
        if table == 255 or flags & _RTM_F_CLONED or family not in _FAMILIES:
            continue  # local routes; cached exceptions
        if _link_local(attrs.get(1)):  # the kernel's, with each link-local address
            continue
        where = _TABLES.get(table, str(table))
        dst = f"{_ip(attrs.get(1))}/{dst_len}" if dst_len else "default"
        key = f"route{_FAMILIES[family]} {where} {dst} tos {tos} metric {_u32(attrs.get(6))}"
        value = _ROUTE_TYPES.get(kind, f"type{kind}")
        if 5 in attrs:
            value += f" via {_ip(attrs[5])}"
        if 4 in attrs:
            value += f" dev {names.get(_u32(attrs[4]), '?')}"
        if 9 in attrs:
            value += f" multipath {attrs[9].hex()}"
        if 30 in attrs:  # RTA_NH_ID: through a nexthop object
            value += f" nhid {_u32(attrs[30])}"
        found.setdefault(key, []).append(value)
    for key, values in found.items():  # appended routes share a key: keep them all
        state[key] = " | ".join(sorted(values))


def _rules(sock: socket.socket, state: NodeState) -> None:
    """Policy rules; a rule's place among the rules of its priority is part of its value."""
    places: Counter[str] = Counter()
    for data, at in _dump(sock, 34, _RTMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0, 0)):
        family, dst_len, src_len, tos, table, _, _, action, flags = _RTMSG.unpack_from(data, at)
        if family not in _FAMILIES:
            continue
        attrs = attributes(data, at + _RTMSG.size)
        src = f"{_ip(attrs.get(2))}/{src_len}" if src_len else "all"
        dst = f"{_ip(attrs.get(1))}/{dst_len}" if dst_len else "all"
        selector = f"from {src} to {dst} tos {tos} fwmark {_u32(attrs.get(10))}"
        selector += f" iif {_text(attrs.get(3)) or '-'} oif {_text(attrs.get(17)) or '-'}"
        selector += " not" if flags & 2 else ""
        verb = _RULE_ACTIONS.get(action, f"action{action}")
        target = _u32(attrs.get(15), table)
        value = f"{verb} {_TABLES.get(target, str(target))}" if verb == "lookup" else verb
        pref = f"rule{_FAMILIES[family]} {_u32(attrs.get(6))}"
        places[pref] += 1
        key = f"{pref} {selector}"
        while key in state:  # the same rule twice
            key += " +"
        state[key] = f"{value} @{places[pref]}"


def _neighbours(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    """Permanent neighbour entries (static ARP and NDP); learned ones come and go."""
    for data, at in _dump(sock, 30, _NDMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
        _, index, nud, _, _ = _NDMSG.unpack_from(data, at)
        if not nud & _NUD_PERMANENT:
            continue
        attrs = attributes(data, at + _NDMSG.size)
        name = names.get(index, str(index))
        state[f"neigh {name} {_ip(attrs.get(1))}"] = f"lladdr {attrs.get(2, b'').hex(':')}"


RTPROT_ZEBRA = 11
"""The protocol of the routes and nexthop objects FRR's zebra installs."""


def _nexthops(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    for data, at in _dump(sock, 106, _NHMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
        attrs = attributes(data, at + _NHMSG.size)
        if 2 in attrs:  # a group: member ids and weights
            members = struct.iter_unpack("=IBxH", attrs[2][: len(attrs[2]) // 8 * 8])
            value = "group " + "/".join(f"{m[0]}w{m[1]}" for m in members)
        elif 4 in attrs:
            value = "blackhole"
        else:
            value = f"via {_ip(attrs.get(6))} dev {names.get(_u32(attrs.get(5)), '-')}"
        protocol = data[at + 2]  # nhmsg.nh_protocol
        if protocol == RTPROT_ZEBRA:
            value += " proto zebra"  # FRR's: its routing output, judged apart (frr/network.py)
        state[f"nexthop {_u32(attrs.get(1))}"] = value


def _qdiscs(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    """Queueing disciplines, and the classes and filters of devices that have any."""
    queues: list[tuple[int, int]] = []
    for data, at in _dump(sock, 38, _TCMSG.pack(0, 0, 0, 0, 0)):
        _, index, handle, parent, _ = _TCMSG.unpack_from(data, at)
        attrs = attributes(data, at + _TCMSG.size)
        kind = _text(attrs.get(1))
        if kind == "noqueue":
            continue
        where = "root" if parent == 0xFFFFFFFF else f"{parent:x}"
        options = attrs.get(2, b"").hex()
        state[f"qdisc {names.get(index, str(index))} {where}"] = f"{kind} {options}"
        queues.append((index, handle))
    parents = list(queues)
    for index in dict.fromkeys(i for i, _ in queues):
        for data, at in _dump(sock, 42, _TCMSG.pack(0, index, 0, 0, 0)):
            _, _, handle, parent, _ = _TCMSG.unpack_from(data, at)
            attrs = attributes(data, at + _TCMSG.size)
            name = names.get(index, str(index))
            value = f"{_text(attrs.get(1))} parent {parent:x} {attrs.get(2, b'').hex()}"
            state[f"tclass {name} {handle:x}"] = value
            parents.append((index, handle))
    for index, parent in parents:
        _filters(sock, state, names.get(index, str(index)), index, parent)


def _filters(sock: socket.socket, state: NodeState, name: str, index: int, parent: int) -> None:
    for data, at in _dump(sock, 46, _TCMSG.pack(0, index, 0, parent, 0)):
        _, _, handle, _, info = _TCMSG.unpack_from(data, at)
        attrs = attributes(data, at + _TCMSG.size)
        kind = _text(attrs.get(1))
        prio, proto = info >> 16, socket.ntohs(info & 0xFFFF)
        options = attributes(attrs.get(2, b""), 0)
        classid, act = _CLASSIFIERS.get(kind, (0, 0))
        actions = [_text(attributes(a, 0).get(1))
                   for a in attributes(options.get(act, b""), 0).values()]
        value = f"{kind} class {_u32(options.get(classid)):x} actions {','.join(actions) or '-'}"
        state[f"tfilter {name} {parent:x} prio {prio} proto {proto:x} handle {handle:x}"] = value


def _netconf(sock: socket.socket, state: NodeState) -> None:
    """The ``all`` and ``default`` settings netconf reports (and ``ip_forward``)."""
    for family, tree in ((socket.AF_INET, "ipv4"), (socket.AF_INET6, "ipv6")):
        for data, at in _dump(sock, 82, struct.pack("=Bxxx", family)):
            attrs = attributes(data, at + 4)
            scope = _NETCONF_SCOPES.get(struct.unpack("=i", attrs.get(1, b"\0\0\0\0")[:4])[0])
            if scope is None:
                continue
            for kind, setting in _NETCONF.items():
                if tree == "ipv6" and setting == "proxy_arp":
                    setting = "proxy_ndp"
                if kind in attrs:
                    state[f"sysctl net.{tree}.conf.{scope}.{setting}"] = str(_u32(attrs[kind]))
    if "sysctl net.ipv4.conf.all.forwarding" in state:
        state["sysctl net.ipv4.ip_forward"] = state["sysctl net.ipv4.conf.all.forwarding"]


def read_rtnetlink(sock: socket.socket, state: NodeState) -> None:
    """Add every object rtnetlink shows (links to sysctls) to ``state``, over ``sock``."""
    names = _links(sock, state)
    _addresses(sock, state, names)
    _routes(sock, state, names)
    _rules(sock, state)
    _neighbours(sock, state, names)
    _nexthops(sock, state, names)
    _qdiscs(sock, state, names)
    _netconf(sock, state)
