"""Where a fault may land and what it may write: the design's own values and spots.

``DesignPools`` holds the peers, rules and port entries of the healthy policies (what a
fault may write); ``spots_of`` lists where each peer, port entry or rule sits and
``pick_spot`` chooses one so that no level leans to big or small policies.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
from collections import Counter
from collections.abc import Sequence
from typing import Any

from netarena.k8s.design import except_cut, external_range, foreign_peer, partner_range
from netarena.k8s.detail import DNS_PORTS, KUBE_DNS_LABELS
from netarena.k8s.manifests import callee_rule, render_policies
from netarena.k8s.model import AppModel, per_model
from netarena.k8s.model_objects import model_pods
from netarena.k8s.policy import PodView
from netarena.k8s.reachability import PROTOCOLS

__all__ = ["DesignPools", "Where", "design_like", "dns_rule_unlike_design", "design_pools",
           "fresh_peer", "names_peer", "peer_form", "lone_side_weight", "pick_spot", "rule_shape",
           "rules_unlike_design", "sized_like_design", "look_of", "side_of", "spots_of",
           "target_of", "keep_odds", "callee_pairs", "removable"]

Policy = dict[str, Any]


class DesignPools:
    """The design's own values: what a fault may write (drawn from the healthy policies).

    Peers, rules and port entries as often as the design has them: selectors naming labels
    real workloads or namespaces carry, ports other rules use, in the design's proportions.
    """

    def __init__(self, model: AppModel) -> None:
        healthy = render_policies(model)
        self.peers: dict[str, list[dict[str, Any]]] = {"ingress": [], "egress": []}
        self.rules: dict[str, list[dict[str, Any]]] = {"ingress": [], "egress": []}
        self.entries: dict[str, list[dict[str, Any]]] = {"ingress": [], "egress": []}
        for pol in healthy:
            spec = pol.get("spec") or {}
            for direction, side in (("ingress", "from"), ("egress", "to")):
                for rule in spec.get(direction) or []:
                    self.rules[direction].append(rule)
                    self.entries[direction] += rule.get("ports") or []
                    self.peers[direction] += rule.get(side) or []
        self.shapes = {d: {rule_shape(r, d) for r in self.rules[d]} for d in self.rules}
        self.sized = {d: {_sized_shape(r, d) for r in self.rules[d]} for d in self.rules}
        self.declared = {port for pod in model_pods(model)
                         for _, port, _ in PodView.from_obj(pod).ports}
        self.counts = Counter(json.dumps(p, sort_keys=True) for d in ("ingress", "egress")
                              for p in self.peers[d])
        self.looks = {(d, proto): _trait_shares(self.rules[d], d, self.declared, proto)
                      for d in self.rules for proto in PROTOCOLS}


@per_model(16)
def design_pools(model: AppModel) -> DesignPools:
    """The pools of ``model`` (cached per model object: rendering the design is not free)."""
    return DesignPools(model)


def rule_shape(rule: dict[str, Any], direction: str) -> tuple[tuple[str, ...], ...]:
    """What a rule looks like at a glance: its peers' forms and its protocols."""
    return (tuple(sorted({",".join(sorted(peer_form(p)))
                          for p in rule.get(side_of(direction)) or []})),
            tuple(sorted({str(e.get("protocol") or "TCP") for e in rule.get("ports") or []})))


def _sized_shape(rule: dict[str, Any], direction: str) -> tuple[Any, ...]:
    return rule_shape(rule, direction), len(rule.get(side_of(direction)) or [])


def sized_like_design(model: AppModel, rule: dict[str, Any], direction: str) -> bool:
    """Whether a design rule of ``direction`` has ``rule``'s shape and as many peers.

    A fault that adds or removes a peer or port entry must leave a rule the design writes
    (its protocols are part of the shape): a provider's range rule given a second range, or
    checkout's seven callees left with six, were rules of their own (1.8% of faulted rules,
    none of the design's; ``netarena audit k8s``).
    """
    return _sized_shape(rule, direction) in design_pools(model).sized[direction]


