"""A node's whole configuration, read from the kernel as comparable objects.

``read_node`` returns one ``key -> value`` entry per object: links (state, MTU, kind,
MAC), IPv4 and IPv6 addresses (not IPv6 link-local ones: the kernel makes and remakes
them from the MAC), IPv4 and IPv6 routes of every table but ``local`` (derived from
addresses), policy rules of both families with their order among rules of one priority,
permanent neighbour entries (static ARP and NDP), nexthop objects, queueing disciplines,
traffic-control classes and filters, the sysctls that change forwarding (``ip_forward``,
each interface's ``rp_filter``, ``arp_ignore``, ``accept_redirects``, ... from the link
dump, ``all``/``default``'s forwarding, ``rp_filter`` and ``proxy_arp``, IPv6
forwarding), IPsec policies and states (``xfrm_objects.py``), and the
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

import json
import socket
import struct
import subprocess
from collections import Counter
from dataclasses import dataclass
from typing import Any

from netarena.common.core.errors import EmulatorError
from netarena.route.linux.kernel_objects import HEADER, NodeState, attributes, read_rtnetlink
from netarena.route.linux.namespaces import enter
from netarena.route.linux.xfrm_objects import read_xfrm

__all__ = [
    "NEVER_CHANGED",
    "operational",
    "NodeState",
    "StateReader",
    "container",
    "describe",
    "inert",
    "ruleset_generation",
    "ruleset_objects",
]


_NETLINK_NETFILTER = 12
_NFT_GETGEN = (10 << 8) | 16
_PASSIVE_PARTS = frozenset({"match", "counter", "log", "limit", "quota"})
"""nftables statements that decide nothing: matches, counters, logging and its rate limits.
Every other statement (a verdict, a verdict map, a jump, a mark, a NAT, a set update, a
queue, a duplicate...) may change a packet's fate."""
_PASSIVE_TARGETS = frozenset({"LOG", "NFLOG"})
"""x_tables targets that only log."""


NEVER_CHANGED = 1
"""nf_tables' generation id in a namespace whose ruleset no transaction ever changed (it
starts there and moves on with every commit): the ruleset is empty."""


def ruleset_generation(netns: str, sock: socket.socket | None = None) -> int:
    """The nftables ruleset's generation id in ``netns`` (moves on every change)."""
    if sock is None:
        with enter(netns):
            sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_NETFILTER)
    with sock:
        body = struct.pack("=BBH", 0, 0, 0)
        sock.send(HEADER.pack(HEADER.size + len(body), _NFT_GETGEN, 1, 1, 0) + body)
        data = sock.recv(4096)
    _, mtype, _, _, _ = HEADER.unpack_from(data, 0)
    if mtype != (10 << 8) | 15:
        raise EmulatorError(f"{netns}: cannot read the nftables generation")
    generation: int = struct.unpack("!I", attributes(data, HEADER.size + 4)[1][:4])[0]
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


_OPERATIONAL = ("log", "debug", "description", "log-adjacency-changes")
"""First words of FRR lines that only log or name things (``log file``, ``debug ospf``)."""


def operational(key: str) -> bool:
    """Whether ``key`` is an FRR line that only logs or names things.

    No route, packet or session depends on it: ``log file ...``, ``debug ...``,
    ``description ...``, ``log-adjacency-changes``, ``bgp log-neighbor-changes``,
    ``neighbor X description ...``.
    """
    line = key.split()[2:] if key.startswith("frr ") else []
    return bool(line) and (
        line[0] in _OPERATIONAL
        or line[:2] == ["bgp", "log-neighbor-changes"]
        or (line[0] == "neighbor" and line[2:3] == ["description"])
    )


def inert(key: str) -> bool:
    """Whether an added object surely changes no packet's fate (it only counts or logs).

    An FRR line that only logs or names (``operational``) is inert too.

    A whitelist, so the judge fails closed: a rule is inert only when every statement is a
    match, a counter, a log or a rate limit (x_tables matches, and ``LOG``/``NFLOG``
    targets). A verdict map (``tcp dport vmap {22 : drop}``), a lookup in a map carrying
    verdicts, a jump or goto, a mark, a NAT, a set update or any statement this reader does
    not know is not inert; nor is any object other than a rule (a set, a map, a chain's
    policy, a route, an address...).
    """
    if operational(key):
        return True
    if " rule " not in key or not key.startswith("nft "):
        return False
    expr = key.split(" rule ", 1)[1].rsplit(" #", 1)[0]
    try:
        parts = json.loads(expr)
    except ValueError:
        return False
    if not isinstance(parts, list):
        return False
    for part in parts:
        if not isinstance(part, dict) or len(part) != 1:
            return False
        kind, body = next(iter(part.items()))
        if kind == "xt":
            if not isinstance(body, dict):
                return False
            if body.get("type") != "match" and body.get("name") not in _PASSIVE_TARGETS:
                return False
        elif kind not in _PASSIVE_PARTS or _holds_verdict(body):
            return False
    return True


def _holds_verdict(body: Any) -> bool:
    """Whether a statement's operands carry a verdict (a map of verdicts inside a match)."""
    if isinstance(body, dict):
        return any(k in _VERDICT_WORDS or _holds_verdict(v) for k, v in body.items())
    if isinstance(body, list):
        return any(_holds_verdict(v) for v in body)
    return False


_VERDICT_WORDS = frozenset({"accept", "drop", "reject", "jump", "goto", "return", "queue",
                            "continue", "vmap", "map"})


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
    if words[0] == "frr":  # a router's FRR configuration: one interface or router section
        return " ".join(words[:2])
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
        generation = ruleset_generation(netns, sock)
        if generation == NEVER_CHANGED:  # nothing to list: no `nft` process (~10 ms CPU)
            return {}
        cached = self._rulesets.get(node)
        if cached is not None and cached.generation == generation:
            return cached.objects
        code, listing = self.exec_in(node, ["nft", "-j", "list", "ruleset"])
        if code != 0:
            raise EmulatorError(f"{node}: nft list ruleset failed: {listing.strip()[:200]}")
        objects = ruleset_objects(listing)
        if ruleset_generation(netns) == generation:  # unchanged while listed: cache it
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
                read_rtnetlink(sock, state)
            state.update(self._ruleset(node, netns, nft))
            state.update(read_xfrm(netns))
            if legacy:
                state.update(self._legacy(node, legacy))
        except (OSError, subprocess.SubprocessError) as exc:
            raise EmulatorError(f"{node}: cannot read its state: {exc}") from exc
        return state
