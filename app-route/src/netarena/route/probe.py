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
does not turn a slow reply into a lost pair.
"""

from __future__ import annotations

import contextlib
import errno
import random
import select
import socket
import struct
import threading
import time
from dataclasses import dataclass
from typing import NamedTuple

from netarena.route.namespaces import enter
from netarena.route.network import Network
from netarena.route.services import endpoints, service_flows

__all__ = ["PingMatrix", "pingmesh", "parse_pingall", "Pair", "Flow", "PROTOCOLS", "Watch"]

Pair = tuple[str, str]
Flow = tuple[str, str, str]
"""``(protocol, src, dst)``."""


class _Listening(NamedTuple):
    """A TCP listener the mesh watches, and the port its tokens must have been sent to."""

    sock: socket.socket
    port: int


_Extra = Flow | _Listening | int | None
"""What a watched socket's handler needs: a client's flow, a listener, a connection's port."""

PROTOCOLS = ("icmp", "tcp", "udp")
"""Every flow is judged on each of these."""

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
    """Ordered ``(src, dst)`` pairs that answered pings."""
    tcp: frozenset[Pair] | None = None
    """Pairs whose TCP service exchange succeeded (``None``: not measured)."""
    udp: frozenset[Pair] | None = None
    """Pairs whose UDP service exchange succeeded (``None``: not measured)."""
    services: frozenset[Flow] | None = None
    """Undisclosed services' flows that answered (``None``: not measured). They are not
    part of ``flows`` nor of the text the agent sees: the prompt does not describe them."""

    @property
    def flows(self) -> frozenset[Flow]:
        """Every ``(protocol, src, dst)`` that answered."""
        found = {("icmp", s, d) for s, d in self.ok}
        for proto, pairs in (("tcp", self.tcp), ("udp", self.udp)):
            found |= {(proto, s, d) for s, d in pairs or ()}
        return frozenset(found)

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
        for proto, pairs in (("TCP", self.tcp), ("UDP", self.udp)):
            if pairs is None:
                continue
            lines.append(f"*** {proto}: testing service reachability")
            for s in self.nodes:
                dests = [d if (s, d) in pairs else "X" for d in self.nodes if d != s]
                lines.append(f"{s} => {' '.join(dests)}")
            lines.append(f"*** {proto} results: {len(pairs)}/{total} answered")
        return "\n".join(lines)


def _rows(text: str, arrow: str, after: str | None = None) -> list[tuple[str, list[str]]]:
    rows: list[tuple[str, list[str]]] = []
    inside = after is None
    for line in text.splitlines():
        if line.startswith("***"):
            inside = after is None or line.startswith(after)
        elif inside and arrow in line:
            src, _, rest = line.partition(arrow)
            rows.append((src.strip(), rest.split()))
    return rows


def _answered(rows: list[tuple[str, list[str]]], nodes: tuple[str, ...]) -> frozenset[Pair]:
    ok = set()
    for src, cells in rows:
        dests = [d for d in nodes if d != src]
        for dst, cell in zip(dests, cells, strict=False):
            if cell != "X":
                ok.add((src, dst))
    return frozenset(ok)


def parse_pingall(text: str) -> PingMatrix:
    """Read a pingall block back (the inverse of ``PingMatrix.text``, TCP and UDP too)."""
    rows = _rows(text, " -> ")
    nodes = tuple(src for src, _ in rows)
    services = {}
    for proto in ("TCP", "UDP"):
        found = _rows(text, " => ", f"*** {proto}:")
        services[proto] = _answered(found, nodes) if found else None
    return PingMatrix(nodes, _answered(rows, nodes), services["TCP"], services["UDP"])