def rules_unlike_design(model: AppModel, spec: Policy) -> bool:
    """Whether ``spec`` holds an egress rule of a shape (``rule_shape``) no design rule has.

    A protocol changed in a callee rule wrote UDP toward a pod selector, which only the DNS
    rule carries (2.7% of faulted rules, none of the design's; ``netarena audit k8s``).
    """
    shapes = design_pools(model).shapes["egress"]
    return any(rule and rule_shape(rule, "egress") not in shapes
               for rule in spec.get("egress") or [])


Look = tuple[bool, bool, int]
"""What a numbered port entry looks like besides its protocol: no pod declares its port, it
is a range, and its rule's peers (0-3, 3 for more)."""
_TRAITS: tuple[tuple[Any, ...], ...] = ((False, True), (False, True), (0, 1, 2, 3))
"""The values each trait of a ``Look`` takes."""


def look_of(entry: dict[str, Any], rule: dict[str, Any], direction: str,
            declared: set[int]) -> Look:
    """``entry``'s ``Look`` in ``rule`` (``declared``: the ports the cluster's pods declare)."""
    return (entry["port"] not in declared, "endPort" in entry,
            min(len(rule.get(side_of(direction)) or []), 3))


def _trait_shares(rules: Sequence[dict[str, Any]], direction: str, declared: set[int],
                  protocol: str) -> list[dict[Any, float]]:
    """Each ``Look`` trait's values' shares among ``protocol``'s numbered entries in ``rules``.

    Smoothed (one of each value added): a small design's few entries of a protocol, all of
    one value, would otherwise leave no entry a protocol change may take.
    """
    looks = [look_of(e, rule, direction, declared) for rule in rules
             for e in rule.get("ports") or []
             if isinstance(e.get("port"), int) and (e.get("protocol") or "TCP") == protocol]
    return [{v: (sum(look[i] == v for look in looks) + 1) / (len(looks) + len(values))
             for v in values} for i, values in enumerate(_TRAITS)]


def keep_odds(model: AppModel, direction: str, new: str, old: str) -> dict[Look, float]:
    """How often (0-1) an ``old`` entry may turn ``new``, by its ``Look``.

    The likelihood ratio of that look under the new protocol against the old, scaled to at
    most 1, so that a changed entry looks as the new protocol's entries do. Without it, a
    UDP entry turned TCP sat on a port no pod declares 12% of the time, against 4% of the
    design's TCP entries, and ranges (drawn with the admin rules' UDP and SCTP entries)
    were 9.6% of changed entries against 3.5% of the design's; UDP sits in admin rules and
    beside callers in main rules, so rules of two or three peers were 31% and 12% of those
    turned TCP, against 12% and 3% of the design's rules (``netarena audit k8s``). Each
    trait's ratio is taken on its own and the ratios multiplied: one design holds too few
    UDP entries to count every whole look, and a ratio of whole looks thinned ranges to a
    third of their share.
    """
    shares = design_pools(model).looks
    odds = {look: math.prod(shares[direction, new][i][v] / shares[direction, old][i][v]
                            for i, v in enumerate(look))
            for look in itertools.product(*_TRAITS)}
    top = max(odds.values())
    return {look: x / top for look, x in odds.items()}


def side_of(direction: str) -> str:
    """The rule key holding the peers of ``direction``."""
    return "from" if direction == "ingress" else "to"


Where = tuple[int, str, int, int]  # policy index, direction, rule index, item index


def spots_of(policies: Sequence[Policy], part: str, model: AppModel,
           ingress_only: bool = False) -> list[Where]:
    """Where each peer, port entry or rule (``part``) of the app's namespace sits."""
    out: list[Where] = []
    for p, pol in enumerate(policies):
        if (pol.get("metadata") or {}).get("namespace", model.namespace) != model.namespace:
            continue
        spec = pol.get("spec") or {}
        for direction in ("ingress",) if ingress_only else ("ingress", "egress"):
            for i, rule in enumerate(spec.get(direction) or []):
                if not rule:
                    continue
                if part == "rules":
                    out.append((p, direction, i, -1))
                    continue
                items = rule.get(side_of(direction) if part == "peers" else "ports") or []
                out += [(p, direction, i, j) for j in range(len(items))]
    return out


