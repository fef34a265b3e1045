"""Counting a namespace's nftables objects and conntrack entries, without listing them.

The running guard looks at a node every fraction of a second while a command runs, so it
must not read what it counts: ``nft list ruleset`` of a node holding 300,000 set elements
takes more than ten seconds and megabytes. Dumps over nfnetlink are read only up to a
ceiling and then abandoned.

* ``count_nftables``: rules (every family, ``iptables-nft`` rules included), tables,
  chains, sets, stateful objects and flowtables, and the elements of every set and map
  (anonymous ones too: the ``{ ... }`` written inside a rule), each counted up to a
  ceiling.
* ``count_conntrack``: the namespace's connection-tracking entries (its own
  ``nf_conntrack_count``; the table they fill is shared with the host).
* ``conntrack_events``, ``new_entries``, ``forget``: the entries a namespace makes while
  watched, and deleting them by their original tuple (what ``conntrack -D`` does): the
  judge's (``unseen.py``). Events, not a listing before and after: listing one
  namespace's entries walks the host's whole table (262,144 buckets), 10-17 ms even
  when it holds none.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from netarena.route.linux.namespaces import enter

__all__ = ["count_nftables", "count_conntrack", "NFT_KINDS", "Tracked", "conntrack_events",
           "new_entries", "forget"]

_NETLINK_NETFILTER = 12
_NFNL_SUBSYS_NFTABLES = 10
_NFT_MSG_GETTABLE, _NFT_MSG_GETCHAIN, _NFT_MSG_GETRULE = 1, 4, 7
_NFT_MSG_GETSET, _NFT_MSG_GETSETELEM, _NFT_MSG_GETOBJ, _NFT_MSG_GETFLOWTABLE = 10, 13, 19, 23
_NFTA_SET_TABLE, _NFTA_SET_NAME = 1, 2
_NFTA_SET_ELEM_LIST_TABLE, _NFTA_SET_ELEM_LIST_SET, _NFTA_SET_ELEM_LIST_ELEMENTS = 1, 2, 3
_OBJECT_DUMPS = (_NFT_MSG_GETTABLE, _NFT_MSG_GETCHAIN, _NFT_MSG_GETOBJ, _NFT_MSG_GETFLOWTABLE)
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NLA_TYPE_MASK, _NLA_F_NESTED = 0x3FFF, 0x8000
_NFNL_SUBSYS_CTNETLINK, _IPCTNL_MSG_CT_NEW, _IPCTNL_MSG_CT_DELETE = 1, 0, 2
_NFNLGRP_CONNTRACK_NEW = 1
_CTA_TUPLE_ORIG, _CTA_ZONE, _CTA_TUPLE_PROTO = 1, 18, 2
_CTA_PROTO_NUM, _CTA_PROTO_SRC_PORT, _CTA_PROTO_ICMP_ID = 1, 2, 4
_SO_RCVBUFFORCE, _EVENT_BUFFER = 33, 4 << 20
_HEADER = struct.Struct("=IHHII")
_NFGENMSG = struct.Struct("=BBH")
_ATTR = struct.Struct("=HH")
_RECV_BYTES = 1 << 17
NFT_KINDS = ("filter rules", "filter objects", "set elements")
"""Kinds ``count_nftables`` reports: rules; tables, chains, sets, objects and flowtables;
elements of sets and maps."""


def _socket(netns: str) -> socket.socket:
    with enter(netns):
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER)


def _attribute(kind: int, value: bytes) -> bytes:
    size = _ATTR.size + len(value)
    return _ATTR.pack(size, kind) + value + b"\0" * (-size % 4)


def _attributes(data: bytes, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    while start + _ATTR.size <= end:
        size, kind = _ATTR.unpack_from(data, start)
        if size < _ATTR.size:
            return
        yield kind & _NLA_TYPE_MASK, data[start + _ATTR.size : start + size]
        start += (size + 3) & ~3


def _dump(
    sock: socket.socket, command: int, family: int = 0, attrs: bytes = b""
) -> Iterator[tuple[int, bytes]]:
    """``(family, attributes)`` of each message answering an nftables dump request."""
    body = _NFGENMSG.pack(family, 0, 0) + attrs
    kind = _NFNL_SUBSYS_NFTABLES << 8 | command
    flags = _NLM_F_REQUEST | _NLM_F_DUMP
    sock.send(_HEADER.pack(_HEADER.size + len(body), kind, flags, 1, 0) + body)
    while True:
        data = sock.recv(_RECV_BYTES)
        offset = 0
        if not data:
            return
        while offset + _HEADER.size <= len(data):
            length, mtype, _, _, _ = _HEADER.unpack_from(data, offset)
            if mtype in (_NLMSG_DONE, _NLMSG_ERROR) or length < _HEADER.size:
                return
            start = offset + _HEADER.size
            yield data[start], data[start + _NFGENMSG.size : offset + length]
            offset += (length + 3) & ~3


def _count(netns: str, command: int, ceiling: int) -> int:
    count = 0
    with _socket(netns) as sock:  # a fresh socket: an abandoned dump leaves no reply
        for _ in _dump(sock, command):
            count += 1
            if count >= ceiling:
                break
    return count


def _sets(netns: str, ceiling: int) -> list[tuple[int, bytes, bytes]]:
    """``(family, table, name)`` of every set and map, anonymous ones included."""
    found = []
    with _socket(netns) as sock:
        for family, attrs in _dump(sock, _NFT_MSG_GETSET):
            fields = dict(_attributes(attrs, 0, len(attrs)))
            if _NFTA_SET_TABLE in fields and _NFTA_SET_NAME in fields:
                found.append((family, fields[_NFTA_SET_TABLE], fields[_NFTA_SET_NAME]))
            if len(found) >= ceiling:
                break
    return found


def _elements(netns: str, sets: list[tuple[int, bytes, bytes]], ceiling: int) -> int:
    count = 0
    for family, table, name in sets:
        attrs = _attribute(_NFTA_SET_ELEM_LIST_TABLE, table)
        attrs += _attribute(_NFTA_SET_ELEM_LIST_SET, name)
        with _socket(netns) as sock:
            for _, message in _dump(sock, _NFT_MSG_GETSETELEM, family, attrs):
                for kind, value in _attributes(message, 0, len(message)):
                    if kind == _NFTA_SET_ELEM_LIST_ELEMENTS:
                        count += sum(1 for _ in _attributes(value, 0, len(value)))
                if count >= ceiling:
                    return count
    return count


def count_nftables(netns: str, ceilings: dict[str, int]) -> dict[str, int]:
    """How many nftables objects namespace ``netns`` holds, by kind (``NFT_KINDS``).

    Args:
        netns: The namespace's name.
        ceilings: Where counting stops, per kind (a kind missing is not counted).

    Returns:
        The counts of the kinds in ``ceilings``; a kernel without nftables holds none.
    """
    counts: dict[str, int] = {}
    if (most := ceilings.get("filter rules")) is not None:
        counts["filter rules"] = _count(netns, _NFT_MSG_GETRULE, most)
    sets = _sets(netns, max(ceilings.values(), default=0))
    if (most := ceilings.get("filter objects")) is not None:
        total = len(sets)
        for command in _OBJECT_DUMPS:
            if total < most:
                total += _count(netns, command, most - total)
        counts["filter objects"] = min(total, most)
    if (most := ceilings.get("set elements")) is not None:
        counts["set elements"] = _elements(netns, sets, most)
    return counts


def count_conntrack(netns: str) -> int:
    """Connection-tracking entries of namespace ``netns`` (0 where conntrack is not loaded)."""
    with enter(netns), contextlib.suppress(OSError, ValueError):
        with open("/proc/sys/net/netfilter/nf_conntrack_count") as count:
            return int(count.read())
    return 0


class Tracked(NamedTuple):
    """A connection-tracking entry, as much of it as deleting it takes."""

    family: int
    original: bytes
    """Its ``CTA_TUPLE_ORIG`` attribute's value: addresses, protocol, ports or ICMP id."""
    zone: bytes | None

    def source(self) -> tuple[int, int]:
        """``(IP protocol, source port or ICMP identifier)`` of its original direction."""
        for kind, value in _attributes(self.original, 0, len(self.original)):
            if kind == _CTA_TUPLE_PROTO:
                fields = dict(_attributes(value, 0, len(value)))
                port = fields.get(_CTA_PROTO_SRC_PORT) or fields.get(_CTA_PROTO_ICMP_ID)
                number = fields.get(_CTA_PROTO_NUM, b"\0")[0]
                return number, int.from_bytes(port or b"", "big")
        return 0, 0


