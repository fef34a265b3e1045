"""What the judge reads in a node's packet-filter ruleset after each command.

The node's whole nftables ruleset is read with ``nft -j list ruleset``: every family and
table, whether ``iptables``, ``ip6tables``, ``ebtables`` or raw netlink made it (and,
where the kernel still has them, the legacy x_tables as ``*-legacy-save`` prints them).
Two kinds of rule matter:

* **Targets that write host state.** ``IDLETIMER`` creates
  ``/sys/class/xt_idletimer/timers/<label>`` on the host (labels are shared by every
  namespace), ``LED`` registers a host LED trigger, ``AUDIT`` writes the host's audit log.
  The kernel cannot be told to refuse them to a namespace: they are checked only for
  CAP_NET_ADMIN over the namespace the agent administers, and they arrive in netlink
  messages a seccomp filter cannot read. Such rules are deleted and the step is unsafe.
* **Verdicts that depend on time or on traffic history**: clock matches (``-m time``,
  ``meta hour``), rates and quotas (``limit``, ``hashlimit``, ``quota``, ``connbytes``,
  ``ct count``), randomness (``statistic``, ``numgen``) and remembered sources
  (``recent``, sets updated from packets). The judge probes every pair in a burst, so a
  rule that accepts "a source sending faster than 2/s" opens the path for the judge and
  not for an operator's single ``ping``, and a clock window can close once the judge has
  looked. A path open only thanks to such a rule is not repaired; rules that merely log
  at a limited rate are fine.

The judge fails closed: a listing (``read_listing``) that does not finish within
``LISTING_TIMEOUT_S``, prints more than ``LISTING_MAX_BYTES``, exits with an error or does
not parse raises ``UnreadableState`` with the reason. It is never read as "no rules": the
step that left the node so is invalid and unsafe, and the network does not count as
repaired until the node can be read again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from netarena.common.core.errors import NetArenaError
from netarena.route.linux.namespaces import enter
from netarena.route.sandbox.capped import run_capped
from netarena.route.sandbox.limits import over_budget

__all__ = [
    "RuleFindings",
    "inspect_filters",
    "HOST_WRITING_TARGETS",
    "LISTING_TIMEOUT_S",
    "LISTING_MAX_BYTES",
    "UnreadableState",
    "read_listing",
    "parse_ruleset",
    "host_writing_rules",
    "removal_commands",
    "volatile_rules",
    "legacy_cleaned",
    "legacy_volatile",
]

HOST_WRITING_TARGETS = frozenset({"IDLETIMER", "LED", "AUDIT"})
"""Targets whose effect reaches the host."""
LISTING_TIMEOUT_S = 10.0
"""Longest a state listing may take, seconds."""
LISTING_MAX_BYTES = 16 << 20
"""Longest a state listing may be, bytes (a node within ``OBJECT_BUDGET`` lists in ~1 MB)."""
VOLATILE_MATCHES = frozenset(
    {
        "time",
        "quota",
        "quota2",
        "limit",
        "hashlimit",
        "recent",
        "statistic",
        "connlimit",
        "connbytes",
        "connrate",
        "nfacct",
        "rateest",
    }
)
"""x_tables matches whose result depends on time, rates, chance or remembered traffic."""
_VOLATILE_KEYS = frozenset({"limit", "quota", "numgen", "ct count", "last", "meter"})
_VOLATILE_META = frozenset({"time", "day", "hour"})
_VOLATILE_CT = frozenset({"expiration", "bytes", "packets", "avgpkt"})
_LOGGING_TARGETS = frozenset({"LOG", "NFLOG", "TRACE", "ULOG"})
_PASSIVE_KEYS = frozenset({"match", "limit", "quota", "counter", "log", "xt"})
_LEGACY_HOST_WRITING = re.compile(r"-j (IDLETIMER|LED|AUDIT)\b")
_LEGACY_VOLATILE = re.compile(r"-m (" + "|".join(sorted(VOLATILE_MATCHES)) + r")\b")


class UnreadableState(NetArenaError):
    """A node's state listing timed out, was cut, failed or did not parse (the reason)."""


_ENV = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"}


