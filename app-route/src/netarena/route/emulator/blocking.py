"""Configuration that stops traffic, drawn one way for faults and for the design's own blocks.

A healthy network here also blocks traffic on purpose (a host out of service, a subnet cut
off, two subnets kept apart, a quarantined range: ``intent.Block``), and it does so with the
very objects faults are made of: DROP and REJECT rules, refusing policy rules, interfaces
down or at a tiny MTU, empty queues, routes to nowhere, forwarding switched off, odd
addresses. Both sides draw every parameter here (verdicts, REJECT types, comments,
positions in the chain, policy-rule priorities and actions, MTUs, queue kinds, metrics), so
no value, comment, priority or position tells a fault from a legitimate object: only its
effect on flows that must work does.

A drawn object is a JSON-able record (``Record``: ``method``, ``node``, ``intf`` and the
method's parameters) and ``commands`` renders it as the commands that create it.
"""

from __future__ import annotations

import random
import shlex
from typing import Any

from netarena.route.emulator.plan import ROUTER, NetworkPlan

__all__ = [
    "Record",
    "COMMENTS",
    "commands",
    "draw_comment",
    "METRICS",
    "draw_metric",
    "draw_metrics",
    "draw_mtu",
    "draw_port_span",
    "span_words",
    "draw_pref",
    "draw_queue",
    "draw_refusal",
    "draw_rule",
    "chain_rule",
    "refusing_everything",
]

Record = dict[str, Any]

COMMENTS = ("quarantine", "ticket 4411", "legacy", "vendor access", "temporary", "audit",
            "backup window", "monitoring", "change 2291", "migration")
"""Rule comments, for faults, the design's blocks and its other rules alike."""
_APPENDED = 0.25
"""Share of drawn rules appended at their chain's end (``draw_rule``)."""
_REJECTS = ("icmp-port-unreachable", "icmp-admin-prohibited", "icmp-host-prohibited",
            "icmp-net-unreachable")


def draw_comment(rng: random.Random) -> str | None:
    """A rule's comment, or none (most rules have none)."""
    return rng.choice(COMMENTS) if rng.random() < 0.35 else None


_SPANS = (1, 1, 10, 20, 50, 100)
"""Widths of the ports a service's ACL names: its port alone, or a block of ports around it."""


def draw_port_span(rng: random.Random, port: int,
                   avoid: set[int] | None = None) -> tuple[int, int]:
    """The ports a service's ACL names: ``(port, port)`` alone, or a block holding it.

    The block holds none of ``avoid`` (ports other services use) or is dropped for the
    port alone. The design's ACLs and faults' draw here alike: a fault's block holds the
    machines' TCP service, the design's never does.
    """
    width = rng.choice(_SPANS)
    low = port - rng.randrange(width)
    high = low + width - 1
    if width == 1 or any(low <= p <= high for p in avoid or ()):
        return port, port
    return low, high


def span_words(span: tuple[int, int]) -> str:
    """What ``iptables --dport`` names for ``span``: ``P``, or the block ``A:B``."""
    low, high = span
    return str(low) if low == high else f"{low}:{high}"


def draw_pref(rng: random.Random) -> int:
    """A policy rule's priority, log-uniform over 10..32000."""
    return int(10 ** rng.uniform(1.0, 4.5))


def draw_policy_to(rng: random.Random, plan: NetworkPlan, net: str) -> str | None:
    """Where a policy rule from one source sends traffic to a table routing ``net``.

    All the source's traffic (``None``), its traffic to ``net``'s whole subnet, or to ``net``
    itself: the design's rules and faults' draw alike.
    """
    draw, whole = rng.random(), plan.subnet_of_ip(net.split("/")[0])
    return None if draw < 0.3 else whole.network if draw < 0.55 and whole else net


def draw_refusal(rng: random.Random) -> str:
    """How a refusing policy rule or route refuses."""
    return rng.choices(("prohibit", "unreachable", "blackhole"), weights=(2, 1, 1))[0]


def draw_mtu(rng: random.Random) -> int:
    """An MTU too small for an 84-byte ping (Linux accepts 68 and up)."""
    return rng.randint(68, 83)


