"""The three patch formats kubectl sends: JSON patch, JSON merge patch, strategic merge.

Strategic merge follows upstream's patch metadata for the kinds we serve: container,
port, env and volume lists merge by their key; NetworkPolicy ``ingress``/``egress`` have no
merge key upstream, so they are replaced whole. The ``$patch``, ``$setElementOrder``,
``$retainKeys`` and ``$deleteFromPrimitiveList`` directives that ``kubectl apply`` emits
are honoured.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from netarena.k8s.apiserver.kinds import BadRequest, Invalid

__all__ = ["json_patch", "merge_patch", "strategic_merge_patch", "apply_patch", "MAX_COPY_BYTES"]

MAX_COPY_BYTES = 3 << 20
"""What the copies of one JSON patch may add in all (the API server's 3 MiB)."""

_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "conditions": "type",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
}
"""Lists that merge by a key, by field name (upstream ``patchMergeKey``)."""

_MERGED_PRIMITIVE_LISTS = {"finalizers"}


def _merge_key(kind: str, path: tuple[str, ...]) -> str | None:
    """Merge key of the list at ``path`` in an object of ``kind`` (None: replace whole)."""
    name = path[-1]
    if name == "ports":
        if len(path) >= 2 and path[-2].lower().endswith("containers[]"):
            return "containerPort"
        if kind == "Service" and path == ("spec", "ports"):
            return "port"
        return None
    if kind == "NetworkPolicy" and name in {"ingress", "egress", "policyTypes"}:
        return None
    return _MERGE_KEYS.get(name)


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split_pointer(pointer: str) -> list[str]:
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise BadRequest(f"invalid JSON pointer {pointer!r}: must start with '/'")
    return [_unescape(t) for t in pointer[1:].split("/")]


def _container(doc: Any, tokens: list[str], pointer: str) -> Any:
    cur = doc
    for token in tokens:
        if isinstance(cur, dict):
            if token not in cur:
                raise Invalid(f"jsonpatch: path {pointer!r} not found (missing {token!r})")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_index(cur, token, pointer, allow_end=False)]
        else:
            raise Invalid(f"jsonpatch: path {pointer!r} goes through a scalar")
    return cur


def _index(seq: list[Any], token: str, pointer: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(seq)
    if not token.isdigit():
        raise Invalid(f"jsonpatch: bad array index {token!r} in {pointer!r}")
    idx = int(token)
    if idx > len(seq) or (idx == len(seq) and not allow_end):
        raise Invalid(f"jsonpatch: index {idx} out of range in {pointer!r}")
    return idx


def _get(doc: Any, pointer: str) -> Any:
    tokens = _split_pointer(pointer)
    return _container(doc, tokens, pointer)


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _split_pointer(pointer)
    if not tokens:
        return value
    parent = _container(doc, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, pointer, allow_end=True), value)
    else:
        raise Invalid(f"jsonpatch: cannot add at {pointer!r}")
    return doc


