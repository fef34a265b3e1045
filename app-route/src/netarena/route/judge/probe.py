"""The pingmesh: every ordered pair of machines, probed in parallel, judged unfakeably.

One raw ICMP socket per machine, opened inside its namespace. For each pair ``src -> dst``
the source sends an echo request to ``dst``'s address carrying a fresh random token. A
pair counts as reachable only when all three happen:

1. the request arrives **in dst's namespace** (dst's socket sees that token);
2. the kernel's echo reply comes back to **src's namespace** (src's socket sees it);
3. a *proof* comes back to src: on seeing the request, dst's socket answers with a second
   echo reply carrying a new random token that exists nowhere but in dst's namespace,
   sent from the address the request was sent to, so it is the same flow for firewalls,
   conntrack and NAT.

TCP and UDP flows use the same discipline through each machine's service listeners
(``services.py``): src sends a fresh random token to dst's service port (over a new TCP
connection, or in a UDP datagram), dst's listener answers on that same flow with a token
born in dst's namespace, and the flow counts only when src reads that token back. A
repair that opens one protocol (``iptables -A FORWARD -p icmp -j ACCEPT``) repairs only
that protocol's flows. The undisclosed services (``services.Endpoint``: a port-forward's
target reached through the router's public address, a service only one subnet may reach)
are TCP flows of their own, judged the same way: the token must reach that service's
listener (not any listener of the machine) and its answer come back on the same
connection.

No agent process runs while probing, and configuration alone (NAT to a local address,
addresses copied to another machine, policy routing to a local table, neighbour tricks,
duplicated packets) cannot make a token born in dst's namespace appear in src's: a broken
path cannot look repaired.

The requests are shaped exactly as iputils ``ping`` sends them (84 bytes, its header
fields, a payload of the current ``struct timeval`` then bytes 0x10, 0x11, ...): the token
is the timestamp's microseconds, an identifier and a sequence number, all of which vary in
real pings too. A filter, queue or classifier that lets the judge's packets through lets
an operator's ``ping`` through as well, so opening a path for the judge alone is
impossible.

Timing: requests go out at once; the first round ends when every pair answered or answers
stop coming. Pairs expected to answer that did not get patient confirmation rounds (from
empty neighbour caches) whose length adapts to the replies' latency, so a loaded machine
does not turn a slow reply into a lost pair. Each confirmation round also re-sends a few
*controls*, flows of the same kinds that answered in the first round, through the router
where possible: once every control answered again, a doubtful flow that is alive would
have answered about as soon, so the round ends ``_CONTROL_FACTOR`` times the controls'
latency later (at least ``_CONTROL_FLOOR_S``) instead of at its full window. A starved
prober delays the controls as much as the doubtful flows, so the cut moves with the load;
a control that does not answer leaves the full window.
"""

from __future__ import annotations

import threading
import time

from netarena.route.emulator.live import LiveNetwork
from netarena.route.emulator.plan import NetworkPlan
from netarena.route.emulator.services import service_flows
from netarena.route.judge.errorbudget import judge_quiet
from netarena.route.judge.mesh import Mesh
from netarena.route.judge.pingall import PROTOCOLS, Flow, Pair, PingMatrix
from netarena.route.judge.unseen import Conntrack, judge_sources

__all__ = ["pingmesh", "Watch"]

_CONTROL_FACTOR = 4.0
_CONTROL_FLOOR_S = 0.05
"""A confirmation round ends this long after its controls answered (``_confirm``)."""
_SLICE_S = 0.005


def pingmesh(
    net: LiveNetwork,
    timeout_s: float = 0.1,
    expect: frozenset[Pair] | None = None,
    confirm_rounds: int = 1,
    confirm_floor_s: float = 0.25,
    confirm_ceiling_s: float = 2.0,
    protocols: tuple[str, ...] = PROTOCOLS,
    expect_services: frozenset[Flow] | None = None,
    services: bool = True,
    controlled: bool = True,
) -> PingMatrix:
    """Probe every ordered pair of machines of ``net`` in parallel.

    Args:
        net: The live network.
        timeout_s: Longest first round, seconds. It ends early once answers stop coming
            (20 ms of quiet, or three times the slowest answer).
        expect: Pairs believed reachable (the last measurement). ``None`` expects all.
        confirm_rounds: Extra rounds for expected pairs that did not answer; each starts
            from empty neighbour caches (a lost ARP request is otherwise retried only a
            second later) and waits 20 times the slowest answer seen, between
            ``confirm_floor_s`` and ``confirm_ceiling_s``. A pair is reported lost only if
            it failed them all.
        confirm_floor_s: Shortest confirmation window, seconds.
        confirm_ceiling_s: Longest confirmation window, seconds.
        protocols: What to probe (every protocol unless measuring one for comparison).
        expect_services: Undisclosed services' flows believed to answer, confirmed like
            ``expect``'s pairs. ``None`` expects all.
        services: Whether to probe the undisclosed services' flows too.
        controlled: Whether confirmation rounds end early once their controls answered
            (see the module docstring); patient re-measurements wait their whole window.

    Returns:
        The reachability matrix.
    """
    pairs = [(s, d) for s in net.plan.nodes for d in net.plan.nodes if s != d]
    flows = [(p, s, d) for p in protocols for s, d in pairs]
    must = {(p, s, d) for p in protocols for s, d in (pairs if expect is None else expect)}
    with judge_quiet(net.netns(node) for node in net.plan.nodes):  # errorbudget.py
        mesh = Mesh(net)
        try:
            if services:
                served = service_flows(net.service_endpoints())
                flows += served
                must |= set(served if expect_services is None else expect_services & set(served))
            mesh.send(flows, 1)
            mesh.wait(set(flows), time.monotonic() + timeout_s, quiet_s=0.02)
            for seq in range(2, 2 + confirm_rounds):
                doubtful = sorted(must - mesh.answered)
                if not doubtful:
                    break
                window = mesh.patience_s(confirm_floor_s, confirm_ceiling_s)
                controls = _controls(net, mesh.answered, doubtful) if controlled else []
                net.flush_neighbours()  # a lost ARP request would hold the pair for a second
                sent = time.monotonic()
                mesh.send(doubtful + controls, seq)
                _confirm(mesh, set(doubtful), controls, sent, sent + window)
        finally:
            mesh.close()
    return mesh.matrix(protocols, services)


