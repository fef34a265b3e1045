"""A thread-safe in-memory Kubernetes object store: the state behind the embedded API.

Objects are plain JSON dicts, copied on the way in and out so no caller can mutate stored
state behind the store's back. Writes run the API server's defaulting and validation, and a
Deployment owns its Pods directly (no ReplicaSet objects are stored; a ReplicaSet view is
derived for ``describe``). Pod names, pod IPs and service IPs are deterministic for a given
seed and sequence of writes, so episodes replay identically.
"""

from __future__ import annotations

import builtins
import contextlib
import json
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Literal

from netarena.k8s.apiserver.defaults import apply_defaults
from netarena.k8s.apiserver.fields import record_update, server_side_apply
from netarena.k8s.apiserver.kinds import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    KindInfo,
    NotFound,
    clone,
    kind_info,
)
from netarena.k8s.apiserver.patch import apply_patch
from netarena.k8s.apiserver.reads import Key, StoreReads
from netarena.k8s.apiserver.schema import prune_unknown_fields
from netarena.k8s.apiserver.validation import validate
from netarena.k8s.apiserver.watch import ChangeLog
from netarena.k8s.apiserver.workloads import WorkloadController

__all__ = ["FieldValidation", "ObjectStore", "clone", "MAX_OBJECT_BYTES"]

_STATUS_KINDS = {"Pod", "Deployment", "Service"}
MAX_OBJECT_BYTES = 1_572_864
"""The largest object etcd stores (``--max-request-bytes``, 1.5 MiB)."""
_DEFAULT_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")

FieldValidation = Literal["Ignore", "Warn", "Strict"]



