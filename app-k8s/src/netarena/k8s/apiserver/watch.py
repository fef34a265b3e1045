"""Watches: the store's change log, followed by ``kubectl get -w`` and ``rollout status``.

Every write appends ``(revision, type, kind, object)`` to a bounded log and wakes the
watchers; a watch from revision R sees every later change of its kind that matches its
namespace and selectors, in order, until the client goes away or the server stops, as
with an API server's watch cache.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from netarena.k8s.apiserver.kinds import KindInfo, clone
from netarena.k8s.apiserver.tables import render_table
from netarena.k8s.apiserver.transport import Reply

__all__ = ["ChangeLog", "Change", "Watched", "watch_reply"]

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


def _bookmark(info: KindInfo, revision: int) -> dict[str, Any]:
    """The BOOKMARK that ends a watch-list's initial events."""
    return {"kind": info.kind, "apiVersion": info.api_version, "metadata": {
        "resourceVersion": str(revision),
        "annotations": {"k8s.io/initial-events-end": "true"}}}


class Watched(Protocol):
    """What a watch reads from the store (``store.ObjectStore``)."""

    def list_with_revision(
        self, kind: str, namespace: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[list[dict[str, Any]], int]:
        """The matching objects and the revision they were read at."""
        ...

    def watch(
        self, kind: str, namespace: str | None, since: int, stop: threading.Event,
        label_selector: str | None = None, field_selector: str | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Changes of ``kind`` after revision ``since`` until ``stop`` is set."""
        ...


def watch_reply(store: Watched, info: KindInfo, namespace: str | None,
                params: dict[str, str], table: bool, stopping: threading.Event) -> Reply:
    """Answer ``?watch=true`` with a stream of events.

    The stream ends at ``timeoutSeconds``, when ``stopping`` is set (server shutdown) or
    when the client leaves. ``sendInitialEvents=true`` (a watch-list, as informers send)
    first replays the current objects as ADDED, then a BOOKMARK ending the initial events.
    """
    since = params.get("resourceVersion") or ""
    labels, fields = params.get("labelSelector"), params.get("fieldSelector")
    initial, start = store.list_with_revision(info.key, namespace, labels, fields)
    if since.isdigit() and since != "0":
        start = int(since)
    if params.get("sendInitialEvents") != "true":  # a watch-list starts with the state
        initial = []
    stop = threading.Event()
    events = store.watch(info.key, namespace, start, stop, labels, fields)
    include = params.get("includeObject", "Metadata")
    reply = Reply(None)
    deadline = time.monotonic() + float(params.get("timeoutSeconds") or 1800)

    def documents() -> Iterator[dict[str, Any]]:
        changes = [("ADDED", obj) for obj in initial]
        for change, obj in itertools.chain(changes, [("BOOKMARK", None)], events):
            if obj is None:
                if params.get("sendInitialEvents") == "true":
                    yield {"type": "BOOKMARK", "object": _bookmark(info, start)}
                continue
            body = (render_table(info, [obj], obj["metadata"]["resourceVersion"], include)
                    if table else obj)
            yield {"type": change, "object": body}

    def stopper() -> None:  # ends the watch at its timeout, at shutdown, or when the
        # client leaves
        while not (stopping.wait(0.5) or any(g() for g in reply.client_gone)
                   or time.monotonic() > deadline):
            pass
        stop.set()

    threading.Thread(target=stopper, name="k8s-watch", daemon=True).start()
    reply.stream = documents()
    return reply

