"""Real networks the dynamic designs are drawn from (pure, offline).

The Internet Topology Zoo and SNDlib graphs as the ``topohub`` package ships them: each
node a point of presence with its coordinates, each edge a link with its length (km) and
its load under shortest-path routing of uniform demands (a stand-in for how much capacity
the operator gave it). A design takes a connected part of one network (``draw_sites``):
four to eight neighbouring points of presence by default, or a whole named network.
"""

from __future__ import annotations

import importlib.resources
import json
import random
from dataclasses import dataclass
from functools import cache

from netarena.common.core.errors import ConfigError

__all__ = ["Site", "Span", "Part", "networks", "load", "draw_sites", "MAX_WHOLE"]

GROUPS = ("topozoo", "sndlib")
"""topohub's groups of real networks."""
MAX_WHOLE = 24
"""Most routers a whole named network may have (the machine's budget per episode)."""


@dataclass(frozen=True)
class Site:
    """A point of presence."""

    name: str
    """Its name in the source (a city, mostly)."""
    lon: float
    """Longitude, degrees."""
    lat: float
    """Latitude, degrees."""


@dataclass(frozen=True)
class Span:
    """A link between two sites of a part (indexes into ``Part.sites``)."""

    a: int
    b: int
    km: float
    """Its length."""
    load: float
    """Its load (percent) under shortest-path routing of uniform demands."""


@dataclass(frozen=True)
class Part:
    """A connected part of a real network."""

    network: str
    """The source (``topozoo/Abilene``)."""
    sites: tuple[Site, ...]
    spans: tuple[Span, ...]


@cache
def networks() -> tuple[str, ...]:
    """Every real network shipped, as ``group/name``, sorted."""
    root = importlib.resources.files("topohub") / "data"
    return tuple(
        sorted(
            f"{group}/{entry.name[:-5]}"
            for group in GROUPS
            for entry in (root / group).iterdir()
            if entry.name.endswith(".json")
        )
    )


@cache
def load(key: str) -> Part:
    """The whole network ``key`` (``topozoo/Abilene``, ``sndlib/geant``).

    Raises:
        ConfigError: No such network.
    """
    path = importlib.resources.files("topohub") / "data" / f"{key}.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"no real network {key!r} (topozoo/NAME or sndlib/NAME)") from exc
    ids = {str(node["id"]): i for i, node in enumerate(data["nodes"])}
    sites = tuple(
        Site(str(n.get("name") or f"pop{i}"), float(n["pos"][0]), float(n["pos"][1]))
        for i, n in enumerate(data["nodes"])
    )
    seen: set[tuple[int, int]] = set()
    spans = []
    for edge in data["edges"]:
        a, b = ids[str(edge["source"])], ids[str(edge["target"])]
        pair = (min(a, b), max(a, b))
        if a == b or pair in seen:
            continue
        seen.add(pair)
        load_pct = max(edge["ecmp_fwd"].get("uni", 0.0), edge["ecmp_bwd"].get("uni", 0.0))
        spans.append(Span(*pair, max(1.0, float(edge["dist"])), float(load_pct)))
    return Part(key, sites, tuple(spans))


def _bridges(size: int, spans: list[tuple[int, int]]) -> int:
    """How many links of a graph on ``size`` nodes disconnect it when lost."""
    count = 0
    for skip in range(len(spans)):
        rest = [s for i, s in enumerate(spans) if i != skip]
        if not _connected(size, rest):
            count += 1
    return count


def _connected(size: int, spans: list[tuple[int, int]]) -> bool:
    reach, todo = {0}, [0]
    while todo:
        node = todo.pop()
        for a, b in spans:
            for x, y in ((a, b), (b, a)):
                if x == node and y not in reach:
                    reach.add(y)
                    todo.append(y)
    return len(reach) == size


def _grow(rng: random.Random, part: Part, size: int) -> Part | None:
    """``size`` neighbouring sites of ``part`` grown from a random one, with their links."""
    start = rng.randrange(len(part.sites))
    chosen = [start]
    while len(chosen) < size:
        frontier = sorted(
            {
                y
                for s in part.spans
                for x, y in ((s.a, s.b), (s.b, s.a))
                if x in chosen and y not in chosen
            }
        )
        if not frontier:
            return None
        chosen.append(rng.choice(frontier))
    index = {site: i for i, site in enumerate(chosen)}
    spans = tuple(
        Span(index[s.a], index[s.b], s.km, s.load)
        for s in part.spans
        if s.a in index and s.b in index
    )
    return Part(part.network, tuple(part.sites[i] for i in chosen), spans)


def draw_sites(rng: random.Random, size: int, network: str | None = None) -> Part:
    """A connected part of a real network: ``size`` sites, or the whole ``network``.

    Parts where no single link's loss cuts a site off are preferred (a fault then moves
    traffic), with at most twice as many links as sites.

    Raises:
        ConfigError: ``network`` is unknown, disconnected or too large for one episode.
    """
    if network is not None:
        whole = load(network)
        if len(whole.sites) > MAX_WHOLE:
            raise ConfigError(f"{network} has {len(whole.sites)} sites (at most {MAX_WHOLE})")
        if not _connected(len(whole.sites), [(s.a, s.b) for s in whole.spans]):
            raise ConfigError(f"{network} is not connected")
        return whole
    pool = [key for key in networks() if len(load(key).sites) >= size]
    fallback = None
    for _ in range(200):
        grown = _grow(rng, load(rng.choice(pool)), size)
        if grown is None or len(grown.spans) > 2 * size:
            continue
        pairs = [(s.a, s.b) for s in grown.spans]
        if _bridges(size, pairs) == 0:
            return grown
        fallback = fallback or grown
    if fallback is None:
        raise ConfigError(f"no connected part of {size} sites found")
    return fallback
