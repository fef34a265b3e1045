"""Who peers with whom and on what terms: AS relationships and the routing policy they make.

Each pair of neighbouring ASes is either provider and customer or peers. Policies follow
the usual commercial rules (Gao-Rexford):

* a route from a customer is preferred to one from a peer, and that to one from a
  provider (local preference ``LOCAL_PREF``);
* an AS accepts from a customer or a peer only that AS's *cone* (its own prefixes and its
  customers' cones), and from a provider everything but its own prefixes;
* it announces to peers and providers only its own cone; to customers everything.

On each border router that becomes configuration: per customer or peer neighbour a
prefix-list of its cone (``CONE-n``) and a route-map that admits it with the local
preference of the relationship (``FROM-CUST-n``, ``FROM-PEER-n``), or, where the plan says
so (``BgpPlan.filtered_in``), the prefix-list bound inbound itself and a route-map that
only sets the preference (both styles are common; with only the first, a route-map entry
setting a preference without matching a list was always the provider's); for providers a
route-map that drops the AS's own prefixes and admits the rest (``FROM-TRANSIT``); a
prefix-list of the AS's own cone bound outbound towards peers and providers
(``OWN-CONE``). ``Policy`` holds a router's lists, maps and bindings; ``admits`` and
``imports`` evaluate them as bgpd does, so the model (``bgp_model``) reads a faulted
policy the same way the routers do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

__all__ = [
    "LOCAL_PREF",
    "Entry",
    "MapEntry",
    "Policy",
    "admits",
    "design_policy",
    "imports",
    "policy_lines",
]

LOCAL_PREF = {"customer": 200, "peer": 100, "provider": 50}
"""Local preference given to routes by the relationship of the AS they come from."""
DEFAULT_PREF = 100
"""bgpd's local preference where no policy sets one."""

Entry = tuple[int, str, str]
"""A prefix-list entry: ``(seq, permit|deny, prefix)``."""
MapEntry = tuple[int, str, str | None, int | None]
"""A route-map entry: ``(seq, permit|deny, prefix-list it matches, local preference set)``."""


class _Session(Protocol):
    @property
    def kind(self) -> str: ...

    def peer(self, router: str) -> str: ...

    def addr(self, router: str) -> str: ...


class BgpDesign(Protocol):
    """What ``design_policy`` reads of a plan.

    A ``bgp_plan.BgpPlan``; that module imports this one, so the plan is known here by
    what it offers.
    """

    @property
    def asn(self) -> dict[str, int]: ...

    @property
    def filtered_in(self) -> tuple[str, ...]: ...

    def sessions_of(self, router: str) -> Sequence[_Session]: ...

    def relation(self, mine: int, theirs: int) -> str: ...

    def own_prefixes(self, asn: int) -> frozenset[str]: ...

    def cone(self, asn: int) -> frozenset[str]: ...


@dataclass(frozen=True)
class Policy:
    """One router's routing policy: lists, maps, and what each eBGP neighbour binds."""

    prefix_lists: dict[str, tuple[Entry, ...]]
    """Name → entries in sequence order."""
    route_maps: dict[str, tuple[MapEntry, ...]]
    """Name → entries in sequence order."""
    bind_in: dict[str, str]
    """Neighbour address → the route-map applied to what it sends."""
    bind_out: dict[str, str]
    """Neighbour address → the prefix-list applied to what is sent to it."""
    filter_in: dict[str, str] = field(default_factory=dict)
    """Neighbour address → the prefix-list applied to what it sends, before the route-map."""

    def without_entry(self, name: str, prefix: str) -> Policy:
        """The policy with ``name``'s entry for ``prefix`` removed."""
        lists = dict(self.prefix_lists)
        lists[name] = tuple(e for e in lists[name] if e[2] != prefix)
        return replace(self, prefix_lists=lists)


def admits(entries: tuple[Entry, ...], prefix: str) -> bool:
    """Whether a prefix-list permits ``prefix`` (first match; none: denied)."""
    return next((action == "permit" for _, action, p in entries if p == prefix), False)


def imports(policy: Policy, neighbour: str, prefix: str) -> int | None:
    """The local preference ``prefix`` from ``neighbour`` gets, or None when dropped."""
    listed = policy.filter_in.get(neighbour)
    if listed is not None and not admits(policy.prefix_lists.get(listed, ()), prefix):
        return None
    name = policy.bind_in.get(neighbour)
    if name is None:
        return DEFAULT_PREF
    for _, action, match, pref in policy.route_maps.get(name, ()):
        if match is None or admits(policy.prefix_lists.get(match, ()), prefix):
            return (pref or DEFAULT_PREF) if action == "permit" else None
    return None


def policy_lines(policy: Policy) -> list[str]:
    """The policy's prefix-lists and route-maps, as configuration lines."""
    lines = [
        f"ip prefix-list {name} seq {seq} {action} {prefix}"
        for name, entries in sorted(policy.prefix_lists.items())
        for seq, action, prefix in entries
    ]
    lines += ["!"] if lines else []
    for name, map_entries in sorted(policy.route_maps.items()):
        for seq, action, match, pref in map_entries:
            lines.append(f"route-map {name} {action} {seq}")
            if match is not None:
                lines.append(f" match ip address prefix-list {match}")
            if pref is not None:
                lines.append(f" set local-preference {pref}")
            lines += ["exit", "!"]
    return lines


def _numbered(prefixes: frozenset[str]) -> tuple[Entry, ...]:
    return tuple((5 * (i + 1), "permit", p) for i, p in enumerate(sorted(prefixes)))


def design_policy(plan: BgpDesign, router: str) -> Policy:
    """``router``'s policy as the design makes it (empty for a router with no eBGP)."""
    mine = plan.asn[router]
    lists: dict[str, tuple[Entry, ...]] = {}
    maps: dict[str, tuple[MapEntry, ...]] = {}
    bind_in: dict[str, str] = {}
    bind_out: dict[str, str] = {}
    filter_in: dict[str, str] = {}
    count = 0
    for session in plan.sessions_of(router):
        if session.kind == "ibgp":
            continue
        peer = session.peer(router)
        address, theirs = session.addr(peer), plan.asn[peer]
        rel = plan.relation(mine, theirs)
        if rel == "provider":
            lists["OWN-PREFIXES"] = _numbered(plan.own_prefixes(mine))
            maps["FROM-TRANSIT"] = (
                (5, "deny", "OWN-PREFIXES", None),
                (10, "permit", None, LOCAL_PREF["provider"]),
            )
            bind_in[address] = "FROM-TRANSIT"
        else:
            count += 1
            cone = f"CONE-{count}"
            name = f"FROM-{'CUST' if rel == 'customer' else 'PEER'}-{count}"
            lists[cone] = _numbered(plan.cone(theirs))
            if f"{router}<{peer}" in plan.filtered_in:
                filter_in[address] = cone
                maps[name] = ((10, "permit", None, LOCAL_PREF[rel]),)
            else:
                maps[name] = ((10, "permit", cone, LOCAL_PREF[rel]),)
            bind_in[address] = name
        if rel != "customer":
            lists["OWN-CONE"] = _numbered(plan.cone(mine))
            bind_out[address] = "OWN-CONE"
    return Policy(lists, maps, bind_in, bind_out, filter_in)