class ObjectStore(StoreReads, WorkloadController):
    """Kubernetes objects by kind, namespace and name, with API-server write semantics.

    Args:
        seed: Makes pod names, uids and service IPs reproducible.
        node_name: The node pods go to while the store holds no Node objects.
        clock: Seconds since the epoch (tests may freeze it); used for timestamps only.
        created_at: When the cluster came up: the default namespaces' creation time
            (defaults to ``clock()``).
    """

    def __init__(
        self,
        seed: int = 0,
        *,
        node_name: str = "kind-control-plane",
        clock: Callable[[], float] = time.time,
        created_at: float | None = None,
    ) -> None:
        self.seed = seed
        self.node_name = node_name
        self._clock = clock
        self._lock = threading.RLock()
        self.changes = ChangeLog(self._lock)
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {}
        self._revision = 0
        self._written: dict[str, int] = {}
        self._shared: dict[str, tuple[int, builtins.list[dict[str, Any]]]] = {}
        self._rng = random.Random(seed)
        self._next_pod_ip: dict[str, int] = {}
        self._frozen_at: float | None = None
        self._manager = "kubectl"
        self._service_ips: set[str] = set()
        self._spawned: dict[Key, int] = {}
        with self.at(clock() if created_at is None else created_at):
            for ns in _DEFAULT_NAMESPACES:
                self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    @contextlib.contextmanager
    def at(self, timestamp: float, manager: str | None = None) -> Iterator[None]:
        """Within the block, writes are stamped ``timestamp`` (seconds since the epoch).

        Builds a cluster whose objects carry the ages they would have had: the cluster's own
        objects weeks ago, an application's deploy some hours ago. ``manager`` names the
        writer in ``managedFields`` (``kubeadm``, ``kubectl-client-side-apply``).
        """
        with self._lock:
            before = self._frozen_at, self._manager
            self._frozen_at, self._manager = timestamp, manager or self._manager
            try:
                yield
            finally:
                self._frozen_at, self._manager = before

    def advance_revision(self, writes: int) -> None:
        """Move the revision on by ``writes`` (the leases and status updates of elapsed time)."""
        with self._lock:
            self._revision += max(0, writes)

    @property
    def revision(self) -> int:
        """Bumped on every write; equal revisions mean identical state."""
        return self._revision

    # ---------------------------------------------------------------- writes
    def create(
        self,
        obj: dict[str, Any],
        *,
        dry_run: bool = False,
        field_validation: FieldValidation = "Ignore",
        warnings: builtins.list[str] | None = None,
        manager: str | None = None,
    ) -> dict[str, Any]:
        """Store a new object; a Deployment also creates its Pods.

        Fills uid, resourceVersion, creationTimestamp and generation, applies defaults and
        validation, assigns pod and service IPs. Unknown fields are dropped (``Ignore``),
        dropped and reported into ``warnings`` (``Warn``) or rejected (``Strict``), like the
        API server's ``fieldValidation``.

        Raises:
            AlreadyExists: The name is taken.
            NotFound: Its namespace does not exist.
            Invalid: Validation failed.
            BadRequest: The object is not a dict with a known kind, or has unknown fields
                under ``Strict`` field validation.
        """
        info = self._info_of(obj)
        with self._lock:
            new = _known_fields(info, obj, field_validation, warnings)
            meta = new.setdefault("metadata", {})
            self._place(info, meta)
            apply_defaults(new, info)
            validate(new, info)
            key = self._key(info, meta.get("namespace"), meta["name"])
            if key in self._objects.get(info.key, {}):
                raise AlreadyExists(
                    f'{info.resource} "{meta["name"]}" already exists',
                    {"name": meta["name"], "group": info.group, "kind": info.plural},
                )
            meta.pop("resourceVersion", None)
            meta["uid"] = self._uid()
            meta["creationTimestamp"] = self._now()
            meta["generation"] = 1
            record_update(info, None, new, manager or self._manager, meta["creationTimestamp"])
            if dry_run or info.generated:  # a derived kind's controller owns its objects
                return new
            self._admit(info, new, None)
            _check_size(new)
            self._write(info, key, new)
            self._created(info, new)
            return clone(self._objects[info.key][key])

    def replace(
        self,
        obj: dict[str, Any],
        *,
        dry_run: bool = False,
        field_validation: FieldValidation = "Ignore",
        warnings: builtins.list[str] | None = None,
        manager: str | None = None,
    ) -> dict[str, Any]:
        """Replace an existing object (PUT). Status of Pods/Deployments/Services is kept.

        ``field_validation`` and ``warnings`` work as in ``create``.

        Raises:
            NotFound: The object does not exist.
            Conflict: ``metadata.resourceVersion`` is given and stale.
            Invalid: Validation failed or an immutable field changed.
        """
        info = self._info_of(obj)
        with self._lock:
            meta = obj.get("metadata") or {}
            old = self.get(info.key, meta.get("namespace") if info.namespaced else None,
                           str(meta.get("name")))
            if meta.get("resourceVersion") not in (None, "", old["metadata"]["resourceVersion"]):
                raise Conflict(
                    f'Operation cannot be fulfilled on {info.plural} "{meta.get("name")}": the '
                    "object has been modified; please apply your changes to the latest version "
                    "and try again",
                    {"name": meta.get("name"), "group": info.group, "kind": info.plural},
                )
            if info.generated:  # its controller puts it back at once
                return old
            new = _known_fields(info, obj, field_validation, warnings)
            return self._update(info, old, new, dry_run, manager or self._manager)

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "strategic",
        *,
        dry_run: bool = False,
        field_validation: FieldValidation = "Ignore",
        warnings: builtins.list[str] | None = None,
        manager: str | None = None,
    ) -> dict[str, Any]:
        """Patch one object: ``json`` (RFC 6902), ``merge`` (RFC 7386) or ``strategic``.

        ``field_validation`` and ``warnings`` apply to the patched object, as in ``create``.

        Raises:
            NotFound: The object does not exist.
            BadRequest: Malformed patch or unknown patch type.
            Invalid: The patched object fails validation, or a JSON patch op failed.
        """
        info = kind_info(kind)
        with self._lock:
            old = self.get(kind, namespace if info.namespaced else None, name)
            if info.generated:  # its controller puts it back at once
                return old
            new = apply_patch(old, patch, patch_type, kind)
            new = _known_fields(info, new, field_validation, warnings)
            return self._update(info, old, new, dry_run, manager or self._manager)

    def apply(
        self,
        obj: dict[str, Any],
        manager: str,
        *,
        force: bool = False,
        dry_run: bool = False,
        field_validation: FieldValidation = "Ignore",
        warnings: builtins.list[str] | None = None,
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply of ``obj`` by ``manager``; creates the object when missing.

        Returns:
            The resulting object, and whether it was created.

        Raises:
            Conflict: The configuration changes fields another manager owns (not forced).
            Invalid: The result fails validation.
        """
        info = self._info_of(obj)
        applied = _known_fields(info, obj, field_validation, warnings)
        meta = applied.get("metadata") or {}
        with self._lock:
            try:
                live = self.get(info.key, meta.get("namespace") if info.namespaced else None,
                                str(meta.get("name")))
            except NotFound:
                created = self.create(applied, dry_run=dry_run, manager=manager)
                for entry in created["metadata"].get("managedFields") or []:
                    entry["operation"] = "Apply"
                if not dry_run:
                    self._objects[info.key][self._key(info, meta.get("namespace"), meta[
                        "name"])]["metadata"]["managedFields"] = created["metadata"][
                        "managedFields"]
                return created, True
            new = server_side_apply(info, live, applied, manager, force, self._now())
            return self._update(info, live, new, dry_run, None), False

    def delete(
        self, kind: str, namespace: str | None, name: str, *, dry_run: bool = False
    ) -> dict[str, Any]:
        """Delete one object and return it. Deleting a Deployment deletes its Pods.

        A Deployment's Pod that is deleted is replaced (as its ReplicaSet would), so
        deleting a workload's pods does not remove the workload.

        Raises:
            NotFound: The object does not exist.
        """
        info = kind_info(kind)
        with self._lock:
            obj = self.get(kind, namespace if info.namespaced else None, name)
            if dry_run or info.generated:  # its controller recreates a derived object at once
                return obj
            key = self._key(info, namespace, name)
            self._remove(kind, key)
            if kind == "Deployment":
                for pod in self._owned_pods(obj):
                    self.delete("Pod", pod["metadata"]["namespace"], pod["metadata"]["name"])
            elif kind == "Namespace":
                for k, objs in self._objects.items():
                    for other in [o for o in objs.values() if
                                  o["metadata"].get("namespace") == name]:
                        self.delete(k, name, other["metadata"]["name"])
            elif kind == "Pod":
                owner = self._owner_deployment(obj)
                if owner is not None:
                    self._reconcile(owner)
            return obj

    # --------------------------------------------------------------- helpers
    def _info_of(self, obj: Any) -> KindInfo:
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise BadRequest("Object 'Kind' is missing in the request body")
        return kind_info(obj["kind"])

    def _place(self, info: KindInfo, meta: dict[str, Any]) -> None:
        if not info.namespaced:
            meta.pop("namespace", None)
            return
        ns = meta.setdefault("namespace", "default")
        if ("", ns) not in self._objects.get("Namespace", {}):
            raise NotFound(f'namespaces "{ns}" not found',
                           {"name": ns, "kind": "namespaces"})

    def _update(
        self, info: KindInfo, old: dict[str, Any], new: dict[str, Any], dry_run: bool,
        manager: str | None,
    ) -> dict[str, Any]:
        """Validate and store ``new`` over ``old``, giving ``manager`` what it changed.

        ``manager`` None keeps the owners ``new`` states (server-side apply set them).
        """
        if not isinstance(new, dict):
            raise BadRequest("the patched object is not a JSON object")
        meta = new.setdefault("metadata", {})
        old_meta = old["metadata"]
        if meta.get("name") != old_meta["name"] or (
            info.namespaced and meta.get("namespace", old_meta["namespace"]) !=
            old_meta["namespace"]
        ):
            raise BadRequest("the name or namespace of the object does not match the request")
        if new.get("kind", info.kind) != info.kind:
            raise BadRequest(f"kind {new.get('kind')!r} does not match {info.kind!r}")
        kept = ("uid", "creationTimestamp", "generation", "namespace", "ownerReferences",
                "resourceVersion") + (("managedFields",) if manager is not None else ())
        for field in kept:
            if field in old_meta:
                meta[field] = old_meta[field]
        if info.kind in _STATUS_KINDS and "status" in old:
            new["status"] = old["status"]
        apply_defaults(new, info)
        self._admit(info, new, old)
        validate(new, info)
        if new.get("spec") != old.get("spec"):
            meta["generation"] = old_meta.get("generation", 1) + 1
        if new == old:
            return new
        if manager is not None:
            record_update(info, old, new, manager, self._now())
        if dry_run:
            return new
        _check_size(new)
        self._write(info, self._key(info, meta.get("namespace"), meta["name"]), new)
        if info.kind == "Deployment":
            self._reconcile(new)
        return clone(self._objects[info.key][self._key(info, meta.get("namespace"),
                                                         meta["name"])])

def _check_size(obj: dict[str, Any]) -> None:
    if len(json.dumps(obj, separators=(",", ":"))) > MAX_OBJECT_BYTES:
        raise ApiError("etcdserver: request is too large")


def _known_fields(
    info: KindInfo, obj: dict[str, Any], mode: FieldValidation, warnings: list[str] | None
) -> dict[str, Any]:
    """Copy ``obj`` without unknown fields; report or reject them per ``mode``."""
    pruned, unknown = prune_unknown_fields(obj, info.kind)
    if unknown and mode == "Strict":
        fields = ", ".join(f'unknown field "{f}"' for f in unknown)
        raise BadRequest(f'{info.kind} in version "{info.version}" cannot be handled as a '
                         f"{info.kind}: strict decoding error: {fields}")
    if unknown and mode == "Warn" and warnings is not None:
        warnings.extend(f'unknown field "{f}"' for f in unknown)
    return clone(pruned)