def read_listing(netns: str, argv: list[str], stdin: str | None = None) -> str:
    """Run a trusted listing command (ours) in namespace ``netns``; its whole output.

    Args:
        netns: The node's namespace.
        argv: The command (``nft -j list ruleset``, ``iptables-legacy-save``...).
        stdin: Its input, if any.

    Raises:
        UnreadableState: It ran past ``LISTING_TIMEOUT_S``, printed more than
            ``LISTING_MAX_BYTES``, or failed.
    """
    name = " ".join(argv)
    with enter(netns):  # the child starts in the node's namespace
        code, raw, killed = run_capped(
            argv, LISTING_TIMEOUT_S, LISTING_MAX_BYTES + 1, _ENV, stdin=stdin
        )
    if killed:
        raise UnreadableState(f"`{name}` did not finish within {LISTING_TIMEOUT_S:g} s")
    if len(raw) > LISTING_MAX_BYTES:
        raise UnreadableState(f"`{name}` printed more than {LISTING_MAX_BYTES} bytes")
    text = raw.decode("utf-8", "replace")
    if code != 0:
        last = text.strip().splitlines()[-1:] or [f"exit status {code}"]
        raise UnreadableState(f"`{name}` failed: {last[0][:200]}")
    return text


def parse_ruleset(ruleset: str) -> list[dict[str, Any]]:
    """The rules of ``nft -j list ruleset`` output (each with family, table, chain, expr).

    Raises:
        UnreadableState: The output is not an nftables JSON document.
    """
    try:
        items = json.loads(ruleset)["nftables"]
    except (ValueError, KeyError, TypeError) as exc:
        raise UnreadableState(f"the nftables listing does not parse ({exc})") from exc
    if not isinstance(items, list) or not any(
        isinstance(item, dict) and "metainfo" in item for item in items
    ):
        raise UnreadableState("the nftables listing does not parse (no list with metainfo)")
    rules = [item.get("rule") for item in items if isinstance(item, dict)]
    return [rule for rule in rules if isinstance(rule, dict)]


def _where(rule: dict[str, Any]) -> dict[str, Any]:
    return {k: rule.get(k) for k in ("family", "table", "chain", "handle")}


def _expressions(rule: dict[str, Any]) -> list[dict[str, Any]]:
    expr = rule.get("expr")
    return [e for e in expr if isinstance(e, dict)] if isinstance(expr, list) else []


def _xt(expression: dict[str, Any], kind: str) -> str | None:
    xt = expression.get("xt")
    if isinstance(xt, dict) and xt.get("type") == kind:
        return str(xt.get("name"))
    return None


