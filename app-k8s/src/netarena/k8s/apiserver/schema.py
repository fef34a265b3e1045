"""Decoding a request body as the API server's Go decoder does: types, then known fields.

A real API server decodes JSON into typed Go structs: a value of the wrong JSON type is a
``BadRequest`` (``json: cannot unmarshal bool into Go struct field
NetworkPolicySpec.spec.egress of type []v1.NetworkPolicyEgressRule``), fields it does not
know are dropped, and with ``fieldValidation=Strict`` (what ``kubectl apply`` and
``create`` send) rejected; by default (``Warn``) it answers with a warning kubectl prints.
An agent's typo (``ingres:``) must not silently "work" here and fail on a cluster, and a
wrong type must not reach the store's code. Every kind is described field by field by the
official client's models (``models.field_types``).
"""

from __future__ import annotations

import re
from typing import Any

from netarena.k8s.apiserver.kinds import BadRequest, kind_info
from netarena.k8s.apiserver.models import (
    QUANTITY_MAPS,
    field_types,
    list_item,
    map_value,
    model_name,
)

__all__ = ["prune_unknown_fields"]

_GO_SCALARS = {"str": "string", "int": "int32", "bool": "bool", "float": "float64",
               "datetime": "v1.Time", "date": "string", "object": "interface {}"}
_MODEL_VERSION = re.compile(r"^(?:Core|Events|Storage|Rbac|Apiextensions|Apiregistration|"
                            r"Admissionregistration|Authentication|Discovery|Flowcontrol|"
                            r"Resource)?(V\d+(?:alpha\d+|beta\d+)?)(.+)$")


class _WrongType(Exception):
    def __init__(self, value: Any, struct: str, path: str, type_text: str) -> None:
        field = re.sub(r"\[\d+\]", "", path)  # Go names the field, not the list index
        super().__init__(f"json: cannot unmarshal {_json_type(value)} into Go struct field "
                         f"{struct}.{field} of type {_go_type(type_text)}")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, float):
        return f"number {value:g}"
    if isinstance(value, int):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "value")


def _go_type(type_text: str) -> str:
    if (item := list_item(type_text)) is not None:
        return "[]" + _go_type(item)
    if (value := map_value(type_text)) is not None:
        return "map[string]" + _go_type(value)
    if type_text in _GO_SCALARS:
        return _GO_SCALARS[type_text]
    m = _MODEL_VERSION.match(type_text)
    return f"{m.group(1).lower()}.{m.group(2)}" if m else type_text


def _scalar_ok(value: Any, type_text: str, quantity: bool) -> bool:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if type_text == "object" or (quantity and number):
        return True
    if type_text == "float":
        return number
    if type_text == "int":
        return number and isinstance(value, int)
    if type_text == "bool":
        return isinstance(value, bool)
    return type_text not in ("str", "datetime", "date") or isinstance(value, str)


def _walk(value: Any, type_text: str, where: tuple[str, str], found: list[str],
          quantity: bool = False) -> Any:
    """``value`` checked against ``type_text``; unknown fields dropped and listed in ``found``.

    ``where`` is the enclosing Go struct's name and the JSON path from the object's root.
    """
    struct, path = where
    if value is None:
        return None
    if (item := list_item(type_text)) is not None:
        if not isinstance(value, list):
            raise _WrongType(value, struct, path, type_text)
        return [_walk(v, item, (struct, f"{path}[{i}]"), found) for i, v in enumerate(value)]
    if (inner := map_value(type_text)) is not None:
        if not isinstance(value, dict):
            raise _WrongType(value, struct, path, type_text)
        return {k: _walk(v, inner, (struct, path), found, quantity) for k, v in value.items()}
    fields = field_types(type_text)
    if fields is None:
        if not _scalar_ok(value, type_text, quantity):
            raise _WrongType(value, struct, path, type_text)
        return value
    if not isinstance(value, dict):
        raise _WrongType(value, struct, path, type_text)
    name = _go_type(type_text).split(".", 1)[-1]
    out = {}
    for key, sub in value.items():
        here = f"{path}.{key}" if path else key
        if key not in fields:
            found.append(here)
            continue
        out[key] = _walk(sub, fields[key], (name, here), found, key in QUANTITY_MAPS)
    return out


def prune_unknown_fields(obj: dict[str, Any], kind: str) -> tuple[dict[str, Any], list[str]]:
    """Decode ``obj`` as the real server's decoder does: check types, drop unknown fields.

    Returns:
        The pruned object and the dotted paths of the dropped fields
        (``spec.ingress[0].ports[0].prot``), in document order.

    Raises:
        BadRequest: A value has the wrong JSON type for its field.
    """
    info = kind_info(kind)
    model = model_name(info)
    found: list[str] = []
    if field_types(model) is None:
        return obj, found
    try:
        pruned = _walk(obj, model, (info.kind, ""), found)
    except _WrongType as exc:
        raise BadRequest(f'{info.kind} in version "{info.version}" cannot be handled as a '
                         f"{info.kind}: {exc}") from None
    return pruned, found