_PORT_ONLY_KEPT = 0.3
"""Share of ``by_rule_size`` draws that may land in a rule without peers (the public entry
point's port rule, about 1% of the design's rules): every change to it changes what
connects, so it took 2-4 times its share of changed ports (``tests/k8s/test_fault_spots.py``)."""


def pick_spot(spots: list[Where], rng: random.Random,
              policies: Sequence[Policy], by_rule_size: bool = False) -> Where | None:
    """A spot: uniformly, or by a uniformly chosen rule first, or by a policy first.

    Choosing only uniformly over items favours big rules and policies among the changed
    ones; only by policy or rule favours small ones among the changed items: mixing the
    three keeps every level's leaning small. A policy first is drawn by its
    ``lone_side_weight`` (``spots`` are of one direction). ``by_rule_size``: port entries
    are drawn uniformly half the time, and an entry weighs as many as its rule has entries
    (changed ports and protocols: policy-first favours small policies' single-entry rules),
    and a rule without peers is left out of most draws (``_PORT_ONLY_KEPT``).
    """
    if by_rule_size and rng.random() > _PORT_ONLY_KEPT:
        spots = [s for s in spots if side_of(s[1]) in policies[s[0]]["spec"][s[1]][s[2]]]
    if not spots:
        return None
    mode = rng.choices((0, 1, 2), (0.5, 0.1, 0.4) if by_rule_size else (0.1, 0.1, 0.8))[0]
    if mode == 1:
        rule = rng.choice(sorted({s[:3] for s in spots}))
        spots = [s for s in spots if s[:3] == rule]
    elif mode == 2:
        candidates = sorted({s[:2] for s in spots})
        weights = [lone_side_weight(policies[p], d) for p, d in candidates]
        policy = rng.choices(candidates, weights)[0][0]
        spots = [s for s in spots if s[0] == policy]
    if by_rule_size:
        return rng.choices(spots, [len(policies[p]["spec"][d][i].get("ports") or [])
                                   for p, d, i, _ in spots])[0]
    return rng.choice(spots)


_LONE_SIDE = 3.0
"""``lone_side_weight``'s weight. Policy AUC of ``netarena audit k8s -n 400`` at seeds 11
and 12: 0.661 and 0.646 with 1 (no weight), 0.641 and 0.616 with 3, 0.688 with 8 (seed 11)."""


def lone_side_weight(policy: Policy, direction: str) -> float:
    """How much more often a fault of ``direction`` lands on ``policy`` than on others.

    Most faults sit in ingress, so a policy that restricts only its egress (an egress-only
    policy such as a client's) would be faulted far less often than one that restricts
    both, and a policy whose egress is open would take no egress fault: a policy's other
    side would tell where the fault is (``netarena audit k8s``). A policy whose other side
    is not restricted draws more of the faults its restricted side can take.
    """
    other = "egress" if direction == "ingress" else "ingress"
    spec = policy.get("spec") or {}
    rules = spec.get(other) or []
    restricted = other.capitalize() in (spec.get("policyTypes") or []) and bool(rules) \
        and {} not in rules
    return 1.0 if restricted else _LONE_SIDE


def target_of(policies: Sequence[Policy], where: Where
            ) -> tuple[Policy, dict[str, Any], dict[str, Any]]:
    """The policy, a copy of its spec, and the rule at ``where`` in that copy."""
    pol = policies[where[0]]
    spec = copy.deepcopy(pol["spec"])
    return pol, spec, spec[where[1]][where[2]]


def peer_form(peer: dict[str, Any]) -> frozenset[str]:
    """Which selectors (pod, namespace) or range a peer is written with."""
    return frozenset(k for k in ("podSelector", "namespaceSelector", "ipBlock") if k in peer)


def design_like(model: AppModel, options: Sequence[dict[str, Any]], direction: str,
                rng: random.Random) -> dict[str, Any]:
    """A peer as the design writes one like those of ``options`` (design peers, with repeats).

    A template drawn from ``options`` that the design names in several places (a caller,
    Prometheus, the cluster DNS) is copied; one it names once is drawn afresh in its kind
    (``fresh_peer``), so that it is as unique as the design's.
    """
    pools = design_pools(model)
    template = rng.choice(options)
    if pools.counts[json.dumps(template, sort_keys=True)] > 1:
        return copy.deepcopy(template)
    return fresh_peer(model, template, direction, rng)


