"""Field ownership (``metadata.managedFields``) and server-side apply.

Every write records which manager set which fields, as the API server's structured-merge
code does: a create gives the writer every field it set, an update or patch gives it the
fields whose values it changed (taking them from their previous owners), and a
server-side apply makes the applier own exactly the fields of its configuration. Apply
merges the configuration into the live object, removes fields the applier owned before
and no longer sets, and refuses to change a value another manager owns unless forced.

Paths are tuples of field names; an item of a list merged by key (``containers``) is
``("k", key-json)``; lists without a key, label selectors and quantities are atomic (one
leaf), while string maps such as labels are granular (one leaf per key).
"""

from __future__ import annotations

import json
from typing import Any

from netarena.k8s.apiserver.kinds import Conflict, KindInfo, clone

__all__ = ["fields_v1", "leaves", "record_status", "record_update", "server_side_apply"]

Path = tuple[Any, ...]
_KEYED = {"containers": "name", "initContainers": "name", "ephemeralContainers": "name",
          "volumes": "name", "env": "name", "imagePullSecrets": "name",
          "volumeMounts": "mountPath", "ownerReferences": "uid"}
_ATOMIC = {"podSelector", "namespaceSelector", "selector", "matchLabels", "matchExpressions",
           "ipBlock", "labelSelector"}
_GRANULAR_MAPS = {"labels", "annotations", "data", "binaryData", "nodeSelector", "limits",
                  "requests"}
_SKIPPED = {"managedFields", "resourceVersion", "uid", "creationTimestamp", "generation",
            "selfLink", "deletionTimestamp", "name", "namespace"}
_AUTO_FIELDS = {"apiVersion", "kind", "status"}


def _ports_key(parent: str) -> str | None:
    return {"containers": "containerPort", "spec": "port"}.get(parent)


def leaves(obj: Any, path: Path = (), parent: str = "") -> set[Path]:
    """Every owned leaf path of an object (``apiVersion``, ``kind`` and status excluded)."""
    out: set[Path] = set()
    if not isinstance(obj, dict):
        return {path}
    for key, value in obj.items():
        if (not path and key in _AUTO_FIELDS) or (path == ("metadata",) and key in _SKIPPED):
            continue
        here = (*path, key)
        merge_key = _KEYED.get(key) or (_ports_key(parent) if key == "ports" else None)
        if key in _ATOMIC or value in (None, {}, []) or not isinstance(value, (dict, list)):
            out.add(here)
        elif isinstance(value, list):
            if merge_key and all(isinstance(v, dict) and merge_key in v for v in value):
                for item in value:
                    ident = ("k", json.dumps({merge_key: item[merge_key]}, sort_keys=True))
                    out.add((*here, ident, "."))
                    out |= leaves(item, (*here, ident), key)
            else:
                out.add(here)
        elif key in _GRANULAR_MAPS:
            out.add((*here, "."))
            out |= {(*here, k) for k in value}
        else:
            out |= leaves(value, here, key)
    return out


def _get(obj: Any, path: Path) -> Any:
    cur = obj
    for seg in path:
        if seg == ".":
            return cur
        if isinstance(seg, tuple):
            key, want = next(iter(json.loads(seg[1]).items()))
            cur = next((i for i in cur or [] if isinstance(i, dict) and i.get(key) == want),
                       None)
        else:
            cur = cur.get(seg) if isinstance(cur, dict) else None
        if cur is None:
            return None
    return cur


def fields_v1(paths: set[Path]) -> dict[str, Any]:
    """Render a path set as ``fieldsV1`` (``{"f:spec": {"f:ingress": {}}}``)."""
    tree: dict[str, Any] = {}
    for path in sorted(paths, key=lambda p: [str(s) for s in p]):
        node = tree
        for seg in path:
            name = "." if seg == "." else (f"k:{seg[1]}" if isinstance(seg, tuple)
                                           else f"f:{seg}")
            node = node.setdefault(name, {})
    return tree


