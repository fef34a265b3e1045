"""Repairs found by simulation: the smallest policy edits that explain the probe report.

The reference operator does not rebuild policies from the runbook (that destroys what
other teams put in them). It reads the live policies, pods and namespaces, takes the probe
report as the difference between the live reachability and the intended one, and asks the
policy engine which single edit of one rule entry (a port, a protocol, a peer, a rule, an
egress list) removes reported differences without creating any; it applies the best, and
repeats. Every edit touches only the entry the report implicates, so peers, named ports,
ranges, exceptions and rule order it does not need to touch stay as they were.

``Planner.kinds`` lists the edits a planner may make; calibration baselines restrict it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass
from typing import Any

from netarena.k8s.apiserver.kinds import clone
from netarena.k8s.manifests import NS_NAME
from netarena.k8s.policy import PodView, policy_types, selector_matches
from netarena.k8s.policy_matrix import Mismatch
from netarena.k8s.reachability import OTHER_PORT, PROTOCOLS, reachable, selected_mask
from netarena.k8s.repair_search import Call, Search

__all__ = ["Edit", "repairs", "EDIT_KINDS"]

Obj = dict[str, Any]
EDIT_KINDS = ("port", "protocol", "remove-peer", "merge-peers", "remove-entry", "remove-rule",
              "replace-peer", "add-rule", "add-peer", "narrow-open", "open-egress", "add-type",
              "drop-type")
"""Every edit a planner may make, cheapest first. A new rule is preferred to a new peer in
an existing rule: when several rules could take the peer, a new rule never changes one the
faults did not touch."""
_COST = {k: i for i, k in enumerate(EDIT_KINDS)}
_NOISE_LABELS = ("pod-template-hash", "controller-revision-hash", "pod-template-generation")


@dataclass(frozen=True)
class Edit:
    """One simulated change: the policy's new spec, and what kind of edit it is."""

    policy: str
    kind: str
    spec: Obj
    remaining: int
    """Reported differences left after it."""


def _peer_for(view: PodView, policy_ns: str) -> Obj:
    """The narrowest peer selecting ``view`` (its app, or its labels; an address /32)."""
    if not view.namespace:
        return {"ipBlock": {"cidr": f"{view.name}/32"}}
    labels = {k: v for k, v in view.labels.items() if k not in _NOISE_LABELS}
    if "app" in labels:
        labels = {"app": labels["app"]}
    pod = {"podSelector": {"matchLabels": labels}}
    if view.namespace == policy_ns:
        return pod
    return {**pod, "namespaceSelector": {"matchLabels": {NS_NAME: view.namespace}}}


def _entries(tuples: Sequence[tuple[int, str]]) -> list[Obj] | None:
    if all((OTHER_PORT, p) in tuples for p in PROTOCOLS):
        return None
    return [{"protocol": proto, "port": port} for port, proto in tuples if port != OTHER_PORT]


def _implicated(search: Search, policies: list[Obj]) -> Iterator[tuple[Obj, str]]:
    """Each policy and direction selecting a reported pod on that side (typed or not)."""
    eps = search.uni.endpoints
    dsts = [eps[d].view for d in sorted({d for _, d, _, _ in search.report})]
    srcs = [eps[s].view for s in sorted({s for s, _, _, _ in search.report})]
    for pol in policies:
        spec = pol.get("spec") or {}
        types = policy_types(pol)
        for direction, views in (("Ingress", dsts), ("Egress", srcs)):
            if (direction in types or not spec.get(direction.lower())) and any(
                    v.namespace == search.ns and selector_matches(spec.get("podSelector"), v.labels)
                    for v in views):
                yield pol, direction.lower()


def _missing(search: Search, pol: Obj, direction: str) -> dict[frozenset[tuple[int, str]],
                                                                 list[PodView]]:
    """Peers the report says must get through, grouped by the tuples they miss."""
    eps = search.uni.endpoints
    spec = pol.get("spec") or {}
    by_peer: dict[int, set[tuple[int, str]]] = {}
    for s, d, t, want in search.report:
        if not want:
            continue
        me, other = (d, s) if direction == "ingress" else (s, d)
        view = eps[me].view
        if view.namespace == search.ns and selector_matches(spec.get("podSelector"), view.labels):
            by_peer.setdefault(other, set()).add(search.uni.tuples[t])
    return _by_tuples(search, by_peer)


