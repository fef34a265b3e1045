"""Faults' filter rules in the forms the design's own refusals take.

A fault's rules are drawn as the design's blocks' are (``targets.draw_record``), then set
in the forms an operator's refusals take where the design holds them: a host's refusal of
everything appended as a firewall's final rule or beside the ping and UDP drops an
out-of-service host's comes with, a router's refusal answered as its management rule is,
a subnet's filter written toward it. Each form's share is measured against the design's
(the static audit's ``filter_block``).
"""

from __future__ import annotations

import random
from typing import Any

from netarena.route.emulator.plan import ROUTER, NetworkPlan
from netarena.route.emulator.targets import Target, draw_record
from netarena.route.emulator.twins import REPEATS

__all__ = ["Fault", "as_the_designs", "toward", "with_drops_beside"]

Fault = dict[str, Any]
"""A fault's JSON-able record (``faults.sample_fault``)."""
_PROHIBITED = ["REJECT", "--reject-with", "icmp-admin-prohibited"]


_ADMIN = 0.5
"""Share of faults' router ``REJECT`` rules answering ``icmp-port-unreachable`` that answer
``icmp-admin-prohibited`` instead, as the design's router refusals mostly do (its
management rule, ``intent.router_rules``): a pair of subnets refused with a port
unreachable was 4.4% of faults' blocking rules, 0.8% of the design's; with
``icmp-admin-prohibited``, 0.4% against 2.7%."""


_FINAL = 0.6
"""Share of a host's refusal of everything in one rule appended as its firewall's final
rule, as the design's guarded hosts refuse (``intent.host_rules``; the rule an operator
finishing a staged allow-list adds). Drawn at any place, faults' host rules after an
allow-list were 2% of their blocking rules against 15% of the design's."""


def as_the_designs(rng: random.Random, fault: Fault, firewalled: bool) -> Fault:
    """``fault``'s rules in the forms the design's refusals take (``_FINAL`` etc.).

    On a ``firewalled`` host, a refusal of everything is one rule, appended as a guarded
    host's final rule: the design refuses nothing else inside a firewall. On another host
    it stays as ``blocking.refusing_everything`` drew it (one rule, or one per protocol), as an
    out-of-service host's: merging half the rules per protocol back into one made a lone
    rule refusing everything 17.5% of faults' blocking rules on hosts, against 4.8% of the
    design's, and a host's ICMP or UDP rule 15% against 33% (1,200 static instances,
    seed 61; a merge was kept while faults' refusals sat inside firewalls too).
    """
    rules = fault["rules"]
    if firewalled and len(rules) == 3 and all(r["match"][:1] == ["-p"] for r in rules):
        rules = [{**rules[0], "match": []}]
    if fault["node"] != ROUTER and [r["match"] for r in rules] == [[]] and (
            firewalled or rng.random() < _FINAL):
        rules = [{**rules[0], "at": None}]
    port = ["REJECT", "--reject-with", "icmp-port-unreachable"]
    return {**fault, "rules": [
        {**r, "verdict": _PROHIBITED}
        if fault["node"] == ROUTER and r["verdict"] == port and rng.random() < _ADMIN else r
        for r in rules]}


_INBOUND = 0.75
"""Share of a subnet's filter faults on the router written as the design refuses traffic
toward its management subnet: one rule for what enters the subnet, ``-d S`` or, half the
time when it refuses every protocol (as the management rule does), ``! -s S -d S``. Drawn
as the design's blocks (both directions), faults' rules named a subnet as their destination
alone 3% of the time against the design's 10%, and never took the ``! -s S -d S`` form, 4%
of the design's (audit, seed 21); at a third, 1.1% against 3.4% (1,200 static instances,
seed 61)."""


def toward(rng: random.Random, net: str, fault: Fault) -> Fault:
    """``fault`` keeping only its rules into ``net`` on FORWARD, ``_INBOUND`` of the time."""
    def side(rule: dict[str, Any]) -> str | None:  # "-s" or "-d" for a FORWARD rule on net
        m = rule["match"]
        return m[0] if rule["chain"] == "FORWARD" and m[1:2] == [net] else None

    if rng.random() >= _INBOUND or not any(side(r) == "-d" for r in fault["rules"]):
        return fault
    lead = ["!", "-s", net] if rng.random() < 1 / 2 else []
    return {**fault, "rules": [
        {**r, "match": (lead if "-p" not in r["match"] else []) + r["match"],
         "verdict": _refusal(r["verdict"])}
        if side(r) == "-d" else r
        for r in fault["rules"] if side(r) != "-s"]}


def _refusal(verdict: list[str]) -> list[str]:
    """The design's verdict into a subnet (its management rule's): dropped, or prohibited."""
    return verdict if verdict[0] == "DROP" else _PROHIBITED


_DROPS = tuple((m, share) for m, share in REPEATS["host_off"] if m in ("icmp_drop", "udp_reject"))
"""The one-protocol drops an out-of-service host's block repeats, with the chance of each."""


def with_drops_beside(rng: random.Random, plan: NetworkPlan, target: Target, fault: Fault,
                      ports: tuple[int, int]) -> Fault:
    """A host's refusal of everything with the ping and UDP drops beside it, now and then.

    The design's out-of-service host repeats them (``twins.REPEATS``), so its refusals sit
    in chains of two to five rules, while a fault's sat alone: one rule, or one per
    protocol (a host's INPUT of two rules was 5.1% of the design's blocking rules and 0.2%
    of faults'; of one rule 8.8% against 12.6%; 1,200 static instances, seed 61). Drawn
    with the design's chances; a drop that lands on the router is left out.
    """
    rules = list(fault["rules"])
    for method, share in _DROPS:
        if rng.random() < share:
            drop = draw_record(rng, plan, target, method, ports)
            if drop["node"] == fault["node"]:
                rules += drop["rules"]
    return {**fault, "rules": rules}
