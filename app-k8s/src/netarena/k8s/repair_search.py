"""One planning step's view: the probe universe, what must change, and a candidate's score.

The report lists the probes that differ; every probe it does not list is taken as right
and must stay so. A pair it gives as unintended has no ports: it is taken as refused on
every port and protocol except the calls known to be intended: those the runbook lists,
and cluster DNS, for a service the platform notes lock to its callees.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import Any

from netarena.k8s.detail import DNS_PORTS, KUBE_DNS_LABELS
from netarena.k8s.manifests import NS_NAME
from netarena.k8s.model import AppModel
from netarena.k8s.policy import PodView
from netarena.k8s.policy_matrix import Mismatch
from netarena.k8s.reachability import (
    Egress,
    Universe,
    egress_of,
    endpoint_name,
    policy_peers,
    reachable,
    selected_mask,
    universe,
)

__all__ = ["Search", "Call", "lock_calls"]

Obj = dict[str, Any]
Call = tuple[str, str, int, str]  # source, destination, port, protocol


def lock_calls(model: AppModel, callers: Iterable[str]) -> frozenset[Call]:
    """What an egress locked to its callees lets ``callers`` make.

    The calls the runbook lists and cluster DNS over both protocols
    (``manifests.in_cluster_egress``).
    """
    dns = endpoint_name(PodView("kube-system", "coredns", dict(KUBE_DNS_LABELS), ()),
                        model.namespace)
    return frozenset({(s, d.name, d.container_port, "TCP") for s in callers
                      for d in model.callees(s) if d.container_port is not None}
                     | {(s, dns, int(str(p["port"])), str(p["protocol"])) for s in callers
                        for p in DNS_PORTS})


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True



class Search:
    """One planning step's universe, expected masks and candidate scoring.

    ``also`` are further policies whose peers, ports and ranges join the universe (a
    candidate's, to check it on every probe it moves). ``calls`` are calls known to be
    intended (``lock_calls``): a pair the report gives as unintended (without its ports)
    keeps them.
    """

    def __init__(self, namespace: str, policies: list[Obj], pods: Sequence[Obj],
                 namespaces: Sequence[Obj], report: list[Mismatch],
                 unintended: Set[tuple[str, str]] = frozenset(),
                 also: Sequence[Obj] = (),
                 calls: Set[Call] = frozenset()) -> None:
        self.ns = namespace
        self.namespaces = namespaces
        self.pods = pods
        ends = {e for m in report for e in m[:2]} | {e for pair in unintended for e in pair}
        addresses = sorted(e for e in ends if _is_address(e))
        spaces = {e.split("/")[0] for e in ends if "/" in e}
        for peer in policy_peers([*policies, *also]):
            spaces.add(((peer.get("namespaceSelector") or {}).get("matchLabels") or {})
                       .get(NS_NAME, namespace))
        self.uni: Universe = universe(namespace, pods, [policies, also], addresses,
                                      namespaces=spaces - {"kube-system"},
                                      tuples={(m[2], m[3]) for m in report})
        self.names = {e.name: i for i, e in enumerate(self.uni.endpoints)}
        self.tindex = {t: i for i, t in enumerate(self.uni.tuples)}
        actual = reachable(self.uni, namespaces, policies)
        self.policies = policies
        self._egress: Egress | None = None
        self.expected = dict(actual)
        self.report = []
        for src, dst in sorted(unintended):  # refused on every tuple the report does not list
            s, d = self.names.get(src), self.names.get(dst)
            if s is None or d is None:
                continue
            for tup, (port, proto) in enumerate(self.uni.tuples):
                if (src, dst, port, proto) in calls:
                    continue
                if self.expected.get((d, tup), 0) >> s & 1:
                    self.expected[(d, tup)] &= ~(1 << s)
                    self.report.append((s, d, tup, False))
        for src, dst, port, proto, want in report:
            s, d, t = self.names.get(src), self.names.get(dst), self.tindex.get((port, proto))
            if s is None or d is None or t is None:
                continue
            self.report.append((s, d, t, want))
            bit, key = 1 << s, (d, t)
            mask = self.expected.get(key, 0)
            self.expected[key] = (mask | bit) if want else (mask & ~bit)
        self.expected = {k: v for k, v in self.expected.items() if v}
        self.wrong = self.differing(actual)
        self._wrong_masks = {k: actual.get(k, 0) ^ self.expected.get(k, 0)
                             for k in set(actual) | set(self.expected)}
        self._expected_at: dict[int, list[tuple[int, int]]] = {}  # by destination
        for key in self.expected:
            self._expected_at.setdefault(key[0], []).append(key)
        self._wrong_at: dict[int, int] = {}
        for (d, _), mask in self._wrong_masks.items():
            self._wrong_at[d] = self._wrong_at.get(d, 0) + mask.bit_count()

    def differing(self, actual: Mapping[tuple[int, int], int]) -> set[tuple[int, int, int]]:
        """(source, destination, tuple) of every probe where ``actual`` is not expected."""
        out = set()
        for key in set(actual) | set(self.expected):
            diff = actual.get(key, 0) ^ self.expected.get(key, 0)
            while diff:
                low = diff & -diff
                out.add((low.bit_length() - 1, *key))
                diff ^= low
        return out

    def score(self, policies: list[Obj], ingress_of: Obj | None = None) -> int | None:
        """Differences left after ``policies``; ``None`` when any new one appears.

        ``ingress_of``: the one policy whose ingress rules alone differ from the
        search's policies; only the endpoints it selects are judged again.
        """
        if ingress_of is None:
            actual = reachable(self.uni, self.namespaces, policies)
            keys, count = actual.keys() | self.expected.keys(), 0
        else:
            if self._egress is None:
                self._egress = egress_of(self.uni, self.namespaces, self.policies)
            dests = selected_mask(self.uni, ingress_of)
            actual = reachable(self.uni, self.namespaces, policies, dests, self._egress)
            keys = set(actual)
            count = len(self.wrong)
            for d in _bits(dests):
                keys.update(self._expected_at.get(d, ()))
                count -= self._wrong_at.get(d, 0)
        for key in keys:  # ``differing``'s bits, counted
            diff = actual.get(key, 0) ^ self.expected.get(key, 0)
            if diff & ~self._wrong_masks.get(key, 0):
                return None  # a probe that was right goes wrong
            count += diff.bit_count()
        return count


def _bits(mask: int) -> Iterator[int]:
    """The indices of ``mask``'s set bits, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
