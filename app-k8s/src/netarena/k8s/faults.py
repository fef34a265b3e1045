"""NetworkPolicy faults: five types, each with several methods chosen by the seed.

A fault rewrites the ``spec`` of one policy. Injection is pure (a ``random.Random`` and
the current policies in, a fault record out) and verified: a candidate that does not do
what its type says (an allowed connection lost for RI and AE, a refused one admitted for
AI, any change of the connectivity for CP and CPR) is discarded and another one is drawn.

No fault has a shape of its own: every value a fault writes is drawn from the design's own
values (``DesignPools``: the peers, rules, port entries, protocols and label values the healthy
policies, workloads and namespaces of this cluster carry), and the design holds entries of
every shape a fault leaves (``design``). A retargeted selector names labels real workloads
or teams carry, a changed port is one another rule uses, an added peer or rule is a copy
of one the design has elsewhere, a locked-down egress is one the design also locks down.

| code | type | what it breaks |
|---|---|---|
| RI | remove_ingress | an allowed caller loses access (peer, rule, entry removed; retargeted; |
| | | the default deny given the Ingress type) |
| AI | add_ingress | a caller that must stay out gets in (a design peer or rule copied in, a |
| | | peer widened or retargeted, a locked egress opened) |
| CP | change_port | an entry's port becomes another port the design uses |
| CPR | change_protocol | an entry's protocol becomes another one the design uses |
| AE | add_egress | a service's egress is locked down (as the design locks others) or loses a rule |
| | | (or the default deny is given the Egress type) |
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from netarena.common.core.errors import UnfitSeed
from netarena.k8s.design import port_entry, port_pool_of
from netarena.k8s.fault_rewrites import Candidate, Policy, default_deny, lock, open_rule, unlock
from netarena.k8s.fault_spots import (
    Where,
    callee_pairs,
    design_like,
    design_pools,
    dns_rule_unlike_design,
    keep_odds,
    look_of,
    names_peer,
    peer_form,
    pick_spot,
    removable,
    rules_unlike_design,
    side_of,
    sized_like_design,
    spots_of,
    target_of,
)
from netarena.k8s.judge import apply_faults, judge
from netarena.k8s.model import AppModel
from netarena.k8s.model_objects import model_namespaces, model_pods
from netarena.k8s.reachability import PROTOCOLS

__all__ = ["FAULT_TYPES", "inject_fault", "apply_faults", "model_pods", "model_namespaces"]

FAULT_TYPES = {
    "RI": "remove_ingress",
    "AI": "add_ingress",
    "CP": "change_port",
    "CPR": "change_protocol",
    "AE": "add_egress",
}
"""Fault code → fault type."""

_MAX_TRIES = 60
_SHAPED_TRIES = 45
"""Tries that must keep egress rules in the design's shapes (a small design may not)."""
_COPY_PORT = 0.8
"""Share of changed ports copied from a design entry of the direction (else drawn afresh)."""
_FIXED_DIRECTION = {"RI": "ingress", "AE": "egress"}  # the types that fix their direction
_EGRESS_SHARE = 0.1
"""Share of AI, CP and CPR faults made at a caller's egress rather than a callee's ingress.

AE's faults all sit in egress (its type) and RI's in ingress; the other types lean to
ingress so that faulted rules, peers and ports sit in egress about as often as the
design's do (a quarter to a third), and a fault's direction tells nothing
(``netarena audit k8s``)."""


def _remove_ingress(model: AppModel, policies: Sequence[Policy],
                    rng: random.Random, direction: str) -> Candidate | None:
    """A peer, rule or port let in at a callee's ingress removed, retargeted or narrowed.

    The public entry point's open rule is narrowed to its port seldom: the rule it writes
    (port only) is about 1% of the design's rules, and at 8% of these faults it was 3.4
    times as common among faulted rules (``tests/k8s/test_fault_spots.py``). A default deny
    that isolates egress alone is given the Ingress type too (as AE gives it Egress): the
    design's deny-all with both types, 4.6% of its policies, was the one never faulted
    (the planner could not take a type off, so the generator redrew those faults).
    """
    method = rng.choices(["drop_peer", "drop_rule", "drop_port", "retarget", "default_deny",
                          "narrow_open"], (0.21, 0.21, 0.21, 0.21, 0.15, 0.02))[0]
    if method == "default_deny":
        return default_deny(policies, rng, "Ingress")
    if method == "narrow_open":
        return open_rule(model, policies, rng, narrow=True)
    if method == "retarget":
        return _retarget(model, policies, rng, ingress_only=True)
    part = {"drop_peer": "peers", "drop_rule": "rules", "drop_port": "ports"}[method]
    where = pick_spot(spots_of(policies, part, model, ingress_only=True), rng, policies)
    if where is None:
        return None
    pol, spec, rule = target_of(policies, where)
    name, _, at, k = pol["metadata"]["name"], *where[1:]
    if method == "drop_rule":
        if len(spec["ingress"]) < 2:
            return None
        del spec["ingress"][at]
        return name, method, f"{name}: ingress rule {at} {json.dumps(rule)} removed", spec
    items = rule["from" if method == "drop_peer" else "ports"]
    if len(items) < 2:
        return None
    gone = items.pop(k)
    if not sized_like_design(model, rule, "ingress"):
        return None
    return name, method, f"{name}: ingress rule {at} item {k} {json.dumps(gone)} removed", spec