def _by_tuples(search: Search, by_peer: dict[int, set[tuple[int, str]]]
               ) -> dict[frozenset[tuple[int, str]], list[PodView]]:
    """Endpoints grouped by the (port, protocol) tuples they share."""
    groups: dict[frozenset[tuple[int, str]], list[PodView]] = {}
    for other, tuples in sorted(by_peer.items()):
        groups.setdefault(frozenset(tuples), []).append(search.uni.endpoints[other].view)
    return groups


def _rules_for(groups: dict[frozenset[tuple[int, str]], list[PodView]], side: str,
               ns: str) -> list[Obj]:
    """One rule per group: its peers, and its ports unless they are every port."""
    out = []
    for tuples, views in sorted(groups.items(), key=lambda kv: sorted(kv[0])):
        rule: Obj = {side: [_peer_for(v, ns) for v in views]}
        entries = _entries(sorted(tuples))
        if entries is not None:
            rule["ports"] = entries
        out.append(rule)
    return out


def _candidates(search: Search, pol: Obj, direction: str,
                kinds: frozenset[str]) -> Iterator[tuple[str, Obj]]:
    spec, types, typed = pol.get("spec") or {}, policy_types(pol), direction.capitalize()
    rules: list[Obj] = spec.get(direction) or []
    # a default deny's type lost (put back), or gained (taken off: it denied that side to all)
    kind = "add-type" if typed not in types else "drop-type" if not rules and len(types) > 1 else ""
    if kind in kinds:
        flipped = [t for t in ("Ingress", "Egress") if (t in types) != (t == typed)]
        yield kind, {**clone(spec), "policyTypes": flipped}
    if typed not in types:
        return
    side = "from" if direction == "ingress" else "to"
    ns = (pol.get("metadata") or {}).get("namespace") or "default"
    missing = _missing(search, pol, direction)
    wanted = sorted({t for group in missing for t in group})

    def with_rules(new: list[Obj]) -> Obj:
        out = {k: new if k == direction else clone(v) for k, v in spec.items()}
        out.setdefault(direction, new)
        return out

    for i, rule in enumerate(rules):
        peers = rule.get(side) or []
        entries = rule.get("ports") or []
        for k, entry in enumerate(entries):
            for port, _ in wanted:
                if "port" in kinds and port != OTHER_PORT and entry.get("port") != port:
                    new = clone(rules)
                    new[i]["ports"][k]["port"] = port
                    new[i]["ports"][k].pop("endPort", None)
                    yield "port", with_rules(new)
            for proto in sorted({p for _, p in wanted}):
                if "protocol" in kinds and (entry.get("protocol") or "TCP") != proto:
                    new = clone(rules)
                    new[i]["ports"][k]["protocol"] = proto
                    yield "protocol", with_rules(new)
            if "remove-entry" in kinds and len(entries) > 1:
                new = clone(rules)
                del new[i]["ports"][k]
                yield "remove-entry", with_rules(new)
        for j in range(len(peers)):
            if "remove-peer" in kinds and len(peers) > 1:
                new = clone(rules)
                del new[i][side][j]
                yield "remove-peer", with_rules(new)
            if "merge-peers" in kinds and j + 1 < len(peers):
                a, b = peers[j], peers[j + 1]
                if {"podSelector", "namespaceSelector"} == set(a) | set(b) and not set(a) & set(b):
                    new = clone(rules)
                    new[i][side][j:j + 2] = [{**a, **b}]
                    yield "merge-peers", with_rules(new)
            for views in missing.values():
                if "replace-peer" in kinds and len(views) == 1:
                    new = clone(rules)
                    new[i][side][j] = _peer_for(views[0], ns)
                    yield "replace-peer", with_rules(new)
        if "remove-rule" in kinds:
            yield "remove-rule", with_rules(rules[:i] + rules[i + 1:])
        for views in missing.values():
            if "add-peer" in kinds and peers:
                new = clone(rules)
                new[i][side] += [_peer_for(v, ns) for v in views]
                yield "add-peer", with_rules(new)
    if "add-rule" in kinds and missing:
        added = _rules_for(missing, side, ns)
        for rule in added:
            yield "add-rule", with_rules(clone(rules) + [rule])
        if len(added) > 1:
            yield "add-rule", with_rules(clone(rules) + added)
    if "narrow-open" in kinds and {} in rules:
        yield from _narrowed(search, pol, direction, rules, with_rules)
    if "open-egress" in kinds and direction == "egress" and rules != [{}]:
        yield "open-egress", with_rules([{}])


