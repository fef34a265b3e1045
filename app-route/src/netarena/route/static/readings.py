"""The objects an agent reads on a node, parsed from one shell command's output.

``NODE_READ`` is an ordinary command any agent could send (``ip``, ``iptables-save``, ``tc``
and ``/proc/sys``); ``read_objects`` turns its output into ``Reading`` records: every
configuration statement a repair might weigh, described by what an agent sees of it, with
identifiers replaced by their class (``addressbook.py``). What the kernel makes on its own
or the prompt states exactly is left out, the way FRR's running configuration leaves out
defaults: links up at MTU 1500 on the inventory's interfaces, the inventory's own
addresses, kernel-made routes, the default policy rules, ACCEPT policies, default queues and
default kernel settings. Everything else is a reading, grouped by kind: a kind is a sort
of statement an agent weighs against its peers (blocking filter rules, refusing policy
rules, unicast routes, ...). The audit (``audit.py``) and the shape baseline both use it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from netarena.common.core.evidence import FieldValue
from netarena.route.static.addressbook import AddressBook

__all__ = ["NODE_READ", "Reading", "read_objects", "sections", "SYSCTL_KEYS"]

SYSCTL_KEYS = ("forwarding", "rp_filter", "arp_ignore", "arp_announce", "accept_redirects",
               "send_redirects", "log_martians", "proxy_arp")
"""The per-interface IPv4 settings read (``/proc/sys/net/ipv4/conf/*/KEY``)."""

NODE_READ = (
    "echo '#link'; ip -o link show | awk '{print $2, $3, $5}'; "
    "echo '#addr'; ip -o -4 addr show | sed -e 's/\\\\.*//' -e 's/ brd [^ ]*//' | cut -d' ' -f2-; "
    "echo '#route'; ip -4 route show table all | grep -v -e '^local ' -e '^broadcast '; "
    "echo '#cache'; ip -4 route show cache | grep -v '^ '; "
    "echo '#rule'; ip -4 rule show; "
    "echo '#filter'; iptables-save -c | grep -v '^#'; "
    "echo '#qdisc'; tc qdisc show | grep -v ' noqueue '; "
    "echo '#sysctl'; cd /proc/sys/net/ipv4/conf && echo ip_forward=$(cat ../ip_forward) && "
    f"grep -H '' {' '.join('*/' + k for k in SYSCTL_KEYS)} | awk -F/ "
    f"-v keys='{' '.join(SYSCTL_KEYS)}' '{{i = index($2, \":\"); "
    "k = substr($2, 1, i - 1); v[k] = v[k] \" \" $1 \"=\" substr($2, i + 1)} "
    "END {n = split(keys, K, \" \"); for (j = 1; j <= n; j++) print K[j] v[K[j]]}'"
)
"""One command that shows a node's links, addresses, routes, policy rules, packet filters,
queues and forwarding settings."""

_ROUTER = "r0"
_DEFAULT_PREFS = {"0", "32766", "32767"}
_BLOCK = {"DROP", "REJECT"}
_ACCEPT = {"ACCEPT", "RETURN"}
_NAT = {"DNAT", "SNAT", "MASQUERADE", "REDIRECT", "NETMAP"}
_PASSIVE = {"LOG", "NFLOG", ""}
_TARGETS = {*_BLOCK, *_ACCEPT, *_NAT, *_PASSIVE, "MARK", "CONNMARK", "TEE", "TPROXY", "CT",
            "NOTRACK", "TOS", "DSCP", "TTL", "CLASSIFY", "QUEUE", "NFQUEUE", "AUDIT", "TRACE"}
"""x_tables targets; any other target is a jump to a user chain."""
_REFUSING = {"prohibit", "unreachable", "blackhole"}
_COUNTS = re.compile(r"^\[(\d+):(\d+)\] ")


@dataclass(frozen=True)
class Reading:
    """One statement read on a node."""

    kind: str
    """What sort of statement (``filter_block``, ``ip_rule_refuse``, ``route_unicast``...)."""
    identity: str
    """What names it on its node (a rule's text, a route's table and destination...)."""
    value: str
    """What may change about it; with ``identity``, what tells it from the healthy one."""
    fields: dict[str, FieldValue] = field(default_factory=dict)
    """What an agent sees of it, identifiers replaced by their class."""
    command: str = ""
    """A command that removes or reverts it (the shape baseline sends these)."""


