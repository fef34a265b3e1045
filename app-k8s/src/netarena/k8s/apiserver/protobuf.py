r"""The few protobuf request bodies kubectl sends: access and identity reviews.

kubectl's typed clients (``auth can-i``, ``auth whoami``) post
``application/vnd.kubernetes.protobuf`` and accept JSON back. The body is the API's
envelope (``k8s\0`` then a ``runtime.Unknown`` whose ``raw`` field holds the object);
only the review specs' string fields are needed, read here by field number.
"""

from __future__ import annotations

from typing import Any

from netarena.k8s.apiserver.kinds import BadRequest

__all__ = ["decode_review"]

_MAGIC = b"k8s\x00"
_RESOURCE_FIELDS = ("namespace", "verb", "group", "version", "resource", "subresource",
                    "name")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise BadRequest("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> dict[int, bytes]:
    """Length-delimited fields by number (the last occurrence wins); others skipped."""
    out: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 2:
            size, pos = _varint(data, pos)
            out[number], pos = data[pos:pos + size], pos + size
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise BadRequest(f"unsupported protobuf wire type {wire}")
    return out


def _strings(data: bytes, names: tuple[str, ...]) -> dict[str, str]:
    fields = _fields(data)
    return {name: fields[i + 1].decode() for i, name in enumerate(names)
            if fields.get(i + 1)}


def decode_review(body: bytes, kind: str) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded review of ``kind``, as ``{"spec": {...}}``.

    Raises:
        BadRequest: Not a Kubernetes protobuf envelope.
    """
    if not body.startswith(_MAGIC):
        raise BadRequest("the protobuf body lacks the k8s envelope")
    raw = _fields(body[len(_MAGIC):]).get(2, b"")
    spec = _fields(_fields(raw).get(2, b""))
    out: dict[str, Any] = {}
    if kind == "SelfSubjectRulesReview":
        if spec.get(1):
            out["namespace"] = spec[1].decode()
    elif kind != "SelfSubjectReview":
        if 1 in spec:
            out["resourceAttributes"] = _strings(spec[1], _RESOURCE_FIELDS)
        if 2 in spec:
            out["nonResourceAttributes"] = _strings(spec[2], ("path", "verb"))
    return {"spec": out}