def _retarget(model: AppModel, policies: Sequence[Policy], rng: random.Random,
              ingress_only: bool = False, direction: str | None = None) -> Candidate | None:
    """A rule's peers' selectors replaced by those of other peers of their form in the design.

    The new selectors name labels real workloads or teams carry (the design's own), and
    each peer keeps its form (a pod selector, a namespace AND pod selector, a range). A rule
    is drawn as a rule, and every peer of it is retargeted: one peer of a rule drawn
    uniformly among peers put two or three times as many of the changed rules among those
    with several peers as the design has (``netarena audit k8s``), and drawing the rule
    first but changing one of its peers would lean the changed peers the other way.
    """
    where = pick_spot([w for w in spots_of(policies, "rules", model, ingress_only)
                       if (direction is None or w[1] == direction)
                       and policies[w[0]]["spec"][w[1]][w[2]].get(side_of(w[1]))],
                      rng, policies)
    if where is None:
        return None
    pol, spec, rule = target_of(policies, where)
    peers = rule[side_of(where[1])]
    olds, pool = list(peers), design_pools(model).peers[where[1]]
    for k, old in enumerate(olds):
        options = [p for p in pool if peer_form(p) == peer_form(old) and p != old]
        if not options:
            return None
        peers[k] = design_like(model, options, where[1], rng)
    if peers == olds or len({json.dumps(p, sort_keys=True) for p in peers}) < len(peers):
        return None  # unchanged, or a peer twice in one rule (no design writes that)
    name = pol["metadata"]["name"]
    return name, "retarget", (f"{name}: {where[1]} rule {where[2]} peers {json.dumps(olds)} "
                              f"retargeted to {json.dumps(peers)}"), spec


def _add_ingress(model: AppModel, policies: Sequence[Policy],
                 rng: random.Random, direction: str) -> Candidate | None:
    """A peer let in at the callee's ingress or at the caller's egress (``direction``).

    The public entry point's port rule is opened to every port a fifth of the time: its
    policy is a twelfth of the design's, and with 8% (a rule added 33%) faults touched it
    a third as often as others (policy AUC 0.604 → 0.588 out of fold).
    """
    method = rng.choices(["add_peer", "add_rule", "retarget", "drop_except", "default_deny",
                          "open_port", "unlock"], (0.14, 0.21, 0.2, 0.05, 0.15, 0.2, 0.15))[0]
    pools = design_pools(model)
    if method == "retarget":
        return _retarget(model, policies, rng, direction=direction)
    if method == "default_deny":
        return default_deny(policies, rng, None)
    if method == "open_port":
        return open_rule(model, policies, rng, narrow=False)
    if method == "unlock":
        return unlock(model, policies, rng)
    if method == "drop_except":
        spots = [w for w in spots_of(policies, "peers", model, ingress_only=True)
                 if (policies[w[0]]["spec"]["ingress"][w[2]]["from"][w[3]].get("ipBlock")
                     or {}).get("except")]
        where = pick_spot(spots, rng, policies)
        if where is None:
            return None
        pol, spec, rule = target_of(policies, where)
        block = rule["from"][where[3]]["ipBlock"]
        del block["except"]
        name = pol["metadata"]["name"]
        return name, method, f"{name}: the except of ipBlock {block['cidr']} removed", spec
    if not pools.peers[direction]:
        return None
    peer = design_like(model, pools.peers[direction], direction, rng)

    def beside(w: Where) -> bool:  # an added peer joins peers of its own form, as the design's
        if method != "add_peer":
            return True
        rule, side = policies[w[0]]["spec"][w[1]][w[2]], side_of(w[1])
        return peer_form(rule[side][w[3]]) == peer_form(peer) and sized_like_design(
            model, {**rule, side: [*rule[side], peer]}, w[1])

    where = pick_spot([w for w in spots_of(policies, "peers" if method == "add_peer" else
                                           "rules", model)
                       if w[1] == direction and beside(w)
                       and not names_peer(policies[w[0]], direction, peer)], rng, policies)
    if where is None:
        return None
    name, side = policies[where[0]]["metadata"]["name"], side_of(direction)
    if method == "add_peer":
        _, spec, rule = target_of(policies, where)
        rule[side].insert(rng.randint(0, len(rule[side])), peer)
        return name, method, f"{name}: {direction} peer {json.dumps(peer)} added", spec
    _, spec, like = target_of(policies, where)  # a rule like one of its own, for a design peer
    rule = {side: [peer]}
    if like.get("ports"):
        rule["ports"] = copy.deepcopy(like["ports"])
    spec[direction].insert(rng.randint(0, len(spec[direction])), rule)
    return name, "add_rule", f"{name}: {direction} rule {json.dumps(rule)} added", spec