def draw_queue(rng: random.Random) -> str:
    """A root queue that passes no packet: an empty FIFO, or a shaper with a tiny burst.

    The shaper's burst was given without its unit (bytes: smaller than any frame, so every
    frame is dropped; ``tc`` shows it rounded, often ``0b``). The design's own shapers
    (``undisclosed.py``) are token buckets too: a queue that passed nothing was always an
    empty FIFO, and every shaper was the design's.
    """
    if rng.random() < 0.4:
        rate = rng.choice((100, 200, 500, 1000))
        return f"tbf rate {rate}mbit burst {rng.choice((32, 40, 48))} latency 50ms"
    return rng.choice(("pfifo limit 0", "bfifo limit 0"))


METRICS = (5, 10, 20, 50, 100, 150, 200, 300, 500, 1000)
"""The route metrics the design's routes and faults' take."""


def draw_metric(rng: random.Random) -> int:
    """A route's metric: none (0) four times in ten, else one of ``METRICS``."""
    return 0 if rng.random() < 0.4 else rng.choice(METRICS)


def draw_metrics(rng: random.Random) -> tuple[int, int]:
    """Two distinct route metrics, the lower first."""
    low, high = sorted(rng.sample(METRICS, 2))
    return low, high


def draw_rule(rng: random.Random, chain: str, match: list[str], proto: str | None = None
              ) -> Record:
    """A blocking filter rule on ``chain`` with ``match``: verdict, comment and position.

    The position is a fraction of the chain above the rule, drawn uniformly, so a rule of
    the design and a fault's, added later, end up anywhere in their chains alike; or, one
    time in four (``_APPENDED``), the chain's end, where the design's own rules, appended
    in turn, often end up (38% of its blocking rules against 17% of faults' when every
    rule was inserted: the audit's filter tell).
    """
    verdict = ["DROP"]
    if rng.random() < 0.45:
        kinds = (*_REJECTS, "tcp-reset") if proto == "tcp" else _REJECTS
        verdict = ["REJECT", "--reject-with", rng.choice(kinds)]
    return {
        "chain": chain,
        "match": match,
        "verdict": verdict,
        "comment": draw_comment(rng),
        "at": _draw_position(rng),
    }


def refusing_everything(rng: random.Random, rule: Record) -> list[Record]:
    """A host's INPUT refusing every protocol: ``rule`` alone, or one rule per protocol.

    Operators write it either way, half the time each; a fault refusing a host and the
    design's host out of service draw it here alike (one rule per host was faults' alone).
    """
    rule = {**rule, "chain": "INPUT", "match": []}
    if rng.random() < 0.5:
        return [rule]
    return [{**rule, "match": ["-p", proto], "verdict": rng.choice(
        (["DROP"], ["REJECT", "--reject-with", "icmp-port-unreachable"]))}
        for proto in ("icmp", "tcp", "udp")]


def _draw_position(rng: random.Random) -> float | None:
    """``None`` (append) one time in ``1 / _APPENDED``, else a uniform fraction (one draw)."""
    u = rng.random()
    return None if u < _APPENDED else round((u - _APPENDED) / (1 - _APPENDED), 3)


def chain_rule(rule: Record) -> str:
    """A shell command adding ``rule`` at ``at``: a fraction, ``first`` or ``None`` (append).

    The fraction counts only the rules below the chain's stateful shortcut (its first
    ``ESTABLISHED`` accept), as an operator inserts into a stateful firewall and as the
    design's own blocks there always sit; counted over the whole chain, faults went above
    it where the design's never do (docs/validity.md, eighth round).
    """
    chain = rule["chain"]
    body = [*rule["match"]]
    if rule.get("comment"):
        body += ["-m", "comment", "--comment", rule["comment"]]
    body += ["-j", *rule["verdict"]]
    text = " ".join(shlex.quote(w) for w in body)
    if rule.get("at") is None:
        return f"iptables -A {chain} {text}"
    if rule["at"] == "first":  # above everything, as a service's ACL is inserted
        return f"iptables -I {chain} 1 {text}"
    below = ("awk '/^-A /{n++; if (!h && /ESTABLISHED/ && /-j ACCEPT/) h=n} "
             f"END{{print h + int((n - h) * {int(rule['at'] * 1000)} / 1000) + 1}}'")
    return f"iptables -I {chain} $(iptables -S {chain} | {below}) {text}"


