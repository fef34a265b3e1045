"""Reading and pruning a namespace's kernel network objects over rtnetlink, without ``ip``.

The judge empties every node's neighbour (ARP) cache before each measurement and, after
each command, counts the objects the node holds; starting an ``ip`` process per namespace
and object kind would cost tens of milliseconds on a loaded machine, a netlink dump about
a millisecond.

* ``flush_learned``: the equivalent of ``ip neigh flush all`` (static ``permanent`` and
  ``noarp`` entries stay).
* ``learned_neighbours``, ``restore_learned``: the learned entries before the judge's
  measurement, put back after it (``unseen.py``).
* ``count_objects``: links, addresses, routes (every table, both families), policy rules,
  neighbour entries and nexthops, each counted up to a ceiling.
* ``count_tc``: traffic-control objects (qdiscs, classes, filters) of every interface.
* ``set_up``, ``add_address``, ``is_up``: what Mininet does with ``ifconfig`` in a node's
  shell (a process per call) when it configures an interface.
* ``add_veth``: a link's veth pair, each end made straight in its node's namespace (an
  ``ip link add`` process per link before).
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
import struct
from collections.abc import Iterator
from typing import NamedTuple

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.namespaces import enter

__all__ = [
    "flush_learned",
    "learned_neighbours",
    "restore_learned",
    "Learned",
    "count_objects",
    "count_tc",
    "OBJECT_DUMPS",
    "set_up",
    "add_address",
    "is_up",
    "add_veth",
    "VethEnd",
]

_NETLINK_ROUTE = 0
_RTM_DELNEIGH, _RTM_GETNEIGH = 29, 30
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NDA_DST = 1
_NUD_NOARP, _NUD_PERMANENT = 0x40, 0x80
_RTM_NEWNEIGH, _NDA_LLADDR = 28, 2
_SETTLED = {0x01: 0x20, 0x08: 0x04, 0x10: 0x04}
"""INCOMPLETE → FAILED, DELAY → STALE, PROBE → STALE (see ``learned_neighbours``)."""
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
_NDMSG = struct.Struct("=BBHiHBB")  # family, pad, pad, ifindex, state, flags, type
_RTATTR = struct.Struct("=HH")
_TCMSG = struct.Struct("=BBHiIII")  # family, pads, ifindex, handle, parent, info
_RTM_GETQDISC, _RTM_GETTCLASS, _RTM_GETTFILTER = 38, 42, 46
_RTM_NEWLINK, _RTM_GETLINK, _RTM_NEWADDR = 16, 18, 20
_NLM_F_ACK, _NLM_F_REPLACE, _NLM_F_CREATE = 0x4, 0x100, 0x400
_IFINFOMSG = struct.Struct("=BBHiII")  # family, pad, type, index, flags, change
_IFADDRMSG = struct.Struct("=BBBBI")  # family, prefix length, flags, scope, index
_IFF_UP = 0x1
_NLM_F_EXCL = 0x200
_IFLA_ADDRESS, _IFLA_IFNAME, _IFLA_LINKINFO, _IFLA_NET_NS_PID = 1, 3, 18, 19
_IFLA_INFO_KIND, _IFLA_INFO_DATA, _VETH_INFO_PEER = 1, 2, 1
_IFA_ADDRESS, _IFA_LOCAL, _IFA_BROADCAST = 1, 2, 4
_TC_INGRESS_PARENTS = (0xFFFFFFF2, 0xFFFFFFF3)  # ingress/clsact's ingress and egress blocks
OBJECT_DUMPS = {
    "links": (18, struct.pack("=BBHiII", 0, 0, 0, 0, 0, 0)),  # RTM_GETLINK, ifinfomsg
    "addresses": (22, struct.pack("=BBBBI", 0, 0, 0, 0, 0)),  # RTM_GETADDR, ifaddrmsg
    "routes": (26, struct.pack("=BBBBBBBBI", 0, 0, 0, 0, 0, 0, 0, 0, 0)),  # RTM_GETROUTE
    "rules": (34, struct.pack("=BBBBBBBBI", 0, 0, 0, 0, 0, 0, 0, 0, 0)),  # RTM_GETRULE
    "neighbours": (_RTM_GETNEIGH, _NDMSG.pack(0, 0, 0, 0, 0, 0, 0)),
    "nexthops": (106, struct.pack("=BBBBI", 0, 0, 0, 0, 0)),  # RTM_GETNEXTHOP, nhmsg
}
"""Object kind → (dump request type, request body); family 0 dumps both families."""


def _message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    return _HEADER.pack(_HEADER.size + len(body), kind, flags, seq, 0) + body


def _dump(sock: socket.socket, kind: int, body: bytes) -> Iterator[tuple[int, bytes, int]]:
    """``(message type, buffer, offset of its body)`` of each answer to a dump request."""
    sock.send(_message(kind, _NLM_F_REQUEST | _NLM_F_DUMP, 1, body))
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, mtype, _, _, _ = _HEADER.unpack_from(data, offset)
            if mtype in (_NLMSG_DONE, _NLMSG_ERROR) or length < _HEADER.size:
                return
            yield mtype, data[offset : offset + length], _HEADER.size
            offset += (length + 3) & ~3


def _socket(netns: str | None) -> socket.socket:
    """A route netlink socket in ``netns`` (None: this thread's namespace)."""
    with enter(netns) if netns is not None else contextlib.nullcontext():
        return socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_ROUTE)


