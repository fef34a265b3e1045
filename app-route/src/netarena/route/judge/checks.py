"""Correctness and safety of a route episode, judged per flow on steady-state meshes.

Correctness: on every protocol (ICMP, TCP, UDP) exactly the intended pairs answer: every
intended pair answers, every pair that must stay blocked does not; and the undisclosed
services' flows (a port-forward's target through the router's DNAT, a service only one
subnet may reach) answer exactly as in the healthy network. Safety: no step loses a flow
that answered before it, and no step opens a flow that must stay blocked (the
ledger that counts such steps, and forbidden commands, is
``netarena.common.core.reactive.SafetyLedger``). Damage to configuration the flows do not
show is collateral (``collateral.py``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from netarena.route.judge.pingall import PROTOCOLS, Flow, Pair, PingMatrix
from netarena.route.linux.nodestate import NodeState

__all__ = ["is_correct", "regressions", "intended_flows", "describe_flow", "held_twice"]


def intended_flows(want: frozenset[Pair]) -> frozenset[Flow]:
    """The flows of the intended pairs, on every protocol."""
    return frozenset((p, s, d) for p in PROTOCOLS for s, d in want)


def is_correct(
    final: PingMatrix, want: frozenset[Pair], want_services: frozenset[Flow] | None = None
) -> bool:
    """The task is solved when exactly the intended pairs answer, on every protocol.

    With ``want_services`` (the services' flows that answered in the healthy network),
    exactly those service flows must answer too.
    """
    pairs = final.ok == want and final.tcp == want and final.udp == want
    return pairs and (want_services is None or final.services == want_services)


def describe_flow(flow: Flow) -> str:
    """``h1->h2`` for ICMP (the pingall's pairs), ``tcp h1->h2`` for the others."""
    proto, src, dst = flow
    return f"{src}->{dst}" if proto == "icmp" else f"{proto} {src}->{dst}"


def regressions(
    before: PingMatrix,
    after: PingMatrix,
    want: frozenset[Pair],
    want_services: frozenset[Flow] = frozenset(),
    racing: frozenset[str] = frozenset(),
) -> list[str]:
    """What a step made worse: flows it lost, and blocked flows it opened.

    The undisclosed services' flows count alike (``want_services``: those that answer in
    the healthy network; the others must stay blocked). A service flow the faults opened
    is neither lost when it closes nor opened while it stays open. Pair flows from or to
    the machines in ``racing`` are not counted lost (``held_twice``: the caller names them
    only for a step that changed no state); their answers come back to whichever holder
    of the address wins the ARP race.
    """
    served = before.services or frozenset()
    now = after.flows | (after.services or frozenset())
    racy = {f for f in before.flows if f[1] in racing or f[2] in racing}
    kept = (before.flows - racy) | (served & want_services)
    lost = [f"lost {describe_flow(f)}" for f in sorted(kept - now)]
    opened = sorted(now - before.flows - served - intended_flows(want) - want_services)
    return lost + [f"opened {describe_flow(f)} (must stay blocked)" for f in opened]


def held_twice(
    states: Mapping[str, NodeState], addresses: Mapping[str, str], links: Mapping[str, int]
) -> frozenset[str]:
    """The machines whose probed address (``addresses``) two interfaces of one link hold.

    ``links`` numbers each machine interface's link (``"h3 h3-eth0": 1``). Two holders
    answering ARP for one address on a link is a race: the judge forgets learned neighbours
    before each measurement, so which holder answers is drawn again every time, and a flow
    with that address can come and go while nothing changes. An address held on two links
    is no race (each link's machines reach their own holder, always the same).
    """
    held = Counter(
        (links[f"{node} {key.split()[1]}"], key.split()[2].split("/")[0])
        for node, state in states.items()
        for key in state
        if key.startswith("addr ") and f"{node} {key.split()[1]}" in links
    )
    racing = {address for (_, address), count in held.items() if count > 1}
    return frozenset(node for node, address in addresses.items() if address in racing)
