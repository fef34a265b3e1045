"""Exact reachability: every (source, destination, port, protocol) any object names.

The judge compares the cluster an agent leaves with the healthy one on a finite universe
that covers everything policies can tell apart:

* **endpoints**: the pods of the application's namespace, of the namespaces the detail
  adds (monitoring, batch jobs, canaries) and CoreDNS; a new pod no service policy
  selects (``debug-pod``); and addresses outside the cluster: the internet stranger,
  each external range's inside and outside address, and for every ``ipBlock`` any policy
  names an address inside it (outside its ``except``) and one inside each ``except``;
* **ports**: every container port (with its protocol), every Service port, every
  ``port``/``endPort`` a policy names (with its protocol), and per protocol one port no
  object names (``OTHER_PORT``), which stands for all the others.

Reachability is computed with the ``PolicyEngine``'s semantics as bit masks (a mask of
sources per destination and port), so Online Boutique takes a few milliseconds and a
100-service graph stays well under 100 ms.
"""

from __future__ import annotations

import functools
import ipaddress
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from netarena.k8s.bounded import BoundedCache
from netarena.k8s.policy import PodView, PolicyEngine, policy_types, selector_matches

__all__ = ["OTHER_PORT", "Endpoint", "Universe", "universe", "reachable", "egress_of",
           "selected_mask", "differences",
           "NEWCOMER", "NEWCOMER_IP", "PROTOCOLS", "endpoint_name", "policy_peers"]

Obj = Mapping[str, Any]
OTHER_PORT = 0
"""Stands for every port no object names (a rule without ports, or a port-less entry)."""
PROTOCOLS = ("TCP", "UDP", "SCTP")
NEWCOMER = "debug-pod"
"""A pod no service policy selects (``kubectl run debug``): the default deny isolates it."""
NEWCOMER_PORT = 8080
NEWCOMER_IP = "10.244.255.250"
"""The address the judge gives the newcomer pod (no pod object has it)."""
Tuple = tuple[int, str]


@dataclass(frozen=True)
class Endpoint:
    """One end of a probe: a pod (or a representative of identical replicas) or an address."""

    name: str
    """As reports show it: ``frontend``, ``observability/prometheus``, ``203.0.113.7``."""
    view: PodView


def endpoint_name(view: PodView, namespace: str) -> str:
    """How a report names a pod: its app (prefixed by its namespace when foreign)."""
    labels = view.labels
    app = (labels.get("app") or labels.get("app.kubernetes.io/name") or labels.get("k8s-app")
           or labels.get("run") or view.name)
    if not view.namespace:
        return view.name
    return app if view.namespace == namespace else f"{view.namespace}/{app}"


@dataclass(frozen=True)
class Universe:
    """The endpoints and (port, protocol) tuples a comparison runs over."""

    endpoints: tuple[Endpoint, ...]
    tuples: tuple[Tuple, ...]

    @functools.cached_property
    def cache(self) -> dict[Any, int]:
        """Masks already computed over universes with these endpoints and tuples.

        Peers, selectors and port lists, shared by every state judged over them (looked
        up once per universe: the key is as long as the universe).
        """
        key = (tuple((e.name, e.view.namespace, e.view.ips, e.view.ports,
                      tuple(sorted(e.view.labels.items()))) for e in self.endpoints),
               self.tuples)
        return _CACHES.setdefault(key, dict)

    @property
    def size(self) -> int:
        """How many (source, destination, port, protocol) probes it holds."""
        n = len(self.endpoints)
        return n * (n - 1) * len(self.tuples)


_CACHES: BoundedCache[Any, dict[Any, int]] = BoundedCache(64)


def policy_peers(policies: Iterable[Obj]) -> Iterator[Obj]:
    """Every peer of every rule of ``policies``, both directions."""
    for pol in policies:
        spec = pol.get("spec") or {}
        for key, side in (("ingress", "from"), ("egress", "to")):
            for rule in spec.get(key) or []:
                yield from rule.get(side) or []


def _port_entries(policies: Iterable[Obj]) -> Iterable[Obj]:
    for pol in policies:
        spec = pol.get("spec") or {}
        for key in ("ingress", "egress"):
            for rule in spec.get(key) or []:
                yield from rule.get("ports") or []


def _block_addresses(block: Obj) -> list[str]:
    """An address inside ``block`` outside its excepts, and one inside each except."""
    return list(_block_addresses_of(json.dumps(block, sort_keys=True)))


