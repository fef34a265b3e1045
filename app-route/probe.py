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
does not turn a slow reply into a lost pair.
"""

from __future__ import annotations

import random
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass

from netarena.route.namespaces import enter
from netarena.route.network import Network

__all__ = ["PingMatrix", "pingmesh", "parse_pingall", "Pair", "Watch"]

Pair = tuple[str, str]

_ECHO_REQUEST, _ECHO_REPLY = 8, 0
_PATTERN = bytes(range(0x10, 0x38))  # ping's default fill after its 16-byte timestamp
_STAMP = struct.Struct("<qq")  # struct timeval on a 64-bit machine, as ping writes it
_random = random.SystemRandom()
_RCVBUF_BYTES = 4 << 20
_SO_RCVBUFFORCE = 33  # Linux values the socket module does not export
_IP_PKTINFO = 8


@dataclass(frozen=True)
class PingMatrix:
    """Which ordered pairs of ``nodes`` can ping each other."""

    nodes: tuple[str, ...]
    """Machines in display order (Mininet's: hosts, then ``r0``)."""
    ok: frozenset[Pair]
    """Ordered ``(src, dst)`` pairs that answered."""

    @property
    def pairs(self) -> list[Pair]:
        """Every ordered pair of distinct nodes."""
        return [(s, d) for s in self.nodes for d in self.nodes if s != d]

    @property
    def received(self) -> int:
        """Pairs that answered."""
        return len(self.ok)

    @property
    def loss_pct(self) -> float:
        """Percent of pairs without an answer."""
        total = len(self.pairs)
        return 100.0 * (total - self.received) / total if total else 0.0

    def text(self) -> str:
        """Mininet's ``pingall`` output: ``h1 -> h2 X r0`` lines and the results line."""
        lines = ["*** Ping: testing ping reachability"]
        for s in self.nodes:
            dests = [d if (s, d) in self.ok else "X" for d in self.nodes if d != s]
            lines.append(f"{s} -> {' '.join(dests)}")
        total = len(self.pairs)
        lines.append(
            f"*** Results: {int(self.loss_pct)}% dropped ({self.received}/{total} received)"
        )
        return "\n".join(lines)


def parse_pingall(text: str) -> PingMatrix:
    """Read a pingall block back (the inverse of ``PingMatrix.text``)."""
    rows: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if " -> " in line and not line.startswith("***"):
            src, _, rest = line.partition(" -> ")
            rows.append((src.strip(), rest.split()))
    nodes = tuple(src for src, _ in rows)
    ok = set()
    for src, cells in rows:
        dests = [d for d in nodes if d != src]
        for dst, cell in zip(dests, cells, strict=False):
            if cell != "X":
                ok.add((src, dst))
    return PingMatrix(nodes, frozenset(ok))


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def _icmp(kind: int, ident: int, seq: int, stamp: bytes) -> bytes:
    """An echo packet as ping builds it: header, 16-byte timestamp, fill pattern."""
    payload = stamp + _PATTERN
    header = struct.pack("!BBHHH", kind, 0, 0, ident, seq)
    return struct.pack("!BBHHH", kind, 0, _checksum(header + payload), ident, seq) + payload


_Key = tuple[int, int, bytes]
"""What tells probe packets apart: ICMP identifier, sequence number, timestamp bytes."""


class _Mesh:
    """The sockets of one pingmesh and what each pair has shown so far."""

    def __init__(self, net: Network) -> None:
        self.net = net
        self.sockets: dict[str, socket.socket] = {}
        self.idents: dict[str, int] = {}
        self.by_fd: dict[int, str] = {}
        self.poller = select.poll()  # select() fails past fd 1024 (many live networks)
        self.requests: dict[_Key, Pair] = {}
        self.proofs: dict[_Key, Pair] = {}
        self.sent_at: dict[Pair, float] = {}
        self.rtts: list[float] = []
        self.echoed: set[Pair] = set()
        self.proven: set[Pair] = set()
        self.answered: set[Pair] = set()
        for node in net.plan.nodes:
            with enter(net.netns(node)):
                sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            sock.setblocking(False)
            sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, _RCVBUF_BYTES)
            self.sockets[node] = sock
            self.by_fd[sock.fileno()] = node
            self.poller.register(sock.fileno(), select.POLLIN)
        idents = _random.sample(range(1, 1 << 16), len(net.plan.nodes))
        self.idents = dict(zip(net.plan.nodes, idents, strict=True))

    def close(self) -> None:
        for sock in self.sockets.values():
            sock.close()

    def _fresh_key(self, ident: int, seq: int) -> _Key:
        """A key no request or proof of this flow has used: now, random microseconds."""
        while True:
            stamp = _STAMP.pack(int(time.time()), _random.randrange(1_000_000))
            key = (ident, seq, stamp)
            if key not in self.requests and key not in self.proofs:
                return key

    def send(self, pairs: list[Pair], seq: int) -> None:
        now = time.monotonic()
        for src, dst in pairs:
            key = self._fresh_key(self.idents[src], seq)
            self.requests[key] = (src, dst)
            self.sent_at[(src, dst)] = now
            packet = _icmp(_ECHO_REQUEST, *key)
            try:
                self.sockets[src].sendto(packet, (self.net.plan.address(dst), 0))
            except OSError:  # no route, unreachable: a definite failure this round
                continue

    def _prove(self, node: str, data: bytes, ihl: int, pair: Pair) -> None:
        """Answer a request that reached ``node`` with a fresh token, as the same flow."""
        ident, seq = struct.unpack("!HH", data[ihl + 4 : ihl + 8])
        key = self._fresh_key(ident, seq)
        self.proofs[key] = pair
        packet = _icmp(_ECHO_REPLY, *key)
        source, dest = data[16:20], socket.inet_ntoa(data[12:16])
        info = struct.pack("@i4s4s", 0, source, b"\0\0\0\0")
        try:
            self.sockets[node].sendmsg(
                [packet], [(socket.IPPROTO_IP, _IP_PKTINFO, info)], 0, (dest, 0)
            )
        except OSError:
            return

    def _handle(self, node: str, data: bytes) -> None:
        ihl = (data[0] & 0x0F) * 4
        if len(data) < ihl + 8 + _STAMP.size:
            return
        kind = data[ihl]
        ident, seq = struct.unpack("!HH", data[ihl + 4 : ihl + 8])
        key = (ident, seq, data[ihl + 8 : ihl + 8 + _STAMP.size])
        if kind == _ECHO_REQUEST:
            pair = self.requests.get(key)
            if pair is not None and pair[1] == node:
                self._prove(node, data, ihl, pair)
        elif kind == _ECHO_REPLY and (pair := self.requests.get(key)) is not None:
            if pair[0] == node:
                self.echoed.add(pair)
                self._settle(pair)
        elif kind == _ECHO_REPLY and (pair := self.proofs.get(key)) is not None:
            if pair[0] == node:
                self.proven.add(pair)
                self._settle(pair)

    def _settle(self, pair: Pair) -> None:
        if pair in self.echoed and pair in self.proven and pair not in self.answered:
            self.answered.add(pair)
            self.rtts.append(time.monotonic() - self.sent_at[pair])

    def _drain(self, node: str) -> None:
        sock = self.sockets[node]
        while True:
            try:
                data = sock.recv(2048)
            except BlockingIOError:
                return
            self._handle(node, data)

    def wait(self, pending: set[Pair], deadline: float, quiet_s: float | None = None) -> None:
        """Collect answers until all ``pending`` pairs answered, or ``deadline``.

        With ``quiet_s``, also stop once answers came and then none for ``quiet_s`` (or
        three times the slowest answer, if longer): the rest are unlikely to come and
        the caller confirms the ones that matter.
        """
        last: float | None = None
        while pending - self.answered:
            now = time.monotonic()
            quiet = None if quiet_s is None or last is None else last + self._quiet(quiet_s)
            if now >= deadline or (quiet is not None and now >= quiet):
                break
            limit = deadline if quiet is None else min(deadline, quiet)
            ready = self.poller.poll(max(0.0, limit - now) * 1000)
            before = len(self.answered)
            for fd, _ in ready:
                self._drain(self.by_fd[fd])
            if len(self.answered) > before:
                last = time.monotonic()
        for node in self.sockets:  # a descheduled prober must not miss queued replies
            self._drain(node)

    def _quiet(self, floor_s: float) -> float:
        return max(floor_s, 3 * max(self.rtts[-64:], default=0.0))

    def patience_s(self, floor_s: float, ceiling_s: float) -> float:
        """A confirmation window: 20 times the slowest recent answer, within bounds."""
        slowest = max(self.rtts[-64:], default=0.0)
        return min(ceiling_s, max(floor_s, 20 * slowest))