def _controls(net: LiveNetwork, answered: set[Flow], doubtful: list[Flow]) -> list[Flow]:
    """Two answered flows per kind of doubtful flow, crossing the router where possible.

    Empty when some kind has none, or on a network of routers (FRR: paths of many hops,
    which one pair's latency does not bound): the round then waits its whole window.
    """
    plan = net.plan
    if not isinstance(plan, NetworkPlan):
        return []
    subnet = {h.name: h.subnet for h in plan.hosts}

    def hops(flow: Flow) -> int:  # host to host across the router, then the router's own
        _, src, dst = flow
        if src in subnet and dst in subnet:
            return 2 if subnet[src] != subnet[dst] else 0
        return 1

    chosen: list[Flow] = []
    for kind in sorted({f[0] for f in doubtful}):  # icmp, tcp, udp, or a service's
        peers = sorted((f for f in answered if f[0] == kind), key=lambda f: (-hops(f), f))
        if not peers:
            return []
        chosen += peers[:2]
    return chosen


def _confirm(mesh: Mesh, doubtful: set[Flow], controls: list[Flow], sent: float,
             deadline: float) -> None:
    """Wait for the doubtful flows until ``deadline``, or until shortly after the controls."""
    cut = deadline
    while doubtful - mesh.answered and (now := time.monotonic()) < cut:
        mesh.wait(doubtful, min(cut, now + _SLICE_S) if controls else cut)
        if controls and cut == deadline and all(
                mesh.heard.get(c, 0.0) >= sent for c in controls):
            took = max(mesh.heard[c] for c in controls) - sent
            cut = min(deadline, sent + took + max(_CONTROL_FLOOR_S, _CONTROL_FACTOR * took))


class Watch:
    """Probe some pairs round after round on a thread, while something else happens.

    Used around an agent's command with the pairs that must stay blocked: a command that
    opens one and closes it again before it ends leaves the same state behind, but a
    round caught the pair answering. Rounds are ``period_s`` apart; neighbour caches are
    left alone (the command may be using them). A pair refused with an ICMP error (a
    REJECT rule, a ``prohibit`` route) would spend the refusing node's error budget for
    the source host, which the agent's own probes need: each round is sent inside
    ``judge_quiet`` over the ``quiet`` nodes' namespaces, for ``QUIET_S`` (the errors come
    back within it), so it spends none (``errorbudget.py``). The conntrack entries its
    rounds make are deleted after each round and once the watch ends (``unseen.py``).

    Args:
        net: The live network.
        pairs: The pairs to probe.
        period_s: Time between rounds, seconds.
        extra: Further flows to probe (undisclosed services' flows that must stay blocked).
        quiet: The nodes whose limits each round leaves alone (every node but the one
            the command runs on, whose settings it may read).
    """

    QUIET_S = 0.02
    """How long each round's limits are lifted, seconds."""

    def __init__(
        self,
        net: LiveNetwork,
        pairs: frozenset[Pair],
        period_s: float = 0.2,
        extra: frozenset[Flow] = frozenset(),
        quiet: tuple[str, ...] = (),
    ) -> None:
        self.net, self.pairs, self.period_s, self.extra = net, pairs, period_s, extra
        self.quiet = tuple(net.netns(node) for node in quiet)
        self.answered: frozenset[Flow] = frozenset()
        """Flows (every protocol) that answered during the watch."""
        self._stop = threading.Event()
        self._sources: set[tuple[int, int]] = set()
        self._conntrack: Conntrack
        self._thread = threading.Thread(target=self._run, name="route-watch", daemon=True)

    def _run(self) -> None:
        mesh = Mesh(self.net)
        try:
            seq = 1
            flows = sorted({(p, s, d) for p in PROTOCOLS for s, d in self.pairs} | self.extra)
            while not self._stop.is_set():
                start = time.monotonic()
                mesh.drop_connections()
                with judge_quiet(self.quiet):
                    mesh.send(flows, seq)
                    self._sources |= judge_sources(mesh)
                    mesh.wait(set(flows), time.monotonic() + self.QUIET_S)
                self._conntrack.clean(self._sources)  # unseen.py
                mesh.wait(set(flows), start + self.period_s)
                seq = seq % 0xFFFF + 1
        finally:
            mesh.close()
            self.answered = frozenset(mesh.answered)

    def __enter__(self) -> Watch:
        if self.pairs or self.extra:
            self._conntrack = Conntrack(self.net.netns(n) for n in self.net.plan.nodes)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pairs or self.extra:
            self._stop.set()
            self._thread.join()
            self._conntrack.close(self._sources)
