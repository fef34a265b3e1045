"""The sockets of one pingmesh: tokens sent, proofs answered, flows shown (``probe.py``).

How a flow is judged is described in ``probe.py``; ICMP packets come from ``icmp.py``.
"""

from __future__ import annotations

import contextlib
import errno
import random
import select
import socket
import struct
import time
from typing import NamedTuple

from netarena.route.emulator.live import LiveNetwork
from netarena.route.judge.pingall import PROTOCOLS, Flow, Pair, PingMatrix, matrix_of
from netarena.route.linux.icmp import ECHO_REPLY, ECHO_REQUEST, STAMP, echo_packet
from netarena.route.linux.namespaces import enter

__all__ = ["Mesh"]


class _Listening(NamedTuple):
    """A TCP listener the mesh watches, and the port its tokens must have been sent to."""

    sock: socket.socket
    port: int


_Extra = Flow | _Listening | int | None
"""What a watched socket's handler needs: a client's flow, a listener, a connection's port."""


_random = random.SystemRandom()
_RCVBUF_BYTES = 4 << 20
_SO_RCVBUFFORCE = 33  # Linux values the socket module does not export
_IP_PKTINFO = 8
_Key = tuple[int, int, bytes]
"""What tells probe packets apart: ICMP identifier, sequence number, timestamp bytes."""
_TOKEN_BYTES = 16
_ABORT = struct.pack("ii", 1, 0)
"""``SO_LINGER`` on, 0 s: a closed client socket resets at once (no FIN, no TIME_WAIT)."""


class Mesh:
    """The sockets of one pingmesh and what each flow has shown so far.

    ICMP as described above; TCP and UDP through the nodes' listeners (``services.py``):
    src sends a fresh token to dst's service port (over a new connection, or in a
    datagram), dst's listener looks it up and answers on the same flow with a token born
    there, and the flow counts once src reads that token back.
    """

    def __init__(self, net: LiveNetwork) -> None:
        self.net = net
        assert net.services is not None
        self.services = net.services
        self.endpoints = net.service_endpoints()
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
        self.heard: dict[Flow, float] = {}
        """When each flow last answered (any round)."""
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

    def _watch(self, sock: socket.socket, role: str, node: str, extra: _Extra = None,
               events: int = select.POLLIN, own: bool = True) -> None:
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
        """Close every socket the mesh opened and release the services' listeners."""
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
            stamp = STAMP.pack(int(time.time()), _random.randrange(1_000_000))
            key = (ident, seq, stamp)
            if key not in self.requests and key not in self.proofs:
                return key

    def _token(self, table: dict[bytes, Flow], flow: Flow) -> bytes:
        while (token := _random.randbytes(_TOKEN_BYTES)) in table:
            pass
        table[token] = flow
        return token

    def send(self, flows: list[Flow], seq: int) -> None:
        """Start ``flows`` (round ``seq``): echo requests, datagrams, connections."""
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
                    self.sockets[src].sendto(echo_packet(ECHO_REQUEST, *key), (address, 0))
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
        packet = echo_packet(ECHO_REPLY, *key)
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
        if len(data) < ihl + 8 + STAMP.size:
            return
        kind = data[ihl]
        ident, seq = struct.unpack("!HH", data[ihl + 4 : ihl + 8])
        key = (ident, seq, data[ihl + 8 : ihl + 8 + STAMP.size])
        if kind == ECHO_REQUEST:
            pair = self.requests.get(key)
            if pair is not None and pair[1] == node:
                self._prove(node, data, ihl, pair)
        elif kind == ECHO_REPLY and (pair := self.requests.get(key)) is not None:
            if pair[0] == node:
                self.echoed.add(pair)
                self._settle(pair)
        elif kind == ECHO_REPLY and (pair := self.proofs.get(key)) is not None:
            if pair[0] == node:
                self.proven.add(pair)
                self._settle(pair)

    def _settle(self, pair: Pair) -> None:
        if pair in self.echoed and pair in self.proven:
            self._answer(("icmp", *pair))

    def _answer(self, flow: Flow) -> None:
        self.heard[flow] = time.monotonic()
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
            except OSError as exc:  # an ICMP error for an earlier datagram, or a socket
                if exc.errno == errno.EBADF:  # closed under us (a stopped run)
                    return
                continue
            flow = self.proof_tokens.get(data)
            if flow is not None and flow[0] == "udp" and flow[1] == node:
                self._answer(flow)

    def _accept_all(self, node: str, listening: _Listening, keep: bool = True) -> None:
        listener, port = listening
        while True:
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # that connection failed (the next may not), or else
                if exc.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):
                    continue
                return  # the listener closed under us (a stopped run): no spinning on it
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
        return matrix_of(self.net.plan.nodes, self.answered, frozenset(self.endpoints),
                         protocols, services)