def _change_port(model: AppModel, policies: Sequence[Policy],
                 rng: random.Random, direction: str) -> Candidate | None:
    """An entry's port (and range) redrawn: a design entry's of its direction, or afresh.

    Copied (a named port too) from an entry of its protocol, so that the pair is one the
    design writes; else drawn as the design draws its extra entries' ports. A named port
    is renamed when the design names another: turned into a number, named entries were
    2.7-4.0% of the changed ones against 7.7-8.0% of the design's (``netarena audit k8s``).
    """
    spots = [w for w in spots_of(policies, "ports", model) if w[1] == direction
             and policies[w[0]]["spec"][w[1]][w[2]]["ports"][w[3]].get("port") is not None]
    where = pick_spot(spots, rng, policies, by_rule_size=True)
    if where is None:
        return None
    pol, spec, rule = target_of(policies, where)
    entry = rule["ports"][where[3]]
    old = (entry.get("port"), entry.get("endPort"))
    name = pol["metadata"]["name"]
    own = [] if where[1] == "egress" or name not in model.names else [
        p for p in (model.service(name).container_port, *(
            q for _, q in (model.detail.declared(name) if model.detail else []))) if p]
    like = [e for e in design_pools(model).entries[where[1]] if e.get("port") is not None
            and e.get("protocol", "TCP") == entry.get("protocol", "TCP")]
    names = [e for e in like if isinstance(e["port"], str) and e["port"] != old[0]]
    if isinstance(old[0], str) and names:
        like = names  # named entries look alike, so a renamed one keeps its look
    for _ in range(20):
        copied = bool(like) and rng.random() < _COPY_PORT
        drawn = rng.choice(like) if copied else port_entry(port_pool_of(model), own, rng)
        if (drawn["port"], drawn.get("endPort")) != old:
            break
    else:
        return None
    entry["port"] = drawn["port"]
    entry.pop("endPort", None)
    if "endPort" in drawn:
        entry["endPort"] = drawn["endPort"]
    return name, "copy_port" if copied else "other_port", (
        f"{name}: {where[1]} rule {where[2]} entry {where[3]} port {old[0]} changed to "
        f"{entry['port']}"), spec


def _change_protocol(model: AppModel, policies: Sequence[Policy],
                     rng: random.Random, direction: str) -> Candidate | None:
    """An entry's protocol changed to one a design entry of its direction carries.

    The new protocol is that of a design entry of ``direction`` drawn uniformly (so changed
    entries carry each protocol as often as the design's do), and the changed entry is one
    of that direction whose protocol differs and whose port is a number. An entry naming
    its port (a container port's name) is left alone: the design names TCP ports only, and a
    fault's UDP or SCTP one was a shape of its own (a fifth of the changes to UDP,
    ``netarena audit k8s``).
    """
    pools = design_pools(model)
    if not pools.entries[direction]:
        return None
    new = str(rng.choice(pools.entries[direction]).get("protocol") or "TCP")
    odds = {old: keep_odds(model, direction, new, old) for old in PROTOCOLS}

    def changeable(w: Where) -> bool:  # thinned so that every look is as common
        rule = policies[w[0]]["spec"][w[1]][w[2]]
        entry = rule["ports"][w[3]]
        old = entry.get("protocol") or "TCP"
        return isinstance(entry.get("port"), int) and old != new \
            and rng.random() < odds[old][look_of(entry, rule, w[1], pools.declared)]

    where = pick_spot([w for w in spots_of(policies, "ports", model)
                       if w[1] == direction and changeable(w)], rng, policies,
                      by_rule_size=True)
    if where is None:
        return None
    pol, spec, rule = target_of(policies, where)
    entry = rule["ports"][where[3]]
    old = entry.get("protocol") or "TCP"
    entry["protocol"] = new
    name = pol["metadata"]["name"]
    return name, "to_" + new.lower(), (
        f"{name}: {where[1]} rule {where[2]} entry {where[3]} port {entry.get('port')} "
        f"protocol {old} changed to {new}"), spec