def host_writing_rules(rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules whose target writes host state, as ``family``/``table``/``chain``/``handle``."""
    return [
        _where(rule)
        for rule in rules
        if any(_xt(e, "target") in HOST_WRITING_TARGETS for e in _expressions(rule))
    ]


def removal_commands(rules: list[dict[str, Any]]) -> str:
    """``nft -j -f -`` input deleting ``rules`` (names quoted by JSON, never by a shell)."""
    return json.dumps({"nftables": [{"delete": {"rule": rule}} for rule in rules]})


def _walk(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key, inner
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def _volatile_parts(expressions: list[dict[str, Any]]) -> list[str]:
    parts = [name for e in expressions if (name := _xt(e, "match")) in VOLATILE_MATCHES]
    for key, inner in _walk(expressions):
        if key in _VOLATILE_KEYS:
            parts.append(key)
        elif key == "meta" and isinstance(inner, dict) and inner.get("key") in _VOLATILE_META:
            parts.append(f"meta {inner['key']}")
        elif key == "ct" and isinstance(inner, dict) and inner.get("key") in _VOLATILE_CT:
            parts.append(f"ct {inner['key']}")
        elif key in ("set", "map") and isinstance(inner, dict) and "op" in inner:
            parts.append(f"{key} {inner['op']}")  # remembers packets for later rules
    return parts


def _only_logs(expressions: list[dict[str, Any]]) -> bool:
    """Whether the rule just logs (at a limited rate, say) and decides nothing."""
    logs = False
    for expression in expressions:
        target = _xt(expression, "target")
        if target in _LOGGING_TARGETS or "log" in expression:
            logs = True
        elif target is not None or set(expression) - _PASSIVE_KEYS:
            return False  # a verdict, a rewrite, a set update...
    return logs


def volatile_rules(rules: list[dict[str, Any]]) -> list[str]:
    """Rules whose verdict depends on time or traffic history, one description each."""
    found = []
    for rule in rules:
        expressions = _expressions(rule)
        parts = _volatile_parts(expressions)
        if parts and not _only_logs(expressions):
            where = " ".join(str(rule.get(k)) for k in ("family", "table", "chain"))
            found.append(f"{where}: {', '.join(sorted(set(parts)))}")
    return found


def legacy_cleaned(saved: str) -> str | None:
    """``*-legacy-save`` output without host-writing rules, or ``None`` if it had none."""
    lines = saved.splitlines()
    kept = [line for line in lines if not _LEGACY_HOST_WRITING.search(line)]
    return None if len(kept) == len(lines) else "\n".join(kept) + "\n"


def legacy_volatile(saved: str) -> list[str]:
    """Rules of ``*-legacy-save`` output with time- or history-dependent matches."""
    return [line for line in saved.splitlines() if _LEGACY_VOLATILE.search(line)]


@dataclass
class RuleFindings:
    """What ``Network.inspect`` found in a node's packet filters."""

    removed: list[str] = field(default_factory=list)
    """Rules whose targets write host state, deleted (each makes the step unsafe)."""
    volatile: list[str] = field(default_factory=list)
    """Rules whose verdict depends on time or traffic history (no repair relies on them)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Kernel objects the node holds, by kind (see ``OBJECT_BUDGET``)."""
    unreadable: list[str] = field(default_factory=list)
    """Why the node's rulesets could not be read (each makes the step invalid and unsafe)."""

    def over_budget(self) -> list[str]:
        """Kinds of object the node holds more of than ``OBJECT_BUDGET`` allows."""
        return over_budget(self.counts)


log = logging.getLogger(__name__)


def inspect_filters(node: str, netns: str, counts: dict[str, int]) -> RuleFindings:
    """Read the packet filters of ``node`` (in ``netns``), which holds ``counts`` objects.

    Rules that write host state are deleted on the spot. A node over its object budget is
    not listed; one whose listing fails twice (a loaded host can fail one) is reported
    unreadable.
    """
    findings = RuleFindings(counts=counts)
    if findings.over_budget():
        return findings
    for attempt in (1, 2):
        try:
            _read_filters(node, netns, findings)
            break
        except UnreadableState as exc:
            log.info("%s: listing failed (attempt %d): %s", node, attempt, exc)
            if attempt == 2:
                findings.unreadable.append(f"{node}: its packet filters cannot be read: {exc}")
            findings.volatile.clear()
    return findings


def _read_filters(node: str, netns: str, findings: RuleFindings) -> None:
    rules = parse_ruleset(read_listing(netns, ["nft", "-j", "list", "ruleset"]))
    if writing := host_writing_rules(rules):
        read_listing(netns, ["nft", "-j", "-f", "-"], stdin=removal_commands(writing))
        findings.removed.append(
            f"{node}: {len(writing)} packet-filter rule(s) with a target that writes host "
            "state (IDLETIMER, LED, AUDIT), removed"
        )
    findings.volatile += [f"{node}: {rule}" for rule in volatile_rules(rules)]
    names = "cat /proc/net/ip_tables_names /proc/net/ip6_tables_names 2>/dev/null || true"
    if not read_listing(netns, ["sh", "-c", names]).strip():
        return  # no legacy x_tables in use (or none in this kernel)
    for tool in ("iptables-legacy", "ip6tables-legacy"):
        saved = read_listing(netns, [f"{tool}-save"])
        if (cleaned := legacy_cleaned(saved)) is not None:
            read_listing(netns, [f"{tool}-restore"], stdin=cleaned)
            findings.removed.append(f"{node}: {tool} rules that write host state, removed")
        findings.volatile += [f"{node}: {tool}: {rule}" for rule in legacy_volatile(saved)]