@functools.lru_cache(maxsize=4096)
def _block_addresses_of(text: str) -> tuple[str, ...]:
    block = json.loads(text)
    if not isinstance(block, dict):
        return ()
    try:
        net = ipaddress.ip_network(block.get("cidr", ""), strict=False)
        excepts = [ipaddress.ip_network(e, strict=False) for e in block.get("except") or []]
    except (ValueError, TypeError):
        return ()
    out = [str(e.network_address + (1 if e.num_addresses > 2 else 0)) for e in excepts]
    step = max(1, net.num_addresses // 7)
    for k in range(min(net.num_addresses, 16)):
        ip = net.network_address + min(net.num_addresses - 1, 1 + k * step)
        if not any(ip in e for e in excepts):
            out.append(str(ip))
            break
    return tuple(out)


def universe(namespace: str, pods: Sequence[Obj], policy_sets: Sequence[Sequence[Obj]],
             addresses: Iterable[str] = (), service_ports: Iterable[int] = (),
             namespaces: Iterable[str] = (), tuples: Iterable[Tuple] = ()) -> Universe:
    """The probe universe for comparing ``policy_sets`` (the healthy and the live policies).

    Args:
        namespace: The application's namespace (its pods are named by app alone).
        pods: Pod objects; those of ``namespace``, of ``namespaces`` and CoreDNS are used.
        policy_sets: Every policy list being compared (their peers and ports join).
        addresses: Outside addresses to probe besides the ipBlocks' own.
        service_ports: Service ports (they join the port tuples).
        namespaces: Further namespaces whose pods are endpoints (monitoring, batch...).
        tuples: Further (port, protocol) pairs to probe.
    """
    keep = {namespace, *namespaces}
    views = sorted((PodView.from_obj(p) for p in pods), key=lambda v: v.key)
    eps: dict[str, Endpoint] = {}
    for v in views:
        if v.namespace in keep or v.labels.get("k8s-app") == "kube-dns":
            eps.setdefault(endpoint_name(v, namespace), Endpoint(endpoint_name(v, namespace), v))
    newcomer = PodView(namespace, NEWCOMER, {"run": NEWCOMER}, (NEWCOMER_IP,),
                       (("", NEWCOMER_PORT, "TCP"),))
    eps.setdefault(NEWCOMER, Endpoint(NEWCOMER, newcomer))
    policies = [p for pols in policy_sets for p in pols]
    ips = list(addresses)
    for peer in policy_peers(policies):
        if isinstance(peer.get("ipBlock"), Mapping):
            ips += _block_addresses(peer["ipBlock"])
    for ip in ips:
        eps.setdefault(ip, Endpoint(ip, PodView("", ip, {}, (ip,))))
    named: set[Tuple] = {(OTHER_PORT, proto) for proto in PROTOCOLS} | set(tuples)
    for e in eps.values():
        named |= {(port, proto) for _, port, proto in e.view.ports}
    named |= {(int(p), "TCP") for p in service_ports}
    for entry in _port_entries(policies):
        proto = entry.get("protocol") or "TCP"
        for key in ("port", "endPort"):
            value = entry.get(key)
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
                named.add((int(value), str(proto)))
    return Universe(tuple(eps.values()), tuple(sorted(named, key=lambda t: (t[1], t[0]))))


class _Masks:
    """Bit masks over one universe for one policy set."""

    def __init__(self, uni: Universe, namespaces: Sequence[Obj], policies: Sequence[Obj]) -> None:
        self.uni = uni
        self.cache = uni.cache
        self.engine = PolicyEngine([], list(namespaces), list(policies))
        self.all_eps = (1 << len(uni.endpoints)) - 1
        self.all_tuples = (1 << len(uni.tuples)) - 1
        self.index = {t: i for i, t in enumerate(uni.tuples)}
        self._ns_key = json.dumps(sorted(self.engine._ns_labels.items()), sort_keys=True)
        self.by_policy = [(policy_types(p), self.selected(p), p) for p in self.engine.policies]

    def peer_mask(self, peers: list[Obj] | None, policy_ns: str) -> int:
        if not peers:
            return self.all_eps
        mask = 0
        cache = self.cache
        for peer in peers:
            key = ("peer", repr(peer), policy_ns, self._ns_key)
            if key not in cache:
                bits = 0
                for i, e in enumerate(self.uni.endpoints):
                    if self.engine._peer_matches(peer, policy_ns, e.view):
                        bits |= 1 << i
                cache[key] = bits
            mask |= cache[key]
        return mask

    def selected(self, policy: Obj) -> int:
        """Endpoints the policy's podSelector picks (in the policy's namespace)."""
        return selected_mask(self.uni, policy)

    def tuple_mask(self, ports: list[Obj] | None, dst: PodView) -> int:
        if not ports:
            return self.all_tuples
        named = any(isinstance(e.get("port"), str) and not str(e["port"]).isdigit()
                    for e in ports)
        key = ("ports", repr(ports), dst.ports if named else None)
        if key not in self.cache:
            self.cache[key] = self._tuple_mask(ports, dst)
        return self.cache[key]

    def _tuple_mask(self, ports: list[Obj], dst: PodView) -> int:
        mask = 0
        for entry in ports:
            proto = entry.get("protocol") or "TCP"
            want = entry.get("port")
            if isinstance(want, str) and want.isdigit():
                want = int(want)
            end = entry.get("endPort")
            for (port, p), i in self.index.items():
                if p != proto:
                    continue
                if want is None:
                    ok = True
                elif isinstance(want, int):
                    ok = port == want if end is None else port != OTHER_PORT and (
                        want <= port <= int(end))
                else:
                    ok = end is None and any(n == want and c == port and q == proto
                                             for n, c, q in dst.ports)
                if ok:
                    mask |= 1 << i
        return mask


def selected_mask(uni: Universe, policy: Obj) -> int:
    """Endpoints of ``uni`` that ``policy``'s podSelector picks (in its namespace), as bits."""
    ns = _ns(policy)
    sel = (policy.get("spec") or {}).get("podSelector")
    key = ("select", repr(sel), ns)
    if key not in uni.cache:
        uni.cache[key] = sum(1 << i for i, e in enumerate(uni.endpoints)
                             if e.view.namespace == ns and selector_matches(sel, e.view.labels))
    return int(uni.cache[key])


def _selecting(masks: _Masks, index: int, direction: str) -> list[Obj]:
    bit = 1 << index
    return [p for types, sel, p in masks.by_policy if sel & bit and direction in types]


Egress = tuple[int, list[tuple[int, list[tuple[int, list[Obj] | None]]]]]
"""Sources whose egress is open to everything (bits), and each restricted source's rules
(destination mask, port entries)."""


def _egress(m: _Masks) -> Egress:
    open_src = 0
    restricted: list[tuple[int, list[tuple[int, list[Obj] | None]]]] = []
    for s in range(len(m.uni.endpoints)):
        pols = _selecting(m, s, "Egress")
        if not pols:
            open_src |= 1 << s
            continue
        rules = [(m.peer_mask(r.get("to"), _ns(p)), r.get("ports"))
                 for p in pols for r in (p.get("spec") or {}).get("egress") or []]
        if any(dm == m.all_eps and not ports for dm, ports in rules):
            open_src |= 1 << s
        else:
            restricted.append((s, rules))
    return open_src, restricted


def egress_of(uni: Universe, namespaces: Sequence[Obj], policies: Sequence[Obj]) -> Egress:
    """What ``policies``' egress rules allow, for ``reachable(..., egress=)``."""
    return _egress(_Masks(uni, namespaces, policies))


def reachable(uni: Universe, namespaces: Sequence[Obj], policies: Sequence[Obj],
              dests: int | None = None, egress: Egress | None = None
              ) -> dict[tuple[int, int], int]:
    """``(destination index, tuple index) → mask of source indexes`` that may connect.

    Entries with no source are left out, so two results compare with ``==``. ``dests``
    (bits of endpoint indexes) limits the result to those destinations, and ``egress``
    (``egress_of`` policies with the same egress rules) saves reading the egress again:
    an edit of one policy's ingress changes only the entries of the endpoints it selects.
    """
    m = _Masks(uni, namespaces, policies)
    eps = uni.endpoints
    n_t = len(uni.tuples)
    open_src, restricted = egress if egress is not None else _egress(m)
    out: dict[tuple[int, int], int] = {}
    for d, e in enumerate(eps):
        bit = 1 << d
        if dests is not None and not dests & bit:
            continue
        every = m.all_eps  # sources allowed on every tuple (the destination is not isolated)
        per_t: dict[int, int] = {}
        pols = _selecting(m, d, "Ingress")
        if pols:
            every = 0
            for p in pols:
                for r in (p.get("spec") or {}).get("ingress") or []:
                    src = m.peer_mask(r.get("from"), _ns(p))
                    if not src:
                        continue
                    tm = m.tuple_mask(r.get("ports"), e.view)
                    if tm == m.all_tuples:
                        every |= src
                        continue
                    while tm:
                        low = tm & -tm
                        t = low.bit_length() - 1
                        per_t[t] = per_t.get(t, 0) | src
                        tm ^= low
        eg: dict[int, int] = {}
        for s, rules in restricted:
            tm = 0
            for dm, ports in rules:
                if dm & bit:
                    tm |= m.tuple_mask(ports, e.view)
            while tm:
                low = tm & -tm
                t = low.bit_length() - 1
                eg[t] = eg.get(t, 0) | (1 << s)
                tm ^= low
        keep = ~bit
        for t in (range(n_t) if every else per_t):
            mask = (every | per_t.get(t, 0)) & (open_src | eg.get(t, 0)) & keep
            if mask:
                out[(d, t)] = mask
    return out


def _ns(policy: Obj) -> str:
    return (policy.get("metadata") or {}).get("namespace") or "default"


def differences(uni: Universe, expected: dict[tuple[int, int], int],
                actual: dict[tuple[int, int], int]) -> list[tuple[str, str, int, str, bool]]:
    """``(source, destination, port, protocol, expected)`` for every probe that differs."""
    keys = [k for k, v in actual.items() if expected.get(k, 0) != v]
    keys += [k for k in expected if k not in actual]
    out = []
    for key in sorted(keys):
        diff = expected.get(key, 0) ^ actual.get(key, 0)
        d, t = key
        port, proto = uni.tuples[t]
        while diff:
            low = diff & -diff
            s = low.bit_length() - 1
            out.append((uni.endpoints[s].name, uni.endpoints[d].name, port, proto,
                        bool(expected.get(key, 0) & low)))
            diff ^= low
    return out