def _add_egress(model: AppModel, policies: Sequence[Policy],
                rng: random.Random, direction: str) -> Candidate | None:
    """Egress closed, a restricted egress's peer retargeted, or one of its items removed.

    Closed as the design closes some services'; a removed item leaves a shape the design has.
    """
    roll = rng.random()
    if roll < 0.15:
        return default_deny(policies, rng, "Egress")
    if roll < 0.35:
        return _retarget(model, policies, rng, direction="egress")
    if roll < 0.50:  # a lock: the one fault writing a DNS rule as the design's
        return lock(model, policies, rng)
    part = rng.choice(["peers", "ports", "rules"])
    where = pick_spot([w for w in spots_of(policies, part, model)
                       if w[1] == "egress" and removable(policies, w, part)], rng, policies)
    if where is None:
        return None
    pol, spec, rule = target_of(policies, where)
    name, at, k = pol["metadata"]["name"], where[2], where[3]
    if part == "rules":
        del spec["egress"][at]
        return name, "drop_egress_rule", f"{name}: egress rule {at} {json.dumps(rule)} " \
            "removed", spec
    if callee_pairs(model, rule):  # a callee goes with its port, as the design pairs them
        callee = rule["to"].pop(k)["podSelector"]["matchLabels"]["app"]
        rule["ports"].pop(k)
        method, what = "drop_egress_callee", f"egress to {callee} removed"
    else:
        gone = rule["to" if part == "peers" else "ports"].pop(k)
        method, what = f"drop_egress_{part[:-1]}", f"egress rule {at} item {k} " \
            f"{json.dumps(gone)} removed"
    if not sized_like_design(model, rule, "egress"):
        return None
    return name, method, f"{name}: {what}", spec


_SAMPLERS: dict[str, Callable[[AppModel, Sequence[Policy], random.Random, str],
                               Candidate | None]] = {
    "RI": _remove_ingress,
    "AI": _add_ingress,
    "CP": _change_port,
    "CPR": _change_protocol,
    "AE": _add_egress,
}
"""Fault code → its sampler, given the injection's direction (RI's is ingress and AE's
egress by their types; they ignore it)."""


def _does_its_job(code: str, new: set[tuple[str, str, int, str, bool]]) -> bool:
    """Whether the new mismatches are what the fault type breaks."""
    if code in ("RI", "AE"):
        return any(expected for *_, expected in new)
    if code == "AI":
        return any(not expected for *_, expected in new)
    return bool(new)


def inject_fault(code: str, model: AppModel, policies: Sequence[Policy],
                 rng: random.Random) -> dict[str, Any]:
    """Draw one fault of type ``code`` that does what its type breaks.

    Args:
        code: ``RI``, ``AI``, ``CP``, ``CPR`` or ``AE``.
        model: The application (intended connectivity, the design's values).
        policies: The current (possibly already faulted) policies.
        rng: Source of every choice.

    Returns:
        ``{"code", "type", "policy", "method", "description", "spec"}``; ``spec`` is the
        policy's whole faulted spec.

    Raises:
        UnfitSeed: No candidate changed the matrix (a small design with no entry whose
            protocol can change, say): the plan draws the query from another seed.
    """
    pods, nss = model_pods(model), model_namespaces(model)

    def probes(pols: Sequence[Policy]) -> set[tuple[str, str, int, str, bool]]:
        return {(r.source, r.dest, r.port, r.protocol, r.expected)
                for r in judge(model, pods, nss, pols).mismatches}

    before = probes(policies)
    # drawn once, so that which direction breaks more easily does not bias the faults' own
    direction = _FIXED_DIRECTION.get(code) or rng.choices(
        ("ingress", "egress"), (1 - _EGRESS_SHARE, _EGRESS_SHARE))[0]
    for attempt in range(_MAX_TRIES):
        if attempt == _MAX_TRIES // 2 and code not in _FIXED_DIRECTION:
            direction = "egress" if direction == "ingress" else "ingress"  # none broke here
        cand = _SAMPLERS[code](model, policies, rng, direction)
        if cand is None:
            continue
        name, method, description, spec = cand
        if dns_rule_unlike_design(spec) or (attempt < _SHAPED_TRIES
                                             and rules_unlike_design(model, spec)):
            continue
        fault = {"code": code, "type": FAULT_TYPES[code], "policy": name,
                 "method": method, "description": description, "spec": spec}
        if _does_its_job(code, probes(apply_faults(policies, [fault])) - before):
            return fault
    raise UnfitSeed(f"no {code} fault changed the connectivity matrix")