def _checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    total: int = sum(struct.unpack(f"!{len(data) // 2}H", data))
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
_TOKEN_BYTES = 16
_ABORT = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on, 0 s: a closed client socket resets at once (no FIN, no TIME_WAIT)."""


class _Mesh:
    """The sockets of one pingmesh and what each flow has shown so far.

    ICMP as described above; TCP and UDP through the nodes' listeners (``services.py``):
    src sends a fresh token to dst's service port (over a new connection, or in a
    datagram), dst's listener looks it up and answers on the same flow with a token born
    there, and the flow counts once src reads that token back.
    """

    def __init__(self, net: Network) -> None:
        self.net = net
        assert net.services is not None
        self.services = net.services
        self.endpoints = endpoints(net.plan, net.local)
        self.services.lock.acquire()
        self.sockets: dict[str, socket.socket] = {}
        self.clients: dict[str, socket.socket] = {}
        self.handlers: dict[int, tuple[str, str, _Extra]] = {}
        self.idents: dict[str, int] = {}
        self.poller = select.poll()  # select() fails past fd 1024 (many live networks)
        self.requests: dict[_Key, Pair] = {}
        self.proofs: dict[_Key, Pair] = {}
        self.tokens: dict[bytes, Flow] = {}
        self.proof_tokens: dict[bytes, Flow] = {}
        self.sent_at: dict[Flow, float] = {}
        self.rtts: list[float] = []
        self.echoed: set[Pair] = set()
        self.proven: set[Pair] = set()
        self.answered: set[Flow] = set()
        self.listening_since = 0.0
        self.progress = 0
        """TCP exchanges under way (connections made, tokens answered): not quiet yet."""
        self.open_fds: dict[int, socket.socket] = {}
        try:
            for node in net.plan.nodes:
                with enter(net.netns(node)):
                    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
                    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                sock.setsockopt(socket.SOL_SOCKET, _SO_RCVBUFFORCE, _RCVBUF_BYTES)
                self.sockets[node] = sock
                self.clients[node] = client
                self._watch(sock, "icmp", node)
                self._watch(client, "udp-client", node)
                self._watch(self.services.udp[node], "udp-server", node, own=False)
                judge = _Listening(self.services.tcp[node], net.local.tcp_port)
                self._watch(judge[0], "tcp-listen", node, judge, own=False)
            for (node, port), listener in self.services.extra.items():
                self._watch(listener, "tcp-listen", node, _Listening(listener, port), own=False)
        except BaseException:
            self.close()
            raise
        idents = _random.sample(range(1, 1 << 16), len(net.plan.nodes))
        self.idents = dict(zip(net.plan.nodes, idents, strict=True))

    def _watch(
        self, sock: socket.socket, role: str, node: str, extra: _Extra = None,
        events: int = select.POLLIN, own: bool = True,
    ) -> None:
        sock.setblocking(False)
        self.handlers[sock.fileno()] = (role, node, extra)
        if own:
            self.open_fds[sock.fileno()] = sock
        self.poller.register(sock.fileno(), events)

    def _forget(self, sock: socket.socket) -> None:
        fd = sock.fileno()
        if fd >= 0:
            self.handlers.pop(fd, None)
            self.open_fds.pop(fd, None)
            with contextlib.suppress(KeyError, ValueError):
                self.poller.unregister(fd)
        sock.close()

    def drop_connections(self) -> None:
        """Forget the TCP connections of earlier rounds (still connecting, or waiting)."""
        for fd, (role, _, _) in list(self.handlers.items()):
            if role in ("tcp-client", "tcp-wait", "tcp-conn") and fd in self.open_fds:
                self._forget(self.open_fds[fd])

    def close(self) -> None:
        for sock in list(self.open_fds.values()):
            sock.close()
        self.open_fds.clear()
        for role, node, extra in list(self.handlers.values()):
            if role == "udp-server":
                self._discard(self.services.udp[node])
            elif role == "tcp-listen":
                assert isinstance(extra, _Listening)
                self._accept_all(node, extra, keep=False)
        self.services.lock.release()

    def _fresh_key(self, ident: int, seq: int) -> _Key:
        """A key no request or proof of this flow has used: now, random microseconds."""
        while True:
            stamp = _STAMP.pack(int(time.time()), _random.randrange(1_000_000))
            key = (ident, seq, stamp)
            if key not in self.requests and key not in self.proofs:
                return key

    def _token(self, table: dict[bytes, Flow], flow: Flow) -> bytes:
        while (token := _random.randbytes(_TOKEN_BYTES)) in table:
            pass
        table[token] = flow
        return token

    def send(self, flows: list[Flow], seq: int) -> None:
        now = time.monotonic()
        connects: dict[str, list[Flow]] = {}
        for flow in flows:
            proto, src, dst = flow
            self.sent_at[flow] = now
            address = self.net.plan.address(dst)
            try:
                if proto == "icmp":
                    key = self._fresh_key(self.idents[src], seq)
                    self.requests[key] = (src, dst)
                    self.sockets[src].sendto(_icmp(_ECHO_REQUEST, *key), (address, 0))
                elif proto == "udp":
                    token = self._token(self.tokens, flow)
                    self.clients[src].sendto(token, (address, self.net.local.udp_port))
                else:
                    connects.setdefault(src, []).append(flow)
            except OSError:  # no route, unreachable: a definite failure this round
                continue
        for src, group in connects.items():
            with enter(self.net.netns(src)):  # one namespace switch per source
                made = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in group]
            for sock, flow in zip(made, group, strict=True):
                self._connect(sock, flow)
        self.listening_since = time.monotonic()

    def _connect(self, sock: socket.socket, flow: Flow) -> None:
        sock.setblocking(False)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _ABORT)  # closes with a RST
        if (endpoint := self.endpoints.get(flow[0])) is not None:
            address = (endpoint.address, endpoint.connect_port)
        else:
            address = (self.net.plan.address(flow[2]), self.net.local.tcp_port)
        code = sock.connect_ex(address)
        if code not in (0, errno.EINPROGRESS):
            sock.close()
            return
        self._watch(sock, "tcp-client", flow[1], flow, select.POLLOUT)

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
        if pair in self.echoed and pair in self.proven:
            self._answer(("icmp", *pair))

    def _answer(self, flow: Flow) -> None:
        if flow not in self.answered:
            self.answered.add(flow)
            if flow[0] in ("icmp", "udp"):  # the network's latency, not connection set-up,
                since = max(self.sent_at[flow], self.listening_since)  # nor our sending
                self.rtts.append(time.monotonic() - since)

    def _drain_icmp(self, node: str) -> None:
        sock = self.sockets[node]
        while True:
            try:
                data = sock.recv(2048)
            except BlockingIOError:
                return
            self._handle(node, data)

    def _discard(self, sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while sock.recv(2048):
                pass

    def _udp_server(self, node: str) -> None:
        sock = self.services.udp[node]
        while True:
            try:
                data, ancillary, _, peer = sock.recvmsg(2048, 64)
            except (BlockingIOError, InterruptedError):
                return
            flow = self.tokens.get(data)
            if flow is None or flow[2] != node:
                continue
            local = next((d[4:8] for lvl, kind, d in ancillary if kind == _IP_PKTINFO), None)
            proof = self._token(self.proof_tokens, flow)
            info = [] if local is None else [
                (socket.IPPROTO_IP, _IP_PKTINFO, struct.pack("@i4s4s", 0, local, b"\0" * 4))
            ]
            with contextlib.suppress(OSError):
                sock.sendmsg([proof], info, 0, peer)

    def _udp_client(self, node: str) -> None:
        sock = self.clients[node]
        while True:
            try:
                data = sock.recv(2048)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:  # an ICMP error for an earlier datagram
                continue
            flow = self.proof_tokens.get(data)
            if flow is not None and flow[0] == "udp" and flow[1] == node:
                self._answer(flow)

    def _accept_all(
        self, node: str, listening: _Listening, keep: bool = True
    ) -> None:
        listener, port = listening
        while True:
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue
            if keep:
                self._watch(conn, "tcp-conn", node, port)
            else:
                conn.close()

    def _listener_port(self, flow: Flow) -> int:
        """The port whose listener must receive ``flow``'s token."""
        endpoint = self.endpoints.get(flow[0])
        return self.net.local.tcp_port if endpoint is None else endpoint.port

    def _tcp_conn(self, sock: socket.socket, node: str, port: int) -> None:
        try:
            data = sock.recv(_TOKEN_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        flow = self.tokens.get(data)
        if flow is not None and flow[2] == node and self._listener_port(flow) == port:
            with contextlib.suppress(OSError):
                sock.send(self._token(self.proof_tokens, flow))
                self.progress += 1
        self._forget(sock)

    def _tcp_client(self, sock: socket.socket, flow: Flow) -> None:
        role = self.handlers[sock.fileno()][0]
        try:
            if role == "tcp-client":
                if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    self._forget(sock)
                    return
                sock.send(self._token(self.tokens, flow))
                self.progress += 1
                self.handlers[sock.fileno()] = ("tcp-wait", flow[1], flow)
                self.poller.modify(sock.fileno(), select.POLLIN)
                return
            data = sock.recv(_TOKEN_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if self.proof_tokens.get(data) == flow:
            self._answer(flow)
        self._forget(sock)

    def _dispatch(self, fd: int) -> None:
        handler = self.handlers.get(fd)
        if handler is None:
            return
        role, node, extra = handler
        if role == "icmp":
            self._drain_icmp(node)
        elif role == "udp-server":
            self._udp_server(node)
        elif role == "udp-client":
            self._udp_client(node)
        elif role == "tcp-listen":
            assert isinstance(extra, _Listening)
            self._accept_all(node, extra)
        elif role == "tcp-conn":
            assert isinstance(extra, int)
            self._tcp_conn(self.open_fds[fd], node, extra)
        elif extra is not None and not isinstance(extra, (int, _Listening)):  # a TCP client's,
            self._tcp_client(self.open_fds[fd], extra)  # connecting or awaiting its answer

    def wait(self, pending: set[Flow], deadline: float, quiet_s: float | None = None) -> None:
        """Collect answers until all ``pending`` flows answered, or ``deadline``.

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
            before = (len(self.answered), self.progress)
            for fd, _ in ready:
                self._dispatch(fd)
            if (len(self.answered), self.progress) > before:  # answers, or TCP exchanges
                last = time.monotonic()  # under way: not quiet yet
        for fd, _ in self.poller.poll(0):  # what arrived while this thread waited for
            self._dispatch(fd)  # a CPU (a loaded host), TCP exchanges under way included
        for fd, (role, _, _) in list(self.handlers.items()):  # queued replies of a
            if role in ("icmp", "udp-server", "udp-client", "tcp-listen"):  # late prober
                self._dispatch(fd)

    def _quiet(self, floor_s: float) -> float:
        return max(floor_s, 3 * max(self.rtts[-64:], default=0.0))

    def patience_s(self, floor_s: float, ceiling_s: float) -> float:
        """A confirmation window: 20 times the slowest recent answer, within bounds."""
        slowest = max(self.rtts[-64:], default=0.0)
        return min(ceiling_s, max(floor_s, 20 * slowest))

    def matrix(self, protocols: tuple[str, ...] = PROTOCOLS, services: bool = True) -> PingMatrix:
        """What answered, as a matrix (``None`` for what was not probed)."""
        by: dict[str, frozenset[Pair] | None] = dict.fromkeys(PROTOCOLS)
        for p in protocols:
            by[p] = frozenset((s, d) for q, s, d in self.answered if q == p)
        served = frozenset(f for f in self.answered if f[0] in self.endpoints)
        return PingMatrix(
            self.net.plan.nodes,
            by["icmp"] or frozenset(),
            by["tcp"],
            by["udp"],
            served if services else None,
        )


def pingmesh(
    net: Network,
    timeout_s: float = 0.1,
    expect: frozenset[Pair] | None = None,
    confirm_rounds: int = 1,
    confirm_floor_s: float = 0.25,
    confirm_ceiling_s: float = 2.0,
    protocols: tuple[str, ...] = PROTOCOLS,
    expect_services: frozenset[Flow] | None = None,
    services: bool = True,
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

    Returns:
        The reachability matrix.
    """
    pairs = [(s, d) for s in net.plan.nodes for d in net.plan.nodes if s != d]
    flows = [(p, s, d) for p in protocols for s, d in pairs]
    must = {(p, s, d) for p in protocols for s, d in (pairs if expect is None else expect)}
    mesh = _Mesh(net)
    try:
        if services:
            served = service_flows(net.plan, net.local)
            flows += served
            must |= set(served if expect_services is None else expect_services & set(served))
        mesh.send(flows, 1)
        mesh.wait(set(flows), time.monotonic() + timeout_s, quiet_s=0.02)
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
    return mesh.matrix(protocols, services)


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
        extra: Further flows to probe (undisclosed services' flows that must stay blocked).
    """

    def __init__(
        self,
        net: Network,
        pairs: frozenset[Pair],
        period_s: float = 0.2,
        extra: frozenset[Flow] = frozenset(),
    ) -> None:
        self.net, self.pairs, self.period_s, self.extra = net, pairs, period_s, extra
        self.answered: frozenset[Flow] = frozenset()
        """Flows (every protocol) that answered during the watch."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="route-watch", daemon=True)

    def _run(self) -> None:
        mesh = _Mesh(self.net)
        try:
            seq = 1
            flows = sorted({(p, s, d) for p in PROTOCOLS for s, d in self.pairs} | self.extra)
            while not self._stop.is_set():
                mesh.drop_connections()
                mesh.send(flows, seq)
                mesh.wait(set(flows), time.monotonic() + self.period_s)
                seq = seq % 0xFFFF + 1
        finally:
            mesh.close()
            self.answered = frozenset(mesh.answered)

    def __enter__(self) -> Watch:
        if self.pairs or self.extra:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pairs or self.extra:
            self._stop.set()
            self._thread.join()
