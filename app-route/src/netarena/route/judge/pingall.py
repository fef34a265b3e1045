"""A reachability matrix of ordered pairs, and Mininet's ``pingall`` text for it.

``PingMatrix`` holds which ``(src, dst)`` pairs answered on each protocol (ICMP, TCP, UDP)
and which undisclosed services' flows answered; ``text`` renders Mininet's ``h1 -> h2 X r0``
lines with the ``*** Results: N% dropped`` line, and ``parse_pingall`` reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PROTOCOLS", "Flow", "Pair", "PingMatrix", "matrix_of", "parse_pingall"]

Pair = tuple[str, str]


Flow = tuple[str, str, str]
"""``(protocol, src, dst)``."""


PROTOCOLS = ("icmp", "tcp", "udp")
"""Every flow is judged on each of these."""


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


def matrix_of(
    nodes: tuple[str, ...], answered: set[Flow] | frozenset[Flow], service_labels: frozenset[str],
    protocols: tuple[str, ...] = PROTOCOLS, services: bool = True,
) -> PingMatrix:
    """The matrix of the flows that ``answered`` (``None`` for what was not probed)."""
    by: dict[str, frozenset[Pair] | None] = dict.fromkeys(PROTOCOLS)
    for p in protocols:
        by[p] = frozenset((s, d) for q, s, d in answered if q == p)
    served = frozenset(f for f in answered if f[0] in service_labels)
    return PingMatrix(nodes, by["icmp"] or frozenset(), by["tcp"], by["udp"],
                      served if services else None)
