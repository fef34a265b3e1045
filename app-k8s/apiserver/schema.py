"""Known-field schemas, for the API server's field validation (``fieldValidation``).

A real API server drops fields it does not know; with ``fieldValidation=Strict`` (what
``kubectl apply`` and ``create`` send) it rejects them, and by default (``Warn``) it answers
with a warning kubectl prints. An agent's typo (``ingres:``) must not silently "work" here
and fail on a cluster. Every kind is described field by field by the official client's
models (``models.known_fields``).
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.apiserver.kinds import kind_info
from netarena.k8s.apiserver.models import known_fields, model_name

__all__ = ["prune_unknown_fields"]

def _walk(value: Any, schema: Any, path: str, found: list[str]) -> Any:
    if schema is None:
        return value
    if isinstance(schema, list):
        if isinstance(value, list):
            return [_walk(v, schema[0], f"{path}[{i}]", found) for i, v in enumerate(value)]
        return value
    if not isinstance(value, dict):
        return value
    out = {}
    for key, sub in value.items():
        where = f"{path}.{key}" if path else key
        if key not in schema:
            found.append(where)
            continue
        out[key] = _walk(sub, schema[key], where, found)
    return out


def prune_unknown_fields(obj: dict[str, Any], kind: str) -> tuple[dict[str, Any], list[str]]:
    """Drop fields the API does not know, as the real server's decoder does.

    Returns:
        The pruned object and the dotted paths of the dropped fields
        (``spec.ingress[0].ports[0].prot``), in document order.
    """
    schema = known_fields(model_name(kind_info(kind))) or {
        "apiVersion": None, "kind": None, "metadata": None, "spec": None, "status": None}
    found: list[str] = []
    pruned = _walk(obj, schema, "", found)
    return pruned, found
