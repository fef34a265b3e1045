"""A measuring thread whose listener is closed under it (its run stopped) returns."""

from __future__ import annotations

import socket
import threading

from netarena.route.judge.mesh import Mesh, _Listening


def test_accepting_on_a_listener_closed_under_the_mesh_returns() -> None:
    """A stopped run closes its episodes' listeners while a step may still be measuring:
    ``accept`` then fails with EBADF on every call, and the loop used to retry it forever at
    full CPU, so the stopped process never exited (seen: 50 min after SIGTERM)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    listener.close()
    mesh = Mesh.__new__(Mesh)  # the loop needs no state until a connection is accepted
    worker = threading.Thread(
        target=mesh._accept_all, args=("h1", _Listening(listener, port), False), daemon=True
    )
    worker.start()
    worker.join(5)
    assert not worker.is_alive()


def test_reading_a_udp_client_closed_under_the_mesh_returns() -> None:
    """The same for a UDP client socket: ICMP errors are skipped, a closed socket ends it."""
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    client.close()
    mesh = Mesh.__new__(Mesh)
    mesh.clients = {"h1": client}
    worker = threading.Thread(target=mesh._udp_client, args=("h1",), daemon=True)
    worker.start()
    worker.join(5)
    assert not worker.is_alive()
