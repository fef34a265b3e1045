"""The read side of ``ObjectStore``: get, list (with selectors) and watch.

A mixin (as ``workloads.WorkloadController`` is): ``ObjectStore`` inherits it and holds the
state it reads, under the store's lock; copies go out, so no reader can change stored state.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterator
from typing import Any

from netarena.k8s.apiserver.derived import derived_objects, heartbeat
from netarena.k8s.apiserver.kinds import KindInfo, NotFound, clone, kind_info
from netarena.k8s.apiserver.selectors import field_matcher, label_matcher
from netarena.k8s.apiserver.watch import ChangeLog

__all__ = ["Key", "StoreReads"]

Key = tuple[str, str]
"""An object's place within its kind: (namespace, or "" when cluster-scoped; name)."""


class StoreReads:
    """Mixin: reads of ``ObjectStore`` (not used alone)."""

    _lock: threading.RLock
    _objects: dict[str, dict[Key, dict[str, Any]]]
    _revision: int
    _written: dict[str, int]
    _shared: dict[str, tuple[int, builtins.list[dict[str, Any]]]]
    _clock: Callable[[], float]
    changes: ChangeLog

    def get(self, kind: str, namespace: str | None, name: str) -> dict[str, Any]:
        """Return a copy of one object.

        Raises:
            NotFound: No such object (message as the API server words it).
        """
        info = kind_info(kind)
        with self._lock:
            if info.generated:
                for obj in derived_objects(self._objects, info):
                    meta = obj["metadata"]
                    if meta["name"] == name and meta.get("namespace") == namespace:
                        return clone(obj)
            else:
                stored = self._objects.get(kind, {}).get(self._key(info, namespace, name))
                if stored is not None:
                    return heartbeat(clone(stored), self._clock())
        raise NotFound(f'{info.resource} "{name}" not found',
                       {"name": name, "group": info.group, "kind": info.plural})

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> list[dict[str, Any]]:
        """Return copies of matching objects, sorted by namespace then name (like etcd).

        Args:
            kind: Object kind (``Pod``).
            namespace: Restrict to one namespace; None lists all namespaces.
            label_selector: kubectl ``-l`` syntax (``app=x,tier in (a,b),!canary``).
            field_selector: ``metadata.name=x`` style; any dotted path is accepted.

        Raises:
            BadRequest: A selector does not parse.
        """
        info = kind_info(kind)
        labels_ok = label_matcher(label_selector)
        fields_ok = field_matcher(field_selector)
        with self._lock:
            if info.generated:
                pool = derived_objects(self._objects, info)
            else:
                pool = list(self._objects.get(kind, {}).values())
            out = [
                o
                for o in pool
                if (namespace is None or not info.namespaced
                    or o["metadata"].get("namespace") == namespace)
                and labels_ok(o["metadata"].get("labels") or {})
                and fields_ok(o)
            ]
            out.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
            now = self._clock()
            return [heartbeat(clone(o), now) for o in out]

    def shared(self, kind: str) -> builtins.list[dict[str, Any]]:
        """Every stored object of ``kind``, shared by every caller: read-only.

        As ``list`` returns them, copied once per change of the kind. The judge and the
        kubelet read every pod, namespace and policy after each write; copying all of them
        each time was a third of a k8s episode's CPU, while most writes change one policy
        and no pod.
        """
        info = kind_info(kind)
        if info.generated:
            raise ValueError(f"{kind} is derived, not stored: use list()")
        with self._lock:
            written = self._written.get(info.key, 0)
            cached = self._shared.get(info.key)
            if cached is None or cached[0] != written:
                cached = (written, self.list(kind))
                self._shared[info.key] = cached
            return cached[1]

    def list_with_revision(
        self, kind: str, namespace: str | None = None, label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[builtins.list[dict[str, Any]], int]:
        """``list`` and the revision it reflects, read together (a watch's starting point)."""
        with self._lock:
            return self.list(kind, namespace, label_selector, field_selector), self._revision

    def watch(
        self,
        kind: str,
        namespace: str | None,
        since: int,
        stop: threading.Event,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """Follow changes of ``kind`` after revision ``since`` until ``stop`` is set.

        Yields ``("ADDED"|"MODIFIED"|"DELETED", object)`` for objects in ``namespace`` (all
        when None) matching the selectors.

        Raises:
            BadRequest: A selector does not parse.
        """
        info = kind_info(kind)
        labels_ok = label_matcher(label_selector)
        fields_ok = field_matcher(field_selector)

        def wanted(key: str, obj: dict[str, Any]) -> bool:
            meta = obj["metadata"]
            return (key == info.key and (namespace is None or not info.namespaced
                                         or meta.get("namespace") == namespace)
                    and labels_ok(meta.get("labels") or {}) and fields_ok(obj))

        return self.changes.follow(since, wanted, stop)


    def _key(self, info: KindInfo, namespace: str | None, name: str) -> Key:
        return ((namespace or "default") if info.namespaced else "", name)