def _address(record: Record, plan: NetworkPlan) -> list[list[str]]:
    node, intf, method = record["node"], record["intf"], record["method"]
    subnet = plan.subnet(record["subnet"])
    own = subnet.gateway if node == ROUTER else plan.host(node).ip
    steps = []
    if not record.get("keep_own"):
        steps.append(["ip", "addr", "del", f"{own}/{subnet.prefixlen}", "dev", intf])
    if method == "wrong_prefix":
        steps.append(["ip", "addr", "add", f"{own}/{record['value']}", "brd", "+", "dev", intf])
    else:
        steps.append(["ip", "addr", "add", f"{record['value']}/{record.get('prefix', 32)}",
                      "dev", intf])
    steps += [["ip", "route", "add", *r.split()] for r in record.get("routes", ())]
    return steps


def _route(record: Record, plan: NetworkPlan) -> list[list[str]]:
    subnet = plan.subnet(record["subnet"])
    dst = record.get("dst", subnet.network)
    steps: list[list[str]] = []
    if record.get("replace", dst == subnet.network):
        steps.append(["ip", "route", "del", subnet.network, "dev", subnet.router_intf])
    tail = ["metric", str(record["metric"])] if record.get("metric") else []
    if table := record.get("table"):  # the route in a table a policy rule sends traffic to
        source = ["from", record["from"]] if record.get("from") else []
        to = ["to", record["to"]] if record.get("to") else []
        steps.append(["ip", "rule", "add", *source, *to, "lookup", str(table),
                      "pref", str(record["pref"])])
        tail += ["table", str(table)]
    method = record["method"]
    if method == "metric_loses":
        right = ["metric", str(record["right_metric"])]
        steps.append(["ip", "route", "add", dst, "dev", subnet.router_intf, *right])
    if method in ("wrong_interface", "metric_loses"):
        steps.append(["ip", "route", "add", dst, "dev", record["out"], *tail])
    elif method == "refusing_route":
        steps.append(["ip", "route", "add", record["refusal"], dst, *tail])
    else:  # unreachable_gateway, loop: a gateway that drops or bounces the traffic back
        steps.append(["ip", "route", "add", dst, "via", record["value"], *tail])
    return steps


def commands(record: Record, plan: NetworkPlan) -> list[tuple[str, list[str]]]:
    """The ``(node, argv)`` commands that create ``record`` (run by us, never by the agent).

    Raises:
        ValueError: An unknown method.
    """
    node, method = str(record["node"]), str(record["method"])
    intf = str(record.get("intf"))
    if method in ("ip_forward_off", "forwarding_on"):
        value = "0" if method == "ip_forward_off" else "1"
        key = f"net.ipv4.conf.{intf}.forwarding" if record.get("intf") else "net.ipv4.ip_forward"
        return [(node, ["sysctl", "-qw", f"{key}={value}"])]
    if method == "forward_policy_drop":
        return [(node, ["iptables", "-P", record["chain"], "DROP"])]
    if "rules" in record:
        return [(node, ["bash", "-c", chain_rule(rule)]) for rule in record["rules"]]
    if method == "rule_prohibit":
        pref = str(record["pref"])
        return [(node, ["ip", "rule", "add", *record["selector"], record["refusal"],
                        "pref", pref])]
    if method in ("ifconfig_down", "link_down"):
        down = ["ifconfig", intf, "down"] if method == "ifconfig_down" else [
            "ip", "link", "set", intf, "down"]
        return [(node, down)]
    if method == "mtu_too_small":
        return [(node, ["ip", "link", "set", intf, "mtu", str(record["mtu"])])]
    if method == "flush":
        return [(node, ["ip", "addr", "flush", "dev", intf])]
    if method == "tc_zero_queue":
        queue = str(record["queue"]).split()
        return [(node, ["tc", "qdisc", "replace", "dev", intf, "root", *queue])]
    if method in ("wrong_ip", "wrong_prefix", "duplicate_ip"):
        return [(node, argv) for argv in _address(record, plan)]
    if method == "unreachable_gateway" and node != ROUTER:  # a host's route to a dead gateway
        metric = ["metric", str(record["metric"])] if record.get("metric") else []
        return [(node, ["ip", "route", "replace", record.get("route", "default"), "via",
                        record["value"], *metric])]
    if method in ("wrong_interface", "unreachable_gateway", "metric_loses", "loop",
                  "refusing_route"):
        steps = [(ROUTER, argv) for argv in _route(record, plan)]
        if record.get("forwarding_host"):
            steps.insert(0, (record["forwarding_host"], ["sysctl", "-qw", "net.ipv4.ip_forward=1"]))
        return steps
    raise ValueError(f"unknown method {method!r}")
