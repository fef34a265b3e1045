"""A small thread-safe cache that forgets its oldest entries.

Episodes open on the runner's thread pool (``common/core/runner.py``), so the caches that
queries share (rendered designs, probe masks, expected reachability) are read and evicted
from several threads at once; a plain dict raised "dictionary changed size during
iteration" there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class BoundedCache(Generic[_K, _V]):
    """At most ``limit`` entries, the oldest inserted dropped first."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: dict[_K, _V] = {}
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        """The value stored under ``key``, or None."""
        with self._lock:
            return self._items.get(key)

    def put(self, key: _K, value: _V) -> _V:
        """Store ``value`` (evicting the oldest past the limit) and return it."""
        with self._lock:
            self._items[key] = value
            self._evict()
        return value

    def setdefault(self, key: _K, make: Callable[[], _V]) -> _V:
        """The value under ``key``, stored from ``make()`` first if absent (one atomic step)."""
        with self._lock:
            if key not in self._items:
                self._items[key] = make()
                self._evict()
            return self._items[key]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _evict(self) -> None:
        while len(self._items) > self._limit:
            self._items.pop(next(iter(self._items)))
