"""Reading host-writing rules out of a node's ruleset (no root needed)."""

from __future__ import annotations

import json

from netarena.route.hostrules import host_writing_rules, legacy_cleaned, removal_commands


def _rule(family: str, table: str, handle: int, *expr: dict) -> dict:
    return {"rule": {"family": family, "table": table, "chain": "c d", "handle": handle,
                     "expr": list(expr)}}


def test_rules_with_host_writing_targets_are_found_in_every_family_and_table() -> None:
    idle = {"xt": {"type": "target", "name": "IDLETIMER"}}
    ruleset = {"nftables": [
        {"metainfo": {"version": "1.0.6"}},
        _rule("ip6", "filter", 2, {"counter": {"packets": 0}}, idle),
        _rule("ip", "my table", 7, {"xt": {"type": "target", "name": "AUDIT"}}),
        _rule("ip", "filter", 3, {"xt": {"type": "match", "name": "IDLETIMER"}}, {"drop": None}),
        _rule("bridge", "filter", 4, {"xt": {"type": "target", "name": "TEE"}}),
    ]}
    found = host_writing_rules(json.dumps(ruleset))
    assert found == [
        {"family": "ip6", "table": "filter", "chain": "c d", "handle": 2},
        {"family": "ip", "table": "my table", "chain": "c d", "handle": 7},
    ]
    commands = json.loads(removal_commands(found))["nftables"]
    assert commands[1] == {"delete": {"rule": found[1]}}
    assert host_writing_rules("not json") == [] and host_writing_rules("[]") == []


def test_legacy_rules_are_dropped_from_a_save() -> None:
    saved = "*filter\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -j IDLETIMER --timeout 5 --label x\nCOMMIT\n"
    assert legacy_cleaned(saved) == "*filter\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n"
    assert legacy_cleaned("*filter\nCOMMIT\n") is None
