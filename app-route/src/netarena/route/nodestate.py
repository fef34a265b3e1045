"""A node's whole configuration, read from the kernel as comparable objects.

``read_node`` returns one ``key -> value`` entry per object: links (state, MTU, kind,
MAC), IPv4 and IPv6 addresses (not IPv6 link-local ones: the kernel makes and remakes
them from the MAC), IPv4 and IPv6 routes of every table but ``local`` (derived from
addresses), policy rules of both families with their order among rules of one priority,
permanent neighbour entries (static ARP and NDP), nexthop objects, queueing disciplines,
traffic-control classes and filters, the sysctls that change forwarding (``ip_forward``,
each interface's ``rp_filter``, ``arp_ignore``, ``accept_redirects``, ... from the link
dump, ``all``/``default``'s forwarding, ``rp_filter`` and ``proxy_arp``, IPv6
forwarding), and the
nftables ruleset (every family and table: ``iptables``, ``nft``, ``ebtables`` alike; legacy
x_tables when the node uses them). Keys name an object by identity, values hold what
may change about it, so two states compare object by object.

Normalisation is semantic where the kernel allows: routes ignore the protocol and
preferred-source fields (``ip route replace`` and a kernel-made connected route are the
same route), addresses ignore broadcast and flags (primary or secondary), packet
counters are dropped, a base chain with an ``accept`` policy and no rules equals no
chain at all (listing with ``iptables`` creates empty ones). A traffic-control filter is
its place (device, parent, priority, protocol, handle), kind, class and actions' kinds:
its match details and the actions' parameters carry counters and timestamps and are not
compared.

Everything but the ruleset is read over rtnetlink inside the node's namespace, about a
millisecond per node. The ruleset costs a process (``nft -j list ruleset``), so each
node's is cached with the ruleset's generation id (``NFT_MSG_GETGEN``, bumped by the
kernel on every ruleset change) and read again only when that id moved.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import struct
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.route.namespaces import enter

__all__ = ["NodeState", "StateReader", "container", "describe", "inert", "ruleset_objects"]

NodeState = dict[str, str]
"""Object key → value (``"route main 10.0.1.0/24 metric 0"`` → ``"unicast dev r0-eth1"``)."""

_HEADER = struct.Struct("=IHHII")
_ATTR = struct.Struct("=HH")
_DUMP = 0x1 | 0x300
_IFINFO = struct.Struct("=BxHiII")
_IFADDR = struct.Struct("=BBBBI")
_RTMSG = struct.Struct("=BBBBBBBBI")
_TCMSG = struct.Struct("=BxxxiIII")
_NDMSG = struct.Struct("=BxxxiHBB")
_NHMSG = struct.Struct("=BBBBI")
_NUD_PERMANENT = 0x80
_LINK_LOCAL6 = ipaddress.IPv6Network("fe80::/10")
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
_NETLINK_NETFILTER = 12
_NFT_GETGEN = (10 << 8) | 16
_VERDICTS = frozenset(
    {"accept", "drop", "reject", "jump", "goto", "return", "queue", "dnat", "snat",
     "masquerade", "redirect", "mangle", "set", "map", "tproxy", "dup", "fwd", "synproxy"}
)


def _attrs(data: bytes, at: int) -> dict[int, bytes]:
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
    sock.send(_HEADER.pack(_HEADER.size + len(body), kind, _DUMP, 1, 0) + body)
    while True:
        data = sock.recv(1 << 17)
        offset = 0
        while offset + _HEADER.size <= len(data):
            length, mtype, _, _, _ = _HEADER.unpack_from(data, offset)
            if mtype == 2:
                raise EmulatorError(f"netlink dump {kind} failed")
            if mtype == 3 or length < _HEADER.size:
                return
            yield data[offset : offset + length], _HEADER.size
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
        attrs = _attrs(data, at + _IFINFO.size)
        name = _text(attrs.get(3))
        names[index] = name
        kind = _text(_attrs(attrs.get(18, b""), 0).get(1))
        mac = attrs.get(1, b"").hex(":")
        updown = "up" if flags & 1 else "down"
        state[f"link {name}"] = f"{updown} mtu {_u32(attrs.get(4))} {kind or 'device'} {mac}"
        inet = _attrs(_attrs(attrs.get(26, b""), 0).get(socket.AF_INET, b""), 0).get(1, b"")
        values = struct.unpack(f"={len(inet) // 4}I", inet[: len(inet) // 4 * 4])
        for index, setting in _DEVCONF.items():
            if index <= len(values):
                state[f"sysctl net.ipv4.conf.{name}.{setting}"] = str(values[index - 1])
    return names


def _addresses(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    for data, at in _dump(sock, 22, _IFADDR.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
        _, length, _, _, index = _IFADDR.unpack_from(data, at)
        attrs = _attrs(data, at + _IFADDR.size)
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
        attrs = _attrs(data, at + _RTMSG.size)
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
        attrs = _attrs(data, at + _RTMSG.size)
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
        attrs = _attrs(data, at + _NDMSG.size)
        name = names.get(index, str(index))
        state[f"neigh {name} {_ip(attrs.get(1))}"] = f"lladdr {attrs.get(2, b'').hex(':')}"


def _nexthops(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    for data, at in _dump(sock, 106, _NHMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)):
        attrs = _attrs(data, at + _NHMSG.size)
        if 2 in attrs:  # a group: member ids and weights
            members = struct.iter_unpack("=IBxH", attrs[2][: len(attrs[2]) // 8 * 8])
            value = "group " + "/".join(f"{m[0]}w{m[1]}" for m in members)
        elif 4 in attrs:
            value = "blackhole"
        else:
            value = f"via {_ip(attrs.get(6))} dev {names.get(_u32(attrs.get(5)), '-')}"
        state[f"nexthop {_u32(attrs.get(1))}"] = value


def _qdiscs(sock: socket.socket, state: NodeState, names: dict[int, str]) -> None:
    """Queueing disciplines, and the classes and filters of devices that have any."""
    queues: list[tuple[int, int]] = []
    for data, at in _dump(sock, 38, _TCMSG.pack(0, 0, 0, 0, 0)):
        _, index, handle, parent, _ = _TCMSG.unpack_from(data, at)
        attrs = _attrs(data, at + _TCMSG.size)
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
            attrs = _attrs(data, at + _TCMSG.size)
            name = names.get(index, str(index))
            value = f"{_text(attrs.get(1))} parent {parent:x} {attrs.get(2, b'').hex()}"
            state[f"tclass {name} {handle:x}"] = value
            parents.append((index, handle))
    for index, parent in parents:
        _filters(sock, state, names.get(index, str(index)), index, parent)


def _filters(sock: socket.socket, state: NodeState, name: str, index: int, parent: int) -> None:
    for data, at in _dump(sock, 46, _TCMSG.pack(0, index, 0, parent, 0)):
        _, _, handle, _, info = _TCMSG.unpack_from(data, at)
        attrs = _attrs(data, at + _TCMSG.size)
        kind = _text(attrs.get(1))
        prio, proto = info >> 16, socket.ntohs(info & 0xFFFF)
        options = _attrs(attrs.get(2, b""), 0)
        classid, act = _CLASSIFIERS.get(kind, (0, 0))
        actions = [_text(_attrs(a, 0).get(1)) for a in _attrs(options.get(act, b""), 0).values()]
        value = f"{kind} class {_u32(options.get(classid)):x} actions {','.join(actions) or '-'}"
        state[f"tfilter {name} {parent:x} prio {prio} proto {proto:x} handle {handle:x}"] = value


def _netconf(sock: socket.socket, state: NodeState) -> None:
    """The ``all`` and ``default`` settings netconf reports (and ``ip_forward``)."""
    for family, tree in ((socket.AF_INET, "ipv4"), (socket.AF_INET6, "ipv6")):
        for data, at in _dump(sock, 82, struct.pack("=Bxxx", family)):
            attrs = _attrs(data, at + 4)
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


def _generation(netns: str, sock: socket.socket | None = None) -> int:
    """The nftables ruleset's generation id in ``netns`` (moves on every change)."""
    if sock is None:
        with enter(netns):
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER)
    with sock:
        body = struct.pack("=BBH", 0, 0, 0)
        sock.send(_HEADER.pack(_HEADER.size + len(body), _NFT_GETGEN, 1, 1, 0) + body)
        data = sock.recv(4096)
    _, mtype, _, _, _ = _HEADER.unpack_from(data, 0)
    if mtype != (10 << 8) | 15:
        raise EmulatorError(f"{netns}: cannot read the nftables generation")
    generation: int = struct.unpack("!I", _attrs(data, _HEADER.size + 4)[1][:4])[0]
    return generation