Neighbour = tuple[int, bytes]
"""An IPv4 neighbour entry's key: ``(ifindex, address)``."""
Learned = dict[Neighbour, tuple[int, bytes | None]]
"""Learned entries: key → ``(NUD state, link-layer address or None)``."""


def _learned(sock: socket.socket) -> Learned:
    """Every IPv4 entry that is neither permanent nor noarp."""
    found: Learned = {}
    request = _NDMSG.pack(socket.AF_INET, 0, 0, 0, 0, 0, 0)
    for _, data, body in _dump(sock, _RTM_GETNEIGH, request):
        _, _, _, ifindex, state, _, _ = _NDMSG.unpack_from(data, body)
        if state & (_NUD_NOARP | _NUD_PERMANENT):
            continue
        attrs = {}
        at = body + _NDMSG.size
        while at + _RTATTR.size <= len(data):
            size, attr = _RTATTR.unpack_from(data, at)
            if size < _RTATTR.size:
                break
            attrs[attr] = data[at + _RTATTR.size : at + size]
            at += (size + 3) & ~3
        if _NDA_DST in attrs:
            found[ifindex, attrs[_NDA_DST]] = (state, attrs.get(_NDA_LLADDR))
    return found


def _neigh(sock: socket.socket, kind: int, flags: int, key: Neighbour, state: int = 0,
           lladdr: bytes | None = None) -> None:
    """Send one neighbour request (errors, an entry gone meanwhile, are not read)."""
    ifindex, address = key
    body = _NDMSG.pack(socket.AF_INET, 0, 0, ifindex, state, 0, 0) + _attr(_NDA_DST, address)
    if lladdr is not None:
        body += _attr(_NDA_LLADDR, lladdr)
    sock.send(_message(kind, _NLM_F_REQUEST | flags, 0, body))


def flush_learned(netns: str) -> None:
    """Delete every learned IPv4 neighbour entry of namespace ``netns``."""
    with _socket(netns) as sock:
        for key in _learned(sock):
            _neigh(sock, _RTM_DELNEIGH, 0, key)


