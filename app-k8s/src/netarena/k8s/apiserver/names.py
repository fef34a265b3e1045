"""Names and timestamps as the API machinery generates them.

Generated name suffixes (pod names, template hashes, EndpointSlice names, token volumes)
use the API machinery's vowel-free alphabet, so no suffix spells a word and none holds
``a``, ``e``, ``0``, ``1`` or ``3``; timestamps are RFC 3339 in UTC, to the second.
"""

from __future__ import annotations

import random
import time

__all__ = ["SAFE_ALPHABET", "random_suffix", "rfc3339", "safe_encode"]

SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of generated name suffixes."""


def safe_encode(digest: bytes, length: int) -> str:
    """``length`` characters of ``SAFE_ALPHABET`` drawn from ``digest`` (a hash's bytes)."""
    n = int.from_bytes(digest, "big")
    out = []
    for _ in range(length):
        n, r = divmod(n, len(SAFE_ALPHABET))
        out.append(SAFE_ALPHABET[r])
    return "".join(out)


def random_suffix(rng: random.Random, length: int = 5) -> str:
    """A ``generateName`` suffix (``x7k2p``)."""
    return "".join(rng.choice(SAFE_ALPHABET) for _ in range(length))


def rfc3339(ts: float) -> str:
    """Format seconds since the epoch as the API's timestamp (``2024-05-01T12:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