def _legacy_tools() -> list[str]:
    """The legacy x_tables tools whose tables the current thread's namespace uses."""
    tools = []
    for names, tool in (("ip_tables_names", "iptables"), ("ip6_tables_names", "ip6tables")):
        try:
            with open(f"/proc/thread-self/net/{names}") as f:
                if f.read().strip():
                    tools.append(tool)
        except FileNotFoundError:
            continue
    return tools


def _strip(value: Any) -> Any:
    """The value without handles and packet counters."""
    if isinstance(value, dict):
        return {
            k: (None if k == "counter" else _strip(v))
            for k, v in value.items()
            if k not in ("handle", "packets", "bytes")
        }
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def ruleset_objects(listing: str) -> NodeState:
    """The objects of ``nft -j list ruleset`` output (see the module docstring).

    Raises:
        EmulatorError: The listing is not nftables JSON (the judge fails closed).
    """
    try:
        items = json.loads(listing)["nftables"]
    except (ValueError, KeyError, TypeError) as exc:
        raise EmulatorError(f"unreadable ruleset listing: {exc}") from exc
    state: NodeState = {}
    seen: Counter[str] = Counter()
    for item in items:
        if not isinstance(item, dict) or len(item) != 1:
            continue
        kind, body = next(iter(item.items()))
        if not isinstance(body, dict) or kind in ("metainfo", "table"):
            continue
        where = f"nft {body.get('family')} {body.get('table')}"
        if kind == "rule":
            text = json.dumps(_strip(body.get("expr")), sort_keys=True, separators=(",", ":"))
            key = f"{where} {body.get('chain')} rule {text}"
            seen[key] += 1
            state[key + (f" #{seen[key]}" if seen[key] > 1 else "")] = ""
        elif kind == "chain":
            if body.get("policy", "accept") != "accept":
                state[f"{where} {body.get('name')} policy"] = str(body.get("policy"))
        else:
            rest = json.dumps(_strip(body), sort_keys=True, separators=(",", ":"))
            state[f"{where} {kind} {body.get('name')}"] = rest
    return state