def pingmesh(
    net: Network,
    timeout_s: float = 0.1,
    expect: frozenset[Pair] | None = None,
    confirm_rounds: int = 1,
    confirm_floor_s: float = 0.25,
    confirm_ceiling_s: float = 2.0,
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

    Returns:
        The reachability matrix.
    """
    pairs = [(s, d) for s in net.plan.nodes for d in net.plan.nodes if s != d]
    must = set(pairs) if expect is None else set(expect)
    mesh = _Mesh(net)
    try:
        mesh.send(pairs, 1)
        mesh.wait(set(pairs), time.monotonic() + timeout_s, quiet_s=0.02)
        for seq in range(2, 2 + confirm_rounds):
            doubtful = sorted(must - mesh.answered)
            if not doubtful:
                break
            window = mesh.patience_s(confirm_floor_s, confirm_ceiling_s)
            net.flush_neighbours()  # a lost ARP request would hold the pair for a second
            mesh.send(doubtful, seq)
            mesh.wait(set(doubtful), time.monotonic() + window)
    finally:
        mesh.close()
    return PingMatrix(net.plan.nodes, frozenset(mesh.answered))


class Watch:
    """Probe some pairs round after round on a thread, while something else happens.

    Used around an agent's command with the pairs that must stay blocked: a command that
    opens one and closes it again before it ends leaves the same state behind, but a
    round caught the pair answering. Rounds are ``period_s`` apart; neighbour caches are
    left alone (the command may be using them).

    Args:
        net: The live network.
        pairs: The pairs to probe.
        period_s: Time between rounds, seconds.
    """

    def __init__(self, net: Network, pairs: frozenset[Pair], period_s: float = 0.2) -> None:
        self.net, self.pairs, self.period_s = net, pairs, period_s
        self.answered: frozenset[Pair] = frozenset()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="route-watch", daemon=True)

    def _run(self) -> None:
        mesh = _Mesh(self.net)
        try:
            seq = 1
            while not self._stop.is_set():
                mesh.send(sorted(self.pairs), seq)
                mesh.wait(set(self.pairs), time.monotonic() + self.period_s)
                seq = seq % 0xFFFF + 1
        finally:
            mesh.close()
            self.answered = frozenset(mesh.answered)

    def __enter__(self) -> Watch:
        if self.pairs:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pairs:
            self._stop.set()
            self._thread.join()
