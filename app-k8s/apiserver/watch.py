"""Watches: the store's change log, followed by ``kubectl get -w`` and ``rollout status``.

Every write appends ``(revision, type, kind, object)`` to a bounded log and wakes the
watchers; a watch from revision R sees every later change of its kind that matches its
namespace and selectors, in order, until the client goes away or the server stops, as
with an API server's watch cache.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from typing import Any

from netarena.k8s.apiserver.kinds import clone

__all__ = ["ChangeLog", "Change"]

Change = tuple[int, str, str, dict[str, Any]]
"""``(revision, "ADDED"|"MODIFIED"|"DELETED", kind key, object)``."""

_KEPT = 4096


class ChangeLog:
    """Recent changes of a store, shared by its watchers.

    Args:
        lock: The store's lock (changes are recorded while it is held).
    """

    def __init__(self, lock: threading.RLock) -> None:
        self._changes: collections.deque[Change] = collections.deque(maxlen=_KEPT)
        self._cond = threading.Condition(lock)

    def add(self, revision: int, change: str, kind: str, obj: dict[str, Any]) -> None:
        """Record one change (the caller holds the store's lock)."""
        self._changes.append((revision, change, kind, clone(obj)))
        self._cond.notify_all()

    def follow(self, since: int, wanted: Callable[[str, dict[str, Any]], bool],
               stop: threading.Event, poll_s: float = 0.25) -> Iterator[tuple[str, dict[str,
                                                                                          Any]]]:
        """Yield ``(type, object)`` for every change after revision ``since`` that is wanted.

        Blocks between changes; ends when ``stop`` is set.
        """
        seen = since
        while not stop.is_set():
            with self._cond:
                batch = [c for c in self._changes if c[0] > seen]
                if not batch:
                    self._cond.wait(poll_s)
                    continue
                seen = batch[-1][0]
            for _, change, kind, obj in batch:
                if wanted(kind, obj):
                    yield change, obj
