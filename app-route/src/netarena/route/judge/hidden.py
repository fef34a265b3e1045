"""Probes the agent cannot target: TCP and UDP ports drawn when the episode is scored.

The mesh judges every pair on ICMP and on the two service ports the prompt discloses. A
repair aimed at the judge alone (ACCEPT rules for ICMP and those two ports inserted above
the fault's DROP) would pass it while every other port stays blocked. So the final score
also probes ports drawn at that moment from a source the agent never sees: one well-known
and one high port per protocol, and every port a rule of the final state names that no rule
of the healthy state names (a verdict map dropping 22, 53, 80 and 443, an ACCEPT for one
port). Listeners opened for the probe (as the judge, in each node's namespace) answer with
tokens exactly as the disclosed services do, so an answer cannot be forged: each pair
that must work must reach the other's listener on every drawn port, and each pair that
must stay blocked must reach none. Ports the healthy configuration names (a service's
port, a logged port) keep the expectations the rest of the judge gives them and are not
drawn.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from netarena.route.emulator.live import LiveNetwork
from netarena.route.emulator.services import Endpoint, Services
from netarena.route.emulator.undisclosed import Undisclosed
from netarena.route.judge.pingall import Pair
from netarena.route.judge.probe import pingmesh
from netarena.route.linux.nodestate import NodeState

__all__ = ["WELL_KNOWN", "HiddenVerdict", "draw_ports", "ports_named", "probe_hidden"]

WELL_KNOWN = (21, 22, 23, 25, 53, 80, 110, 123, 135, 143, 161, 389, 443, 445, 465, 514, 587,
              636, 993, 995, 1433, 1521, 3306, 3389, 5432, 5900, 6379, 8080, 8443, 9200)
"""Ports a blanket block of common services would name; one of each protocol is drawn."""
_HIGH = (1024, 65000)
_MAX_NAMED = 6
_PATIENCE_S = (0.25, 1.0)
"""Confirmation floors of the first and of the patient measurement, seconds."""
_LEGACY_PORT = re.compile(r"--(?:dport|sport|dports|sports|to-ports?) (\S+)")


def _ints(value: Any) -> Iterator[int]:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict) and _span(value.get("range")):  # nft's ``dport 5000-5100``
        yield from _ports(*value["range"])
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _ints(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _ints(inner)


def _ports(low: int, high: int) -> range:
    """The ports from ``low`` to ``high``, clipped to real ports.

    A mark range in a rule that also names a port would otherwise be billions of numbers.
    """
    return range(max(low, 1), min(high, 65535) + 1)


def _span(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value))


def ports_named(states: Iterable[NodeState]) -> set[int]:
    """Every port a packet-filter rule of ``states`` may name, each port of a range too.

    Generous on purpose: any number in a rule that matches or rewrites ports counts. A
    range counts whole: a port drawn inside a service ACL's block of ports would be
    expected to answer where the design refuses it.
    """
    found: set[int] = set()
    for state in states:
        for key in state:
            if key.startswith("legacy "):
                for spec in _LEGACY_PORT.findall(key):
                    for low, high in re.findall(r"(\d+)(?::(\d+))?", spec):
                        found.update(_ports(int(low), int(high or low)))
                continue
            if not key.startswith("nft ") or " rule " not in key or "port" not in key:
                continue
            expr = key.split(" rule ", 1)[1].rsplit(" #", 1)[0]
            try:
                found.update(_ints(json.loads(expr)))
            except ValueError:
                continue
    return {p for p in found if 0 < p < 65536}


def draw_ports(
    rng: random.Random, exclude: set[int], named: set[int]
) -> list[tuple[int, int]]:
    """``(tcp, udp)`` port pairs to probe: well-known, high, then each newly named port."""

    def pick(pool: Iterable[int]) -> int:
        free = [p for p in pool if p not in exclude]
        port = rng.choice(free)
        exclude.add(port)
        return port

    high = range(*_HIGH)
    pairs = [(pick(WELL_KNOWN), pick(WELL_KNOWN)), (pick(high), pick(high))]
    extra = sorted(named - exclude)[:_MAX_NAMED]
    pairs += [(p, p) for p in extra]
    return pairs


@dataclass(frozen=True)
class HiddenVerdict:
    """What the probes on drawn ports found."""

    ports: tuple[tuple[int, int], ...]
    """The ``(tcp, udp)`` ports probed."""
    wrong: tuple[str, ...]
    """Flows that did not behave as the intent says (``tcp/8443 h1->h4 lost``)."""

    @property
    def ok(self) -> bool:
        """Every drawn port behaves as the intent says."""
        return not self.wrong


@dataclass
class _PortView:
    """The network as a mesh reads it, with the drawn ports' listeners as its services."""

    net: LiveNetwork
    services: Services
    local: Undisclosed

    @property
    def plan(self) -> Any:
        return self.net.plan

    def netns(self, node: str) -> str:
        return self.net.netns(node)

    def flush_neighbours(self) -> None:
        self.net.flush_neighbours()

    def service_endpoints(self) -> dict[str, Endpoint]:
        return {}  # the drawn ports are probed as pairs, not as services


def _listen(net: LiveNetwork, tcp: int, udp: int) -> Services | None:
    try:
        return Services({n: net.netns(n) for n in net.plan.nodes}, Undisclosed(tcp, udp))
    except OSError:  # something of the agent's already listens there
        return None


def probe_hidden(
    net: LiveNetwork,
    want: frozenset[Pair],
    healthy: dict[str, NodeState],
    final: dict[str, NodeState],
    exclude: set[int],
    rng: random.Random | None = None,
    timeout_s: float = 0.1,
) -> HiddenVerdict:
    """Probe every pair on ports drawn now (see the module docstring).

    Args:
        net: The live network.
        want: The pairs that must answer; every other pair must not.
        healthy: Every node's healthy state (its ports are not drawn).
        final: Every node's state now (ports it newly names are probed).
        exclude: Ports never drawn (the disclosed ones, the services').
        rng: Where ports come from; a fresh system source by default.
        timeout_s: The mesh's first round, seconds.
    """
    rng = rng or random.SystemRandom()
    taken = set(exclude) | ports_named(healthy.values())
    named = ports_named(final.values())
    wrong: list[str] = []
    probed: list[tuple[int, int]] = []
    for tcp, udp in draw_ports(rng, taken, named):
        services = _listen(net, tcp, udp)
        if services is None:
            continue
        answered: dict[str, set[Pair]] = {"tcp": set(), "udp": set()}
        try:
            view = cast(LiveNetwork, _PortView(net, services, Undisclosed(tcp, udp)))
            for floor_s in _PATIENCE_S:  # a loaded host can starve the prober, never forge
                seen = pingmesh(view, timeout_s, expect=want, confirm_rounds=2,
                                confirm_floor_s=floor_s, protocols=("tcp", "udp"),
                                services=False)
                answered["tcp"] |= seen.tcp or frozenset()
                answered["udp"] |= seen.udp or frozenset()
                if want <= answered["tcp"] and want <= answered["udp"]:
                    break
        finally:
            services.close()
        probed.append((tcp, udp))
        for proto, port in (("tcp", tcp), ("udp", udp)):
            got = answered[proto]
            wrong += [f"{proto}/{port} {s}->{d} lost" for s, d in sorted(want - got)]
            wrong += [f"{proto}/{port} {s}->{d} opened" for s, d in sorted(got - want)]
        if wrong:  # the verdict is settled: no need to wait on the other ports' losses
            break
    return HiddenVerdict(tuple(probed), tuple(wrong))