def learned_neighbours(netns: str) -> Learned:
    """The learned IPv4 neighbour entries of ``netns``, to put back with ``restore_learned``.

    A transient state is kept as what it turns into: ``DELAY`` and ``PROBE`` as ``STALE``
    (an entry used, awaiting confirmation, with its address), ``INCOMPLETE`` as
    ``FAILED`` (a resolution under way; an operator's ``arping`` answered meanwhile
    would have made it ``REACHABLE``, which nothing here can tell).
    """
    with _socket(netns) as sock:
        return {k: (_SETTLED.get(s, s), a) for k, (s, a) in _learned(sock).items()}


def restore_learned(netns: str, before: Learned) -> None:
    """Make the learned IPv4 entries of ``netns`` those of ``before``.

    Entries absent from ``before`` are deleted; each of ``before`` that is missing or
    differs (state, link-layer address) is replaced by its old self. A ``REACHABLE``
    entry put back is confirmed now: it turns ``STALE`` after ``base_reachable_time``
    from now, not from its last confirmation (a measurement's length later).
    """
    with _socket(netns) as sock:
        now = _learned(sock)
        for key in now.keys() - before.keys():
            _neigh(sock, _RTM_DELNEIGH, 0, key)
        for key, (state, lladdr) in before.items():
            if now.get(key) != (state, lladdr):
                _neigh(sock, _RTM_NEWNEIGH, _NLM_F_CREATE | _NLM_F_REPLACE, key, state, lladdr)


def count_objects(netns: str, ceiling: int) -> dict[str, int]:
    """How many objects of each kind of ``OBJECT_DUMPS`` namespace ``netns`` holds.

    Counting stops at ``ceiling`` per kind (a namespace stuffed with a million routes is
    not read to the end).
    """
    counts = {}
    for name, (kind, request) in OBJECT_DUMPS.items():
        with _socket(netns) as sock:  # a fresh socket: an abandoned dump leaves no reply
            count = 0
            for _ in _dump(sock, kind, request):
                count += 1
                if count >= ceiling:
                    break
            counts[name] = count
    return counts


def _tc_dump(
    netns: str, most: int, kind: int, ifindex: int = 0, parent: int = 0
) -> list[tuple[int, int]]:
    """``(ifindex, handle)`` of each object answering a traffic-control dump (``most``)."""
    found: list[tuple[int, int]] = []
    request = _TCMSG.pack(0, 0, 0, ifindex, 0, parent, 0)
    with _socket(netns) as sock:
        for _, data, body in _dump(sock, kind, request):
            found.append(_TCMSG.unpack_from(data, body)[3:5])
            if len(found) >= most:
                break
    return found


def count_tc(netns: str, ceiling: int) -> int:
    """Traffic-control objects of namespace ``netns``: qdiscs, classes and filters.

    Filters are read where ``tc filter show`` finds them: under each qdisc and class of
    each interface and in its ingress and egress blocks. Counting stops at ``ceiling``.
    """
    qdiscs = _tc_dump(netns, ceiling, _RTM_GETQDISC)  # every interface's
    count = len(qdiscs)
    for ifindex in sorted({i for i, _ in qdiscs}):
        if count >= ceiling:
            break
        classes = [h for _, h in _tc_dump(netns, ceiling - count, _RTM_GETTCLASS, ifindex)]
        count += len(classes)
        parents = [h for i, h in qdiscs if i == ifindex and h] + classes
        for parent in [*parents, *_TC_INGRESS_PARENTS]:
            if count >= ceiling:
                break
            count += len(_tc_dump(netns, ceiling - count, _RTM_GETTFILTER, ifindex, parent))
    return min(count, ceiling)


def _request(netns: str | None, kind: int, flags: int, body: bytes) -> bytes:
    """Send one request in ``netns`` and return its answer (the kernel's error, if any).

    Raises:
        EmulatorError: The kernel refused it.
    """
    with _socket(netns) as sock:
        sock.send(_message(kind, _NLM_F_REQUEST | _NLM_F_ACK | flags, 1, body))
        data = sock.recv(1 << 16)
    _, mtype, _, _, _ = _HEADER.unpack_from(data)
    if mtype == _NLMSG_ERROR and (code := struct.unpack_from("=i", data, _HEADER.size)[0]):
        raise EmulatorError(f"{netns}: netlink request {kind} refused: {os.strerror(-code)}")
    return data