def _operand(value: Any) -> str:
    if isinstance(value, dict) and len(value) == 1:
        kind, body = next(iter(value.items()))
        if kind == "payload" and isinstance(body, dict):
            return f"{body.get('protocol')} {body.get('field')}"
        if kind in ("meta", "ct") and isinstance(body, dict):
            return f"{kind} {body.get('key')}"
        if kind == "prefix" and isinstance(body, dict):
            return f"{body.get('addr')}/{body.get('len')}"
        if kind == "set" and isinstance(body, list):
            return "{" + ",".join(_operand(v) for v in body) + "}"
        if kind == "range" and isinstance(body, list):
            return "-".join(_operand(v) for v in body)
    if isinstance(value, str | int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def _statement(part: Any) -> str | None:
    if not isinstance(part, dict) or len(part) != 1:
        return json.dumps(part, separators=(",", ":"))
    kind, body = next(iter(part.items()))
    if kind == "counter":
        return None
    if kind == "match" and isinstance(body, dict):
        op = "" if body.get("op") in ("==", "in") else f"{body.get('op')} "
        return f"{_operand(body.get('left'))} {op}{_operand(body.get('right'))}"
    if kind == "xt" and isinstance(body, dict):
        return f"xt {body.get('name')}"
    if kind in ("dnat", "snat") and isinstance(body, dict):
        port = f":{body['port']}" if "port" in body else ""
        return f"{kind} to {_operand(body.get('addr'))}{port}"
    if kind in ("jump", "goto") and isinstance(body, dict):
        return f"{kind} {body.get('target')}"
    return str(kind)  # a JSON object key


def describe(key: str) -> str:
    """``key`` as a person reads it (nftables rules in ``nft``'s words, not JSON)."""
    if not key.startswith("nft ") or " rule " not in key:
        return key
    where, rest = key.split(" rule ", 1)
    expr, _, copy = rest.partition(" #")
    try:
        parts = json.loads(expr)
    except ValueError:
        return key
    words = [w for p in (parts if isinstance(parts, list) else []) if (w := _statement(p))]
    return f"{where}: {' '.join(words)}" + (f" (copy {copy})" if copy else "")


def inert(key: str) -> bool:
    """Whether an added object changes no packet's fate (a rule that only counts or logs)."""
    if " rule " not in key or not key.startswith("nft "):
        return False
    expr = key.split(" rule ", 1)[1].rsplit(" #", 1)[0]
    try:
        parts = json.loads(expr)
    except ValueError:
        return False
    for part in parts if isinstance(parts, list) else []:
        xt = part.get("xt") if isinstance(part, dict) else None
        if isinstance(xt, dict):
            if xt.get("type") == "target" and xt.get("name") not in ("LOG", "NFLOG"):
                return False
        elif not isinstance(part, dict) or set(part) & _VERDICTS:
            return False
    return True


def container(key: str) -> str:
    """What a repair may rewrite freely once a fault touched it (see ``collateral.py``).

    Rules and policies of one chain; the addresses of one interface; the routes to one
    destination in one table; every policy rule of a family; the queues, classes and
    filters of one interface; the static neighbours of one interface; the rest (links,
    sysctls, sets, nexthops) one by one.
    """
    words = key.split(" ")
    if words[0] == "nft" and len(words) > 4 and words[4] in ("rule", "policy"):
        return " ".join(words[:4])
    if words[0] in ("addr", "qdisc", "neigh"):
        return " ".join(words[:2])
    if words[0] in ("tclass", "tfilter"):
        return f"qdisc {words[1]}"
    if words[0] in ("route", "route6"):
        return " ".join(words[:3])
    if words[0] in ("rule", "rule6"):
        return words[0]
    return key


@dataclass
class _Cached:
    generation: int
    objects: NodeState


class StateReader:
    """Reads nodes' states, caching each node's ruleset by its generation id.

    Args:
        exec_in: Runs ``argv`` in a node's namespace and returns ``(returncode, output)``.
    """

    def __init__(self, exec_in: Any) -> None:
        self.exec_in = exec_in
        self._rulesets: dict[str, _Cached] = {}

    def _ruleset(self, node: str, netns: str, sock: socket.socket) -> NodeState:
        generation = _generation(netns, sock)
        cached = self._rulesets.get(node)
        if cached is not None and cached.generation == generation:
            return cached.objects
        code, listing = self.exec_in(node, ["nft", "-j", "list", "ruleset"])
        if code != 0:
            raise EmulatorError(f"{node}: nft list ruleset failed: {listing.strip()[:200]}")
        objects = ruleset_objects(listing)
        if _generation(netns) == generation:  # unchanged while listed: cache it
            self._rulesets[node] = _Cached(generation, objects)
        return objects

    def _legacy(self, node: str, tools: list[str]) -> NodeState:
        state: NodeState = {}
        for tool in tools:
            code, saved = self.exec_in(node, [f"{tool}-legacy-save"])
            if code != 0:
                raise EmulatorError(f"{node}: {tool}-legacy-save failed")
            table = "?"
            for line in saved.splitlines():
                if line.startswith("*"):
                    table = line[1:]
                elif line.startswith("-A ") or (line.startswith(":") and " ACCEPT " not in line):
                    state[f"legacy {tool} {table} {line.split(' [')[0]}"] = ""
        return state

    def read(self, node: str, netns: str) -> NodeState:
        """The state of ``node`` (namespace ``netns``).

        Raises:
            EmulatorError: Some part could not be read (the caller fails closed).
        """
        state: NodeState = {}
        try:
            with enter(netns):
                sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
                nft = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER)
                legacy = _legacy_tools()
            with sock:
                names = _links(sock, state)
                _addresses(sock, state, names)
                _routes(sock, state, names)
                _rules(sock, state)
                _neighbours(sock, state, names)
                _nexthops(sock, state, names)
                _qdiscs(sock, state, names)
                _netconf(sock, state)
            state.update(self._ruleset(node, netns, nft))
            if legacy:
                state.update(self._legacy(node, legacy))
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmulatorError(f"{node}: cannot read its state: {exc}") from exc
        return state