def sections(output: str) -> dict[str, list[str]]:
    """The lines of each ``#section`` of a read's output."""
    found: dict[str, list[str]] = {}
    current = None
    for line in output.splitlines():
        if re.fullmatch(r"#[a-z]+", line.strip()):
            current = line.strip()[1:]
            found[current] = []
        elif current is not None and line.strip():
            found[current].append(line.strip())
    return found


def _role(node: str) -> str:
    return "router" if node == _ROUTER else "host"


def _links(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        name = parts[0].rstrip(":").split("@")[0]
        up = "UP" in parts[1].strip("<>").split(",")
        if not parts[2].isdigit():
            continue  # not a link line (a message mixed into the output)
        mtu = int(parts[2])
        where = book.interface(name)
        if where == "lo" or (where == "inventory" and up and mtu == 1500):
            continue
        fields: dict[str, FieldValue] = {
            "role": _role(node), "interface": where, "up": up, "mtu": mtu,
            "mtu_small": mtu < 1280,
        }
        command = f"ip link set {name} up mtu 1500"
        out.append(Reading("link", f"link {name}", f"{up} {mtu}", fields, command))
    return out


def _addresses(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    out = []
    own = book.inv.hosts.get(node)
    for line in lines:
        parts = line.split()
        if len(parts) < 3 or parts[1] != "inet":
            continue
        intf, cidr = parts[0], parts[2]
        kind = book.address(node, cidr)
        where = book.interface(intf)
        if where == "lo" and cidr.startswith("127."):
            continue
        net = book.network(node, cidr)
        if where == "inventory" and kind == "own" and book.prefix_delta(cidr) == 0:
            if own is None or own[0] == intf:
                continue  # the inventory's own address, as the prompt states it
        fields: dict[str, FieldValue] = {
            "role": _role(node), "interface": where, "address": kind,
            "prefix": int(cidr.split("/")[1]) if "/" in cidr else 32,
            "prefix_delta": book.prefix_delta(cidr), "network": net,
            "own_subnet": book.in_own_subnet(node, cidr), "secondary": "secondary" in parts,
        }
        command = f"ip addr del {cidr} dev {intf}"
        out.append(Reading("address", f"addr {intf} {cidr}", "secondary" * ("secondary" in parts),
                           fields, command))
    return out


def _route_parts(line: str) -> tuple[str, str, dict[str, str]]:
    words = line.split()
    kind = "unicast"
    if words and words[0] in (*_REFUSING, "throw", "nat", "multicast"):
        kind = words.pop(0)
    dst = words.pop(0) if words else ""
    pairs = {}
    i = 0
    while i < len(words):
        if words[i] in ("linkdown", "dead", "onlink", "pervasive", "offload"):
            pairs[words[i]] = "1"
            i += 1
            continue
        if i + 1 < len(words):
            pairs[words[i]] = words[i + 1]
        i += 2
    return kind, dst, pairs


def _routes(node: str, lines: list[str], book: AddressBook, inv_routes: set[str]) -> list[Reading]:
    out = []
    for line in lines:
        kind, dst, opts = _route_parts(line)
        table = opts.get("table", "main")
        if table == "local" or opts.get("proto") == "kernel" or not dst:
            continue
        if table == "main" and line.rstrip() in inv_routes:
            continue  # the default route (or a restricted host's route) the prompt states
        via = opts.get("via")
        fields: dict[str, FieldValue] = {
            "role": _role(node), "table": "main" if table == "main" else "other",
            "type": kind, "destination": book.network(node, dst),
            "prefix": 0 if dst == "default" else int(dst.split("/")[1]) if "/" in dst else 32,
            "prefix_delta": book.prefix_delta(dst),
            "own_subnet": book.in_own_subnet(node, dst),
            "via": book.address(node, via) if via else "none",
            "via_own_subnet": book.in_own_subnet(node, via),
            "device": book.interface(opts["dev"]) if "dev" in opts else "none",
            "metric": int(opts.get("metric", "0")), "proto": opts.get("proto", "boot"),
            "scope": opts.get("scope", "global"), "onlink": "onlink" in opts,
        }
        metric = f" metric {opts['metric']}" if "metric" in opts else ""
        where = f" table {table}" if table != "main" else ""
        identity = f"route {table} {dst}{metric}"
        command = f"ip route del {kind} {dst}{metric}{where}".replace("del unicast ", "del ")
        group = "route_refuse" if kind in _REFUSING else "route_unicast"
        out.append(Reading(group, identity, line.strip(), fields, command))
    return out


def _selector(words: list[str], key: str) -> str | None:
    if key in words:
        return words[words.index(key) + 1]
    return None


def _rules(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    out = []
    for line in lines:
        pref, _, rest = line.partition(":")
        if pref in _DEFAULT_PREFS or not pref.isdigit():
            continue
        words = rest.split()
        action = next((w for w in words if w in (*_REFUSING, "lookup", "goto", "nop")), "other")
        src, dst = _selector(words, "from"), _selector(words, "to")
        fields: dict[str, FieldValue] = {
            "role": _role(node), "pref": int(pref), "action": action,
            "from": book.network(node, src), "to": book.network(node, dst),
            "from_delta": book.prefix_delta(src), "to_delta": book.prefix_delta(dst),
            "fwmark": "fwmark" in words, "iif": "iif" in words, "oif": "oif" in words,
            "not": "not" in words,
            "table": "main" if _selector(words, "lookup") == "main" else "other",
        }
        group = "ip_rule_refuse" if action in _REFUSING else "ip_rule_lookup"
        command = f"ip rule del pref {pref} {' '.join(words)}"
        out.append(Reading(group, f"rule {pref} {' '.join(words)}", "", fields, command))
    return out


def _rule_fields(node: str, words: list[str], book: AddressBook) -> dict[str, FieldValue]:
    proto = _selector(words, "-p") or "all"
    target = _selector(words, "-j") or ""

    def negated(key: str) -> bool:
        return key in words and words.index(key) > 0 and words[words.index(key) - 1] == "!"

    comment = _selector(words, "--comment")
    return {
        "role": _role(node), "target": target if target in _TARGETS else "chain",
        "reject_with": _selector(words, "--reject-with") or "none",
        "protocol": proto, "dport": book.port(_selector(words, "--dport"), proto),
        "sport": book.port(_selector(words, "--sport"), proto),
        "source": book.network(node, _selector(words, "-s")), "source_not": negated("-s"),
        "destination": book.network(node, _selector(words, "-d")),
        "destination_not": negated("-d"),
        "source_own_subnet": book.in_own_subnet(node, _selector(words, "-s")),
        "destination_own_subnet": book.in_own_subnet(node, _selector(words, "-d")),
        "in": book.interface(_selector(words, "-i") or "lo") if "-i" in words else "none",
        "out": book.interface(_selector(words, "-o") or "lo") if "-o" in words else "none",
        "state": "--ctstate" in words or "--state" in words,
        "icmp_type": "--icmp-type" in words, "limit": "limit" in words,
        "comment": comment.strip('"') if comment else "none",
    }


def _filters(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    out: list[Reading] = []
    table = "?"
    chains: dict[tuple[str, str], list[tuple[int, str, list[str]]]] = {}
    for line in lines:
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith(":"):
            name, policy = line[1:].split()[:2]
            if policy not in ("ACCEPT", "-"):
                fields: dict[str, FieldValue] = {"role": _role(node), "table": table,
                                                 "chain": name, "policy": policy}
                out.append(Reading("chain_policy", f"policy {table} {name}", policy, fields,
                                   f"iptables -t {table} -P {name} ACCEPT"))
        elif (counts := _COUNTS.match(line)) or line.startswith("-A "):
            packets = int(counts.group(1)) if counts else 0
            text = line[counts.end():] if counts else line
            try:
                words = shlex.split(text)
            except ValueError:
                words = text.split()
            chains.setdefault((table, words[1]), []).append((packets, text, words))
    for (table, chain), rules in chains.items():
        seen: dict[str, int] = {}
        established = False
        for index, (packets, text, words) in enumerate(rules):
            fields = _rule_fields(node, words, book)
            target = str(fields["target"])
            group = ("filter_block" if target in _BLOCK else "filter_accept" if target in _ACCEPT
                     else "filter_nat" if target in _NAT else "filter_passive"
                     if target in _PASSIVE else "filter_other")
            fields |= {"table": table, "chain": chain, "position": index,
                       "from_end": len(rules) - 1 - index, "chain_rules": len(rules),
                       "after_established": established, "packets": packets}
            established = established or (bool(fields["state"]) and target == "ACCEPT")
            seen[text] = seen.get(text, 0) + 1
            identity = f"filter {table} {text}" + (f" #{seen[text]}" if seen[text] > 1 else "")
            command = f"iptables -t {table} -D {' '.join(shlex.quote(w) for w in words[1:])}"
            out.append(Reading(group, identity, "", fields, command))
    return out


def _size(text: str) -> float | None:
    """Bytes of a ``tc`` size (``62b``, ``256Kb``, ``1Mb``)."""
    found = re.fullmatch(r"([\d.]+)([KMG]?)b", text)
    if not found:
        return None
    return float(found.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[found.group(2)]


def _rate(text: str) -> float | None:
    found = re.fullmatch(r"([\d.]+)([KMG]?)bit", text)
    if not found:
        return None
    return float(found.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[found.group(2)]


_SMALLEST_FRAME = 64  # bytes: a shaper's burst below it passes no frame


def _qdiscs(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    """Queues in two kinds, as filter rules: passing no frame (as faults' do) or traffic."""
    out = []
    for line in lines:
        words = line.split()
        if len(words) < 5 or words[0] != "qdisc" or words[1] == "noqueue":
            continue
        dev = _selector(words, "dev") or "?"
        parent = "root" if "root" in words else _selector(words, "parent") or "?"
        limit = _selector(words, "limit")
        size = int(re.sub(r"\D", "", limit) or 0) if limit else None
        rate = _rate(_selector(words, "rate") or "")
        burst = _size(_selector(words, "burst") or "")
        fields: dict[str, FieldValue] = {
            "role": _role(node), "interface": book.interface(dev), "qdisc": words[1],
            "root": parent == "root", "limit": size, "rate": rate, "burst": burst,
            "empty": size == 0,
        }
        where = "root" if parent == "root" else f"parent {parent}"
        blocks = size == 0 or (burst is not None and burst < _SMALLEST_FRAME)
        out.append(Reading("qdisc_block" if blocks else "qdisc_pass", f"qdisc {dev} {parent}",
                           " ".join(words[1:2] + words[4:]), fields,
                           f"tc qdisc del dev {dev} {where}"))
    return out


def _baseline(node: str, key: str, scope: str, forwards: bool) -> str:
    """The value a fresh node of this role holds, or the kernel set itself.

    Turning ``ip_forward`` on makes the kernel turn ``all.accept_redirects`` off (a router
    takes no redirects), so on a forwarding node that is no statement of its own.
    """
    if key == "forwarding":
        return "1" if node == _ROUTER else "0"
    if key == "send_redirects":
        return "1"
    if key == "accept_redirects":
        return "0" if (node == _ROUTER or forwards) and scope == "all" else "1"
    return "0"


def _sysctls(node: str, lines: list[str], book: AddressBook) -> list[Reading]:
    out = []
    forwards = "ip_forward=1" in lines
    for line in lines:
        if line.startswith("ip_forward="):
            key, pairs = "forwarding", [("global", line.split("=", 1)[1])]
        else:
            key, *rest = line.split()
            pairs = [tuple(p.split("=", 1)) for p in rest if "=" in p]  # type: ignore[misc]
        if key not in SYSCTL_KEYS:
            continue
        for scope, value in pairs:
            if value == _baseline(node, key, scope, forwards):
                continue
            where = scope if scope in ("global", "all", "default") else book.interface(scope)
            fields: dict[str, FieldValue] = {"role": _role(node), "scope": where,
                                             "value": int(value) if value.isdigit() else -1}
            name = "net.ipv4.ip_forward" if scope == "global" else f"net.ipv4.conf.{scope}.{key}"
            command = f"sysctl -qw {name}={_baseline(node, key, scope, forwards)}"
            out.append(Reading(f"sysctl_{key}", f"sysctl {key} {scope}", value, fields, command))
    return out


def _stated_routes(node: str, book: AddressBook) -> set[str]:
    """The routes the prompt states for a host (its default or peer routes via its gateway)."""
    if node not in book.inv.hosts:
        return set()
    intf, _, switch = book.inv.hosts[node]
    gateway = book.inv.subnets[switch][1]
    targets = book.inv.restricted.get(switch, ["default"])
    return {f"{target} via {gateway} dev {intf}" for target in targets}


def read_objects(node: str, output: str, book: AddressBook) -> list[Reading]:
    """Every statement ``NODE_READ``'s ``output`` shows on ``node`` (see the module docstring).

    Args:
        node: The machine it ran on.
        output: What ``NODE_READ`` printed there.
        book: The prompt's inventory, for classes.
    """
    found = sections(output)
    return [
        *_links(node, found.get("link", []), book),
        *_addresses(node, found.get("addr", []), book),
        *_routes(node, found.get("route", []), book, _stated_routes(node, book)),
        *_rules(node, found.get("rule", []), book),
        *_filters(node, found.get("filter", []), book),
        *_qdiscs(node, found.get("qdisc", []), book),
        *_sysctls(node, found.get("sysctl", []), book),
    ]