def fresh_peer(model: AppModel, template: dict[str, Any], direction: str,
               rng: random.Random) -> dict[str, Any]:
    """A peer of ``template``'s kind that the design does not name, drawn as the design draws.

    A range is a provider's (egress) or a partner's (ingress); a selector of one of the
    application's services names another of them (a callee, for egress); any other peer is
    another team's workload, namespace or range, in ``template``'s form.
    """
    if model.detail is None:  # a bare design: nothing of other teams to draw from
        return copy.deepcopy(template)
    if "ipBlock" in template:
        if direction == "ingress":
            return {"ipBlock": partner_range(rng)}
        net = external_range(rng)
        cut = except_cut(net, rng)
        return {"ipBlock": {"cidr": str(net), **({"except": [cut]} if cut else {})}}
    labels = (template.get("podSelector") or {}).get("matchLabels") or {}
    if set(template) == {"podSelector"} and set(labels) == {"app"} \
            and labels["app"] in model.names:
        pool = model.servers if direction == "egress" else model.services
        names = [s.name for s in pool if s.name != labels["app"]]
        if names:
            return {"podSelector": {"matchLabels": {"app": rng.choice(names)}}}
    workloads = list(model.detail.workloads)
    for _ in range(40):
        peer = foreign_peer(model.detail.teams, workloads, rng)
        if peer_form(peer) == peer_form(template):
            return peer
    return copy.deepcopy(template)


def names_peer(policy: Policy, direction: str, peer: dict[str, Any]) -> bool:
    """Whether ``policy``'s rules of ``direction`` already name ``peer``.

    Adding it there would change nothing: a draw that ignored this would favour the peers
    the design names rarely.
    """
    return any(peer in (rule.get(side_of(direction)) or []) for rule in
               (policy.get("spec") or {}).get(direction) or [])


def _entry(entry: dict[str, Any]) -> tuple[str, str]:
    return str(entry.get("port")), str(entry.get("protocol") or "TCP")


_DNS_PORT_LISTS = ([_entry(p) for p in DNS_PORTS], [_entry(DNS_PORTS[0])])
"""The port lists of the design's rules toward the cluster DNS: UDP and TCP, or UDP alone."""


def dns_rule_unlike_design(spec: Policy) -> bool:
    """Whether ``spec`` holds a rule toward the cluster DNS with ports no design gives one.

    A fault that dropped the UDP entry, turned one protocol into the other or changed the
    port wrote the only DNS rules without UDP or with an entry twice (6% of faulted rules,
    none of the design's; ``netarena audit k8s`` read them at a glance).
    """
    return any(
        [_entry(e) for e in rule.get("ports") or []] not in _DNS_PORT_LISTS
        for rule in spec.get("egress") or []
        if any((peer.get("podSelector") or {}).get("matchLabels") == KUBE_DNS_LABELS
               for peer in rule.get("to") or []))


def callee_pairs(model: AppModel, rule: Policy) -> bool:
    """Whether ``rule`` is a callee rule as the design writes it (``callee_rule``).

    Removing only a callee or only a port from it left a rule whose peers and ports no
    longer pair up, a shape no design writes.
    """
    apps = [((p.get("podSelector") or {}).get("matchLabels") or {}).get("app")
            for p in rule.get("to") or []]
    names = [a for a in apps if isinstance(a, str) and a in model.names]
    return len(names) == len(apps) > 1 and rule == callee_rule(model, names)


def removable(policies: Sequence[Policy], where: Where, part: str) -> bool:
    """Whether the rule (or peer, or port entry) at ``where`` can go as a one-item change.

    Removing the last rule closes the direction (a lock, drawn as one); removing a rule's
    last peer or port widens it to every peer or port (not an egress lost). A client's
    egress-only policy keeps both its rules: the design's hold DNS and the entry point
    together, and one without the other was a policy shape of its own.
    """
    spec = policies[where[0]]["spec"]
    rules = spec[where[1]]
    if part == "rules":
        return len(rules) > 1 and "Ingress" in (spec.get("policyTypes") or [])
    return len(rules[where[2]].get(side_of(where[1]) if part == "peers" else "ports")
               or []) > 1