def conntrack_events(netns: str) -> socket.socket | None:
    """A socket told of every conntrack entry ``netns`` makes from now on (None: no conntrack).

    The kernel sends the events only while someone listens (``nf_conntrack_events`` 2,
    the default).
    """
    try:
        sock = _socket(netns)
    except OSError:
        return None
    try:
        sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, _EVENT_BUFFER)
        sock.bind((0, 1 << (_NFNLGRP_CONNTRACK_NEW - 1)))
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def new_entries(sock: socket.socket) -> tuple[set[Tracked], bool]:
    """The entries made since the last call on ``conntrack_events``'s socket.

    Returns:
        The entries, and whether that is all of them (False: events were lost, the
        socket's buffer was full).
    """
    found: set[Tracked] = set()
    whole = True
    while True:
        try:
            data = sock.recv(_RECV_BYTES)
        except BlockingIOError:
            return found, whole
        except OSError:  # ENOBUFS: the kernel dropped events
            whole = False
            continue
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, mtype, _, _, _ = _HEADER.unpack_from(data, offset)
            if length < _HEADER.size:
                break
            if mtype == _NFNL_SUBSYS_CTNETLINK << 8 | _IPCTNL_MSG_CT_NEW:
                start = offset + _HEADER.size + _NFGENMSG.size
                fields = dict(_attributes(data, start, offset + length))
                if _CTA_TUPLE_ORIG in fields:
                    family = data[offset + _HEADER.size]
                    found.add(Tracked(family, fields[_CTA_TUPLE_ORIG], fields.get(_CTA_ZONE)))
            offset += (length + 3) & ~3


def forget(sock: socket.socket, entries: Iterable[Tracked]) -> None:
    """Delete ``entries`` from the conntrack table of ``sock``'s namespace.

    An entry gone meanwhile (expired, deleted) is no error: the kernel's answers are
    skipped by ``new_entries``.
    """
    kind = _NFNL_SUBSYS_CTNETLINK << 8 | _IPCTNL_MSG_CT_DELETE
    for entry in entries:
        body = _NFGENMSG.pack(entry.family, 0, 0)
        body += _attribute(_CTA_TUPLE_ORIG | _NLA_F_NESTED, entry.original)
        if entry.zone is not None:
            body += _attribute(_CTA_ZONE, entry.zone)
        with contextlib.suppress(OSError):
            sock.send(_HEADER.pack(_HEADER.size + len(body), kind, _NLM_F_REQUEST, 0, 0) + body)