def _remove(doc: Any, pointer: str) -> Any:
    tokens = _split_pointer(pointer)
    if not tokens:
        raise Invalid("jsonpatch: cannot remove the whole document")
    parent = _container(doc, tokens[:-1], pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise Invalid(f"jsonpatch: remove of missing path {pointer!r}")
        del parent[last]
    elif isinstance(parent, list):
        del parent[_index(parent, last, pointer, allow_end=False)]
    else:
        raise Invalid(f"jsonpatch: cannot remove at {pointer!r}")
    return doc


def json_patch(doc: dict[str, Any], ops: Any) -> dict[str, Any]:
    """Apply an RFC 6902 JSON patch (add, remove, replace, move, copy, test).

    Copies may add at most ``MAX_COPY_BYTES`` in all (the API server's
    ``JSONPatchMaxCopyBytes``): otherwise each copy of a subtree into itself doubles it.

    Raises:
        BadRequest: The patch is not a list of operations.
        Invalid: An operation fails (missing path, failed test, copies too large), as the
            API server reports.
    """
    if not isinstance(ops, list):
        raise BadRequest("json patch must be a JSON array of operations")
    out: Any = copy.deepcopy(doc)
    copied = 0
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise BadRequest(f"invalid json patch operation: {op!r}")
        kind, path = op["op"], op["path"]
        if kind in {"add", "replace", "test"} and "value" not in op:
            raise BadRequest(f"json patch operation {kind!r} needs a value")
        if kind == "add":
            out = _add(out, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            out = _remove(out, path)
        elif kind == "replace":
            _get(out, path)
            out = _add(_remove(out, path), path, copy.deepcopy(op["value"])) if path else op[
                "value"
            ]
        elif kind in {"move", "copy"}:
            source = _get(out, op.get("from", ""))
            if kind == "copy":
                copied += len(json.dumps(source, separators=(",", ":")))
                if copied > MAX_COPY_BYTES:
                    raise Invalid("jsonpatch: Unable to complete the copy, the accumulated size "
                                  f"increase of copy is {copied}, exceeding the limit "
                                  f"{MAX_COPY_BYTES}")
            value = copy.deepcopy(source)
            if kind == "move":
                out = _remove(out, op.get("from", ""))
            out = _add(out, path, value)
        elif kind == "test":
            if _get(out, path) != op["value"]:
                raise Invalid(f"jsonpatch: test failed at {path!r}")
        else:
            raise BadRequest(f"unknown json patch operation {kind!r}")
    if not isinstance(out, dict):
        raise Invalid("jsonpatch: the result is not an object")
    return out


def merge_patch(doc: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch (null deletes; lists replace whole)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(doc) if isinstance(doc, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def strategic_merge_patch(doc: dict[str, Any], patch: Any, kind: str) -> dict[str, Any]:
    """Apply a Kubernetes strategic merge patch to an object of ``kind``.

    Raises:
        BadRequest: The patch is not a JSON object.
    """
    if not isinstance(patch, dict):
        raise BadRequest("strategic merge patch must be a JSON object")
    return _smp_map(copy.deepcopy(doc), patch, kind, ())


def _smp_map(
    doc: dict[str, Any], patch: dict[str, Any], kind: str, path: tuple[str, ...]
) -> dict[str, Any]:
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return {}
    retain = patch.get("$retainKeys")
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in {"$patch", "$retainKeys"}:
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.split("/", 1)[1]] = value
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(doc.get(field), list):
                doc[field] = [v for v in doc[field] if v not in value]
            continue
        if value is None:
            doc.pop(key, None)
        elif isinstance(value, dict):
            cur = doc.get(key)
            doc[key] = _smp_map(cur if isinstance(cur, dict) else {}, value, kind, path + (key,))
        elif isinstance(value, list):
            doc[key] = _smp_list(doc.get(key), value, kind, path + (key,))
        else:
            doc[key] = value
    for field, order in orders.items():
        if isinstance(doc.get(field), list):
            doc[field] = _reorder(doc[field], order, _merge_key(kind, path + (field,)))
    if isinstance(retain, list):
        doc = {k: v for k, v in doc.items() if k in retain}
    return doc


def _smp_list(cur: Any, patch: list[Any], kind: str, path: tuple[str, ...]) -> list[Any]:
    field = path[-1]
    key = _merge_key(kind, path)
    if field in _MERGED_PRIMITIVE_LISTS and isinstance(cur, list):
        return cur + [v for v in patch if v not in cur]
    if key is None or not isinstance(cur, list):
        if key is not None:
            return [
                {k: v for k, v in item.items() if k != "$patch"}
                for item in patch
                if not (isinstance(item, dict) and item.get("$patch") == "delete")
            ]
        return copy.deepcopy(patch)
    out = list(cur)
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            copy.deepcopy(i)
            for i in patch
            if not (isinstance(i, dict) and i.get("$patch") == "replace")
        ]
    item_path = path[:-1] + (f"{field}[]",)
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise BadRequest(f"strategic merge patch: {field} item lacks merge key {key!r}")
        idx = next(
            (i for i, o in enumerate(out) if isinstance(o, dict) and o.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if idx is not None:
                del out[idx]
        elif idx is None:
            out.append(_smp_map({}, item, kind, item_path))
        else:
            out[idx] = _smp_map(out[idx], item, kind, item_path)
    return out


def _reorder(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    def rank(item: Any) -> int:
        ident = item.get(key) if key and isinstance(item, dict) else item
        ids = [o.get(key) if key and isinstance(o, dict) else o for o in order]
        return ids.index(ident) if ident in ids else len(ids)

    return sorted(items, key=rank)


def apply_patch(doc: dict[str, Any], patch: Any, patch_type: str, kind: str) -> dict[str, Any]:
    """Dispatch on ``patch_type``: ``json``, ``merge`` or ``strategic``.

    Raises:
        BadRequest: Unknown patch type or malformed patch.
        Invalid: A JSON patch operation failed.
    """
    if patch_type == "json":
        return json_patch(doc, patch)
    if patch_type == "merge":
        if not isinstance(patch, dict):
            raise BadRequest("merge patch must be a JSON object")
        merged: dict[str, Any] = merge_patch(doc, patch)
        return merged
    if patch_type == "strategic":
        return strategic_merge_patch(doc, patch, kind)
    raise BadRequest(f"unsupported patch type {patch_type!r}")
