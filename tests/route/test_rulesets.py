"""Reading a node's ruleset (no root needed): host-writing targets, volatile verdicts."""

from __future__ import annotations

import json

import pytest

from netarena.route.emulator.rulesets import (
    UnreadableState,
    host_writing_rules,
    legacy_cleaned,
    legacy_volatile,
    parse_ruleset,
    removal_commands,
    volatile_rules,
)


def _rule(family: str, table: str, handle: int, *expr: dict) -> dict:
    where = {"family": family, "table": table, "chain": "c d", "handle": handle}
    return {"rule": {**where, "expr": list(expr)}}


def _ruleset(*rules: dict) -> str:
    return json.dumps({"nftables": [{"metainfo": {"version": "1.0.6"}}, *rules]})


COUNTER = {"counter": {"packets": 0, "bytes": 0}}
ACCEPT = {"accept": None}


def test_rules_with_host_writing_targets_are_found_in_every_family_and_table() -> None:
    idle = {"xt": {"type": "target", "name": "IDLETIMER"}}
    rules = parse_ruleset(_ruleset(
        _rule("ip6", "filter", 2, COUNTER, idle),
        _rule("ip", "my table", 7, {"xt": {"type": "target", "name": "AUDIT"}}),
        _rule("ip", "filter", 3, {"xt": {"type": "match", "name": "IDLETIMER"}}, {"drop": None}),
        _rule("bridge", "filter", 4, {"xt": {"type": "target", "name": "TEE"}}),
    ))
    found = host_writing_rules(rules)
    assert found == [
        {"family": "ip6", "table": "filter", "chain": "c d", "handle": 2},
        {"family": "ip", "table": "my table", "chain": "c d", "handle": 7},
    ]
    assert json.loads(removal_commands(found))["nftables"][1] == {"delete": {"rule": found[1]}}



def test_verdicts_that_depend_on_time_or_history_are_found() -> None:
    hour = {"match": {"op": "==", "left": {"meta": {"key": "hour"}}, "right": "10:00"}}
    numgen = {"match": {"op": "==", "left": {"numgen": {"mode": "random", "mod": 2}}, "right": 0}}
    update = {"set": {"op": "update", "elem": {"payload": {"field": "saddr"}}, "set": "@s"}}
    rules = parse_ruleset(_ruleset(
        _rule("ip", "filter", 1, {"xt": {"type": "match", "name": "hashlimit"}}, COUNTER, ACCEPT),
        _rule("inet", "t", 2, hour, ACCEPT),
        _rule("inet", "t", 3, numgen, {"drop": None}),
        _rule("inet", "t", 4, update),
        _rule("ip", "filter", 5, {"limit": {"rate": 5}}, {"xt": {"type": "target", "name": "LOG"}}),
        _rule("ip", "filter", 6, {"xt": {"type": "match", "name": "conntrack"}}, ACCEPT),
        _rule("inet", "t", 7, {"match": {"left": {"payload": {"field": "saddr"}},
                                         "right": {"set": ["10.0.0.1"]}}}, ACCEPT),
        _rule("inet", "t", 8, {"limit": {"rate": 5}}, {"log": {"prefix": "x"}}, ACCEPT),
    ))
    assert volatile_rules(rules) == [
        "ip filter c d: hashlimit",
        "inet t c d: meta hour",
        "inet t c d: numgen",
        "inet t c d: set update",
        "inet t c d: limit",
    ]


def test_legacy_tables_are_read_too() -> None:
    saved = "*filter\n:OUTPUT ACCEPT [0:0]\n-A OUTPUT -j IDLETIMER --timeout 5 --label x\nCOMMIT\n"
    assert legacy_cleaned(saved) == "*filter\n:OUTPUT ACCEPT [0:0]\nCOMMIT\n"
    assert legacy_cleaned("*filter\nCOMMIT\n") is None
    assert legacy_volatile("-A FORWARD -m time --timestart 10:00 -j ACCEPT\n-A INPUT -j DROP")


@pytest.mark.parametrize(
    "listing",
    ["", "not json", "[]", '{"nftables": {}}', '{"nftables": []}', '{"nftables": [{"rule"',
     '{"other": [{"metainfo": {}}]}'],
)
def test_a_listing_that_does_not_parse_is_unreadable_never_empty(listing: str) -> None:
    with pytest.raises(UnreadableState, match="does not parse"):
        parse_ruleset(listing)
    assert parse_ruleset(_ruleset()) == []  # a real empty ruleset carries its metainfo
