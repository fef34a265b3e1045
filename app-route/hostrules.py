"""Packet-filter rules that make the kernel write host state: found after each command, removed.

Three targets act outside the namespace that holds the rule: ``IDLETIMER`` creates
``/sys/class/xt_idletimer/timers/<label>`` on the host (and sends uevents; its labels are
shared by every namespace), ``LED`` registers a host LED trigger, ``AUDIT`` writes the
host's audit log. The kernel cannot be told to refuse them to a namespace: they are
checked only for CAP_NET_ADMIN over the namespace the agent administers, and they arrive
in netlink messages or ``setsockopt`` buffers that a seccomp filter cannot read. The deny
list in ``actions.py`` stops the plain spelling; this module finds every other one in the
node's state: its whole nftables ruleset (``nft -j list ruleset``: every family and table,
whether ``iptables``, ``ip6tables``, ``ebtables`` or raw netlink made it) and, where the
kernel still has them, the legacy x_tables.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["HOST_WRITING_TARGETS", "host_writing_rules", "removal_commands", "legacy_cleaned"]

HOST_WRITING_TARGETS = frozenset({"IDLETIMER", "LED", "AUDIT"})
"""Targets whose effect reaches the host."""
_LEGACY_RULE = re.compile(r"-j (IDLETIMER|LED|AUDIT)\b")


def _targets(expressions: Any) -> set[str]:
    found = set()
    for expression in expressions if isinstance(expressions, list) else []:
        xt = expression.get("xt") if isinstance(expression, dict) else None
        if isinstance(xt, dict) and xt.get("type") == "target":
            found.add(str(xt.get("name")))
    return found


def host_writing_rules(ruleset: str) -> list[dict[str, Any]]:
    """The rules of ``nft -j list ruleset`` output whose target writes host state.

    Returns:
        Each rule's ``family``, ``table``, ``chain`` and ``handle`` (what deletes it).
    """
    try:
        items = json.loads(ruleset).get("nftables", [])
    except (ValueError, AttributeError):
        return []
    found = []
    for item in items:
        rule = item.get("rule") if isinstance(item, dict) else None
        if isinstance(rule, dict) and _targets(rule.get("expr")) & HOST_WRITING_TARGETS:
            found.append({k: rule.get(k) for k in ("family", "table", "chain", "handle")})
    return found


def removal_commands(rules: list[dict[str, Any]]) -> str:
    """``nft -j -f -`` input deleting ``rules`` (names quoted by JSON, never by a shell)."""
    return json.dumps({"nftables": [{"delete": {"rule": rule}} for rule in rules]})


def legacy_cleaned(saved: str) -> str | None:
    """``*-legacy-save`` output without host-writing rules, or ``None`` if it had none."""
    lines = saved.splitlines()
    kept = [line for line in lines if not _LEGACY_RULE.search(line)]
    return None if len(kept) == len(lines) else "\n".join(kept) + "\n"
