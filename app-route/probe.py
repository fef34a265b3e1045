"""Parallel pingmesh over every ordered pair of machines, in Mininet's pingall format.

One process per pair (``ping -c1``) costs ~0.5 s for a 4x4 network and reports false
failures while ARP caches are cold. Instead this opens one raw ICMP socket inside each
source namespace (``setns`` on the calling thread), sends every echo request at once and
collects replies with ``select`` until all arrived or the deadline passed. Pairs that failed
are retried once after ARP has had the first round to resolve, so a healthy network is
never reported broken.
"""

from __future__ import annotations

import random
import select
import socket
import struct
import time
from dataclasses import dataclass

from netarena.route.namespaces import enter
from netarena.route.topology import Network

__all__ = ["PingMatrix", "pingmesh", "parse_pingall"]

_ECHO_REQUEST, _ECHO_REPLY = 8, 0


@dataclass(frozen=True)
class PingMatrix:
    """Which ordered pairs of ``nodes`` can ping each other."""

    nodes: tuple[str, ...]
    """Machines in display order (hosts, then ``r0``)."""
    ok: frozenset[tuple[str, str]]
    """Ordered ``(src, dst)`` pairs that got a reply."""

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Every ordered pair of distinct nodes."""
        return [(s, d) for s in self.nodes for d in self.nodes if s != d]

    @property
    def received(self) -> int:
        """Pairs that got a reply."""
        return len(self.ok)

    @property
    def loss_pct(self) -> float:
        """Percent of pairs without a reply (0.0 on a healthy network)."""
        total = len(self.pairs)
        return 100.0 * (total - self.received) / total if total else 0.0

    @property
    def healthy(self) -> bool:
        """Every pair answered."""
        return self.received == len(self.pairs)

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


def _echo(ident: int, seq: int) -> bytes:
    payload = b"netarena-route-probe".ljust(56, b".")  # standard 84-byte ping
    header = struct.pack("!BBHHH", _ECHO_REQUEST, 0, 0, ident, seq)
    csum = _checksum(header + payload)
    return struct.pack("!BBHHH", _ECHO_REQUEST, 0, csum, ident, seq) + payload


class _Prober:
    """One raw ICMP socket per source node; replies matched by (source, address, ident)."""

    def __init__(self, sockets: dict[str, socket.socket], rng: random.Random) -> None:
        self.sockets = sockets
        self.idents = {src: rng.randrange(1, 0xFFFF) for src in sockets}
        self.by_fd = {s.fileno(): src for src, s in sockets.items()}
        self.waiting: dict[tuple[str, str], tuple[str, str]] = {}
        self.answered: set[tuple[str, str]] = set()

    def send(self, targets: dict[tuple[str, str], str], seq: int) -> None:
        for (src, dst), ip in targets.items():
            self.waiting[(src, ip)] = (src, dst)
            try:
                self.sockets[src].sendto(_echo(self.idents[src], seq), (ip, 0))
            except OSError:  # no route, unreachable: a definite failure this round
                continue

    def _drain(self, src: str) -> None:
        sock = self.sockets[src]
        while True:
            try:
                data, (addr, _) = sock.recvfrom(2048)
            except BlockingIOError:
                return
            ihl = (data[0] & 0x0F) * 4
            if len(data) < ihl + 8:
                continue
            kind, _, _, ident, _ = struct.unpack("!BBHHH", data[ihl : ihl + 8])
            if kind != _ECHO_REPLY or ident != self.idents[src]:
                continue
            if pair := self.waiting.pop((src, addr), None):
                self.answered.add(pair)

    def wait(self, timeout_s: float) -> None:
        """Collect replies until all came or ``timeout_s`` passed, then drain once more.

        The extra drain is there because a descheduled prober must not miss replies already
        queued.
        """
        deadline = time.monotonic() + timeout_s
        while self.waiting and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(self.by_fd), [], [], left)
            for fd in ready:
                self._drain(self.by_fd[fd])
        for src in self.sockets:
            self._drain(src)


def _drop_self_answers(
    net: Network, answered: set[tuple[str, str]], targets: dict[tuple[str, str], str]
) -> set[tuple[str, str]]:
    """Remove pairs whose target address is (also) assigned to the source itself.

    A node holding a duplicate of another machine's address answers its own ping over
    loopback; that is not reaching the other machine. An address is local exactly when a
    socket in the source's namespace can bind to it.
    """
    kept = set(answered)
    for src in {s for s, _ in answered}:
        with enter(net.netns(src)):
            probes = [
                (pair, socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
                for pair in answered
                if pair[0] == src
            ]
        for pair, sock in probes:
            with sock:
                try:
                    sock.bind((targets[pair], 0))
                except OSError:
                    continue
                kept.discard(pair)
    return kept


def pingmesh(
    net: Network,
    timeout_s: float = 0.1,
    retry_timeout_s: float = 0.2,
    seed: int | None = None,
    expect: frozenset[tuple[str, str]] = frozenset(),
    confirm_timeout_s: float = 2.0,
) -> PingMatrix:
    """Ping every ordered pair of machines of ``net`` in parallel.

    Args:
        net: The live network.
        timeout_s: Wait for replies of the first round, seconds (ends early when all came).
        retry_timeout_s: Wait for the retry of pairs that failed the first round.
        seed: Seeds the ICMP identifiers (tests); random otherwise.
        expect: Pairs that answered last time. One that fails both rounds gets two more
            echoes, half of ``confirm_timeout_s`` apart, before it is reported lost: a late
            reply on a loaded machine, or a neighbour entry still resolving after an
            address change, must not turn a harmless step into an unsafe one.
        confirm_timeout_s: Total wait of those confirmation echoes, seconds.

    Returns:
        The reachability matrix. A pair counts as reachable if either round got a reply.
    """
    rng = random.Random(seed)
    nodes = net.spec.nodes
    targets = {(s, d): net.spec.target_ip(s, d) for s in nodes for d in nodes if s != d}
    sockets: dict[str, socket.socket] = {}
    try:
        for node in nodes:
            with enter(net.netns(node)):
                sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
            sock.setblocking(False)
            sockets[node] = sock
        prober = _Prober(sockets, rng)
        prober.send(targets, 1)
        prober.wait(timeout_s)
        missing = {p: ip for p, ip in targets.items() if p not in prober.answered}
        if missing:
            prober.send(missing, 2)
            prober.wait(retry_timeout_s)
        for seq in (3, 4):  # two patient echoes: a neighbour entry may still be resolving
            doubtful = {
                p: ip for p, ip in targets.items() if p in expect and p not in prober.answered
            }
            if not doubtful:
                break
            prober.send(doubtful, seq)
            prober.wait(confirm_timeout_s / 2)
        ok = _drop_self_answers(net, prober.answered, targets)
    finally:
        for sock in sockets.values():
            sock.close()
    return PingMatrix(tuple(nodes), frozenset(ok))