def _narrowed(search: Search, pol: Obj, direction: str, rules: list[Obj],
              with_rules: Callable[[list[Obj]], Obj]) -> Iterator[tuple[str, Obj]]:
    """An open rule (``{}``) limited to what the policy's pods must still answer or reach.

    Ingress: the ports they must answer on. Egress: a rule per set of ports, to the
    destinations they must reach on them.
    """
    mine, tuples = selected_mask(search.uni, pol), search.uni.tuples
    new = clone(rules)
    at = rules.index({})
    if direction == "ingress":
        entries = _entries(sorted({tuples[t] for d, t in search.expected if mine >> d & 1}))
        if not entries:
            return
        new[at] = {"ports": entries}
    else:
        reached: dict[int, set[tuple[int, str]]] = {}
        for (d, t), sources in search.expected.items():
            if sources & mine:
                reached.setdefault(d, set()).add(tuples[t])
        ns = (pol.get("metadata") or {}).get("namespace") or "default"
        new[at:at + 1] = _rules_for(_by_tuples(search, reached), "to", ns)
    yield "narrow-open", with_rules(new)


def repairs(namespace: str, policies: Sequence[Obj], pods: Sequence[Obj],
            namespaces: Sequence[Obj], report: list[Mismatch],
            kinds: frozenset[str] = frozenset(EDIT_KINDS), max_steps: int = 8,
            directions: frozenset[str] = frozenset({"ingress", "egress"}),
            unintended: Set[tuple[str, str]] = frozenset(),
            calls: Set[Call] = frozenset()) -> list[Edit]:
    """The greedy sequence of single edits that makes the report empty (or as small as it gets).

    Args:
        namespace: The application's namespace (only its policies are edited).
        policies: The live NetworkPolicies.
        pods: Pod objects (every namespace).
        namespaces: Namespace objects.
        report: The differing probes (``parse_report``).
        kinds: Edits allowed (``EDIT_KINDS``).
        max_steps: Most edits planned.
        directions: Which sides of a policy may be edited.
        unintended: (source, destination) pairs the report says connect but must not
            (``parse_unintended``); each is taken as refused on every port and protocol
            the report does not list as one that must answer, nor ``calls`` holds.
        calls: Calls known to be intended (``repair_search.lock_calls``).

    Returns:
        Edits in the order to apply them; each leaves every matching probe matching.
    """
    current = [clone(dict(p)) for p in policies
               if ((p.get("metadata") or {}).get("namespace") or "default") == namespace]
    edits: list[Edit] = []
    remaining = report
    for _ in range(max_steps):
        if not remaining and not unintended:
            break
        search = Search(namespace, current, pods, namespaces, remaining, unintended, calls=calls)
        if not search.wrong:
            break
        found: list[tuple[int, int, int, str, Obj, Obj]] = []
        for pol, direction in _implicated(search, current):
            if direction not in directions:
                continue
            for kind, spec in _candidates(search, pol, direction, kinds):
                trial = [({**p, "spec": spec} if p is pol else p) for p in current]
                left = search.score(trial, pol if direction == "ingress" else None)
                if left is not None and left < len(search.wrong):
                    found.append((left, _COST[kind], len(found), kind, spec, pol))
        best = next((f for f in sorted(found, key=lambda f: f[:3])
                     if _moves_nothing_else(search, current, f[5], f[4])), None)
        if best is None:
            break
        left, _, _, kind, spec, pol = best
        name = pol["metadata"]["name"]
        current = [({**p, "spec": spec} if p is pol else p) for p in current]
        edits.append(Edit(name, kind, spec, left))
        remaining = _left(search, current)
    return edits


def _moves_nothing_else(search: Search, current: list[Obj], pol: Obj, spec: Obj) -> bool:
    """Whether an edit breaks no probe, judged also on the ports and peers it brings in.

    The step's universe holds the current policies' ports and ranges; an edit can move a
    port or end a range outside them, so it is checked once more on a universe that
    holds both.
    """
    trial = [({**p, "spec": spec} if p is pol else p) for p in current]
    eps, tuples = search.uni.endpoints, search.uni.tuples
    report = [(eps[s].name, eps[d].name, *tuples[t], want) for s, d, t, want in search.report]
    both = Search(search.ns, current, search.pods, search.namespaces, report, also=trial)
    return both.score(trial) is not None


def _left(search: Search, policies: list[Obj]) -> list[Mismatch]:
    eps, tuples = search.uni.endpoints, search.uni.tuples
    wrong = search.differing(reachable(search.uni, search.namespaces, policies))
    out = []
    for s, d, t in sorted(wrong):
        want = bool(search.expected.get((d, t), 0) >> s & 1)
        out.append((eps[s].name, eps[d].name, *tuples[t], want))
    return out
