"""Features of an audited object: its own fields, and how it compares with its peers.

A classifier sees each object as a sparse dict of numbers. Its own fields give ``field=value``
indicators (text) or the value (numbers, booleans). Context features compare it with the
objects of the same kind in the same instance, which is what a "majority" or "odd one out"
strategy reads: the share of peers that hold the same value, and for numbers how far the
value lies from the peers' median (in log scale) and whether it is the extreme one.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Sequence

from netarena.common.core.evidence import AuditObject, FieldValue

__all__ = ["featurize"]


def _signed_log(x: float) -> float:
    return math.copysign(math.log1p(abs(x)), x)


def _numeric(value: FieldValue) -> float | None:
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return None
    return float(value)


def featurize(objects: Sequence[AuditObject]) -> list[dict[str, float]]:
    """One feature dict per object of one instance, in order.

    Args:
        objects: Every audited object of a single instance (any kinds).

    Returns:
        Sparse features: ``f=v`` indicators for text, ``f`` for numbers and booleans,
        ``f@share`` (share of same-kind peers with an equal value), and for numbers
        ``f@dev`` (signed log distance from the peers' median), ``f@max``/``f@min``.
    """
    peers: dict[str, list[AuditObject]] = defaultdict(list)
    for obj in objects:
        peers[obj.kind].append(obj)
    counts: dict[tuple[str, str], Counter[FieldValue]] = defaultdict(Counter)
    numbers: dict[tuple[str, str], list[float]] = defaultdict(list)
    for kind, group in peers.items():
        for obj in group:
            for name, value in obj.fields.items():
                counts[kind, name][value] += 1
                number = _numeric(value)
                if number is not None:
                    numbers[kind, name].append(number)
    out: list[dict[str, float]] = []
    for obj in objects:
        n = len(peers[obj.kind])
        features: dict[str, float] = {}
        for name, value in obj.fields.items():
            features[f"{name}@share"] = counts[obj.kind, name][value] / n
            number = _numeric(value)
            if value is None:
                features[f"{name}=None"] = 1.0
            elif isinstance(value, bool):
                features[name] = float(value)
            elif isinstance(value, str):
                features[f"{name}={value}"] = 1.0
            elif number is not None:
                features[name] = number
                values = numbers[obj.kind, name]
                features[f"{name}@dev"] = _signed_log(number - statistics.median(values))
                features[f"{name}@max"] = float(number == max(values) and n > 1)
                features[f"{name}@min"] = float(number == min(values) and n > 1)
        out.append(features)
    return out