def _paths(tree: dict[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for name, sub in tree.items():
        seg: Any = "." if name == "." else (("k", name[2:]) if name.startswith("k:")
                                            else name[2:])
        here = (*prefix, seg)
        out |= _paths(sub, here) if sub else {here}
    return out


def _entries(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return list((obj.get("metadata") or {}).get("managedFields") or [])


def _entry(manager: str, operation: str, info: KindInfo, paths: set[Path],
           when: str) -> dict[str, Any]:
    return {"manager": manager, "operation": operation, "apiVersion": info.api_version,
            "time": when, "fieldsType": "FieldsV1", "fieldsV1": fields_v1(paths)}


def record_update(info: KindInfo, old: dict[str, Any] | None, new: dict[str, Any],
                  manager: str, when: str) -> None:
    """Give ``manager`` the fields this write (create, update or patch) set or changed."""
    now = leaves(new)
    changed = now if old is None else {p for p in now if _get(old, p) != _get(new, p)}
    kept = []
    for entry in _entries(old or {}):
        mine = _paths(entry.get("fieldsV1") or {}) & now
        if entry["manager"] == manager and entry["operation"] == "Update":
            changed |= mine
            continue
        mine -= changed
        if mine:
            kept.append({**entry, "fieldsV1": fields_v1(mine)})
    if changed:
        kept.append(_entry(manager, "Update", info, changed, when))
    new.setdefault("metadata", {})["managedFields"] = kept


def record_status(info: KindInfo, obj: dict[str, Any], manager: str, when: str) -> None:
    """Add ``manager``'s ownership of ``obj``'s status (the kubelet's, for a pod)."""
    paths = leaves(obj.get("status") or {}, ("status",))
    if paths:
        entry = _entry(manager, "Update", info, paths, when)
        entry["subresource"] = "status"
        obj["metadata"].setdefault("managedFields", []).append(entry)


def _merge(live: Any, applied: Any, parent: str = "") -> Any:
    if not isinstance(live, dict) or not isinstance(applied, dict):
        return clone(applied)
    out = clone(live)
    for key, value in applied.items():
        merge_key = _KEYED.get(key) or (_ports_key(parent) if key == "ports" else None)
        if (isinstance(value, list) and merge_key and isinstance(out.get(key), list)
                and all(isinstance(v, dict) and merge_key in v for v in value)):
            by_key = {i.get(merge_key): i for i in out[key] if isinstance(i, dict)}
            out[key] = [_merge(by_key.get(v[merge_key]), v, key) for v in value] + [
                i for i in out[key] if i.get(merge_key) not in {v[merge_key] for v in value}]
        elif isinstance(value, dict) and key not in _ATOMIC:
            out[key] = _merge(out.get(key), value, key)
        else:
            out[key] = clone(value)
    return out


def _remove(obj: dict[str, Any], path: Path) -> None:
    parent = _get(obj, path[:-1]) if len(path) > 1 else obj
    last = path[-1]
    if last == "." and len(path) > 1:
        _remove(obj, path[:-1])
    elif isinstance(last, tuple) and isinstance(parent, list):
        key, want = next(iter(json.loads(last[1]).items()))
        parent[:] = [i for i in parent if not (isinstance(i, dict) and i.get(key) == want)]
    elif isinstance(parent, dict):
        parent.pop(last, None)


def _shown(path: Path) -> str:
    return "".join(f"[{json.loads(s[1])}]" if isinstance(s, tuple) else f".{s}"
                   for s in path if s != ".")


def server_side_apply(info: KindInfo, live: dict[str, Any], applied: dict[str, Any],
                      manager: str, force: bool, when: str) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` to ``live``.

    Raises:
        Conflict: ``applied`` changes values other managers own and ``force`` is false.
    """
    wanted = leaves(applied)
    entries = _entries(live)
    before = next((_paths(e["fieldsV1"]) for e in entries
                   if e["manager"] == manager and e["operation"] == "Apply"), set())
    others: dict[Path, str] = {}
    for e in entries:
        if not (e["manager"] == manager and e["operation"] == "Apply"):
            for p in _paths(e.get("fieldsV1") or {}):
                others.setdefault(p, e["manager"])
    conflicts = sorted((others[p], _shown(p)) for p in wanted
                       if p in others and p[-1] != "." and _get(live, p) != _get(applied, p))
    if conflicts and not force:
        lines = "\n".join(f'- conflict with "{m}": {f}' for m, f in conflicts)
        raise Conflict(f"Apply failed with {len(conflicts)} conflict"
                       f"{'s' if len(conflicts) > 1 else ''}:\n{lines}",
                       {"name": live["metadata"]["name"], "group": info.group,
                        "kind": info.plural,
                        "causes": [{"reason": "FieldManagerConflict", "field": f,
                                    "message": f'conflict with "{m}"'} for m, f in conflicts]})
    out: dict[str, Any] = _merge(live, applied)
    for path in sorted(before - wanted - set(others), key=len, reverse=True):
        _remove(out, path)
    kept = []
    for e in entries:
        if e["manager"] == manager and e["operation"] == "Apply":
            continue
        mine = _paths(e.get("fieldsV1") or {}) - (wanted if force else set())
        if mine:
            kept.append({**e, "fieldsV1": fields_v1(mine)})
    kept.append(_entry(manager, "Apply", info, wanted, when))
    out["metadata"]["managedFields"] = kept
    return out