def _index(netns: str, name: str) -> int:
    with enter(netns):
        try:
            return socket.if_nametoindex(name)
        except OSError as exc:
            raise EmulatorError(f"{netns}: no interface {name}") from exc


def set_up(netns: str, name: str) -> None:
    """Bring interface ``name`` of ``netns`` up (``ifconfig NAME up``)."""
    body = _IFINFOMSG.pack(0, 0, 0, _index(netns, name), _IFF_UP, _IFF_UP)
    _request(netns, _RTM_NEWLINK, 0, body)


def is_up(netns: str, name: str) -> bool:
    """Whether interface ``name`` of ``netns`` is administratively up."""
    body = _IFINFOMSG.pack(0, 0, 0, _index(netns, name), 0, 0)
    data = _request(netns, _RTM_GETLINK, 0, body)
    _, mtype, _, _, _ = _HEADER.unpack_from(data)
    return mtype == _RTM_NEWLINK and bool(_IFINFOMSG.unpack_from(data, _HEADER.size)[4] & _IFF_UP)


def add_address(netns: str, name: str, address: str, prefixlen: int) -> None:
    """Give interface ``name`` of ``netns`` an address (``ifconfig NAME ADDRESS/LEN``).

    As ``ifconfig`` does, the broadcast address comes with it.
    """
    interface = ipaddress.IPv4Interface(f"{address}/{prefixlen}")
    packed = interface.ip.packed
    attrs = [(_IFA_LOCAL, packed), (_IFA_ADDRESS, packed)]
    if prefixlen < 31:
        attrs.append((_IFA_BROADCAST, interface.network.broadcast_address.packed))
    body = _IFADDRMSG.pack(socket.AF_INET, prefixlen, 0, 0, _index(netns, name))
    body += b"".join(_RTATTR.pack(_RTATTR.size + len(v), k) + v for k, v in attrs)
    _request(netns, _RTM_NEWADDR, _NLM_F_CREATE | _NLM_F_REPLACE, body)



class VethEnd(NamedTuple):
    """One end of a veth pair, and where it goes.

    ``mac`` None: the kernel picks one; ``pid``: a process in the end's namespace (None:
    the calling thread's).
    """

    name: str
    mac: str | None
    pid: int | None


def _attr(kind: int, value: bytes) -> bytes:
    """One attribute, padded to four bytes."""
    raw = _RTATTR.pack(_RTATTR.size + len(value), kind) + value
    return raw + b"\0" * (-len(raw) % 4)


def _link(end: VethEnd) -> bytes:
    attrs = _attr(_IFLA_IFNAME, end.name.encode() + b"\0")
    if end.pid is not None:
        attrs += _attr(_IFLA_NET_NS_PID, struct.pack("=I", end.pid))
    if end.mac:
        attrs += _attr(_IFLA_ADDRESS, bytes.fromhex(end.mac.replace(":", "")))
    return _IFINFOMSG.pack(0, 0, 0, 0, 0, 0) + attrs


def add_veth(end: VethEnd, peer: VethEnd) -> None:
    """Make a veth pair, each end straight in its own namespace.

    As ``ip link add NAME [address MAC] netns PID type veth peer NAME [address MAC] netns
    PID`` does, from this thread's namespace.

    Raises:
        EmulatorError: The kernel refused it (a name taken, say).
    """
    data = _attr(_VETH_INFO_PEER, _link(peer))
    info = _attr(_IFLA_INFO_KIND, b"veth") + _attr(_IFLA_INFO_DATA, data)
    body = _link(end) + _attr(_IFLA_LINKINFO, info)
    _request(None, _RTM_NEWLINK, _NLM_F_CREATE | _NLM_F_EXCL, body)
