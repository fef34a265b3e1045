"""Forgetting learned IPv4 neighbour (ARP) entries of a namespace, over rtnetlink.

The equivalent of ``ip neigh flush all`` (static ``permanent`` and ``noarp`` entries stay)
without starting a process per namespace: the judge empties every node's cache before
each measurement, so the cost matters (about 40 ms for 17 ``ip`` processes on a loaded
2-core machine, under 2 ms this way).
"""

from __future__ import annotations

import socket
import struct

from netarena.route.namespaces import enter

__all__ = ["flush_learned"]

_NETLINK_ROUTE = 0
_RTM_DELNEIGH, _RTM_GETNEIGH = 29, 30
_NLM_F_REQUEST, _NLM_F_DUMP = 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_NDA_DST = 1
_NUD_NOARP, _NUD_PERMANENT = 0x40, 0x80
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, seq, pid
_NDMSG = struct.Struct("=BBHiHBB")  # family, pad, pad, ifindex, state, flags, type
_RTATTR = struct.Struct("=HH")


def _message(kind: int, flags: int, seq: int, body: bytes) -> bytes:
    return _HEADER.pack(_HEADER.size + len(body), kind, flags, seq, 0) + body


def _learned(sock: socket.socket) -> list[tuple[int, bytes]]:
    """``(ifindex, address)`` of every IPv4 entry that is neither permanent nor noarp."""
    sock.send(_message(_RTM_GETNEIGH, _NLM_F_REQUEST | _NLM_F_DUMP, 1, _NDMSG.pack(
        socket.AF_INET, 0, 0, 0, 0, 0, 0)))
    found = []
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, kind, _, _, _ = _HEADER.unpack_from(data, offset)
            if kind in (_NLMSG_DONE, _NLMSG_ERROR):
                return found
            body = offset + _HEADER.size
            _, _, _, ifindex, state, _, _ = _NDMSG.unpack_from(data, body)
            at = body + _NDMSG.size
            while at + _RTATTR.size <= offset + length:
                size, attr = _RTATTR.unpack_from(data, at)
                if size < _RTATTR.size:
                    break
                if attr == _NDA_DST and not state & (_NUD_NOARP | _NUD_PERMANENT):
                    found.append((ifindex, data[at + _RTATTR.size : at + size]))
                at += (size + 3) & ~3
            offset += (length + 3) & ~3


def flush_learned(netns: str) -> None:
    """Delete every learned IPv4 neighbour entry of namespace ``netns``."""
    with enter(netns):
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_ROUTE)
    with sock:
        for seq, (ifindex, address) in enumerate(_learned(sock), 2):
            attr = _RTATTR.pack(_RTATTR.size + len(address), _NDA_DST) + address
            body = _NDMSG.pack(socket.AF_INET, 0, 0, ifindex, 0, 0, 0) + attr
            sock.send(_message(_RTM_DELNEIGH, _NLM_F_REQUEST, seq, body))
