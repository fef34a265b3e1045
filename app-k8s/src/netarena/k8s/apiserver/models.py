"""Every served kind's fields, read from the official ``kubernetes`` client's models.

The client is generated from the Kubernetes OpenAPI document: each model class lists its
fields (``attribute_map``: Python name → JSON name), their types (``openapi_types``:
``list[V1NetworkPolicyIngressRule]``, ``dict[str, str]``, ``int``...) and, in each
property's docstring, upstream's field description. From them this module builds the
API's known-field trees (for ``fieldValidation``) and OpenAPI v3 component schemas (for
``kubectl explain``), so neither is written by hand.

Strategic-merge metadata (``x-kubernetes-patch-merge-key``) is not in the client; it is
added from the same merge-key table the server's patching uses, so kubectl computes
apply patches exactly as against a cluster.
"""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any

from netarena.k8s.apiserver.kinds import KindInfo
from netarena.k8s.apiserver.refdocs import ref_description

__all__ = ["model_name", "field_types", "list_item", "map_value", "component_schemas",
           "schema_name", "QUANTITY_MAPS"]

_SCALARS = {"str": ("string", None), "int": ("integer", "int32"), "bool": ("boolean", None),
            "float": ("number", "double"), "datetime": ("string", "date-time"),
            "date": ("string", "date")}
_LIST = re.compile(r"^list\[(.+)\]$")
_DICT = re.compile(r"^dict\(str, (.+)\)$|^dict\[str, (.+)\]$")
_INT_OR_STRING = {("V1NetworkPolicyPort", "port"), ("V1ServicePort", "target_port"),
                  ("V1HTTPGetAction", "port"), ("V1TCPSocketAction", "port"),
                  ("V1RollingUpdateDeployment", "max_surge"),
                  ("V1RollingUpdateDeployment", "max_unavailable"),
                  ("V1RollingUpdateDaemonSet", "max_surge"),
                  ("V1RollingUpdateDaemonSet", "max_unavailable"),
                  ("V1PodDisruptionBudgetSpec", "min_available"),
                  ("V1PodDisruptionBudgetSpec", "max_unavailable")}
QUANTITY_MAPS = frozenset({"limits", "requests", "capacity", "allocatable", "hard", "used"})
"""Fields whose map values are quantities (``cpu: 1`` and ``cpu: "1"`` both decode)."""
_MERGE = {"containers": ["name"], "init_containers": ["name"],
          "ephemeral_containers": ["name"], "volumes": ["name"], "env": ["name"],
          "image_pull_secrets": ["name"], "volume_mounts": ["mountPath"],
          "conditions": ["type"], "owner_references": ["uid"], "host_aliases": ["ip"]}
_GROUP_PACKAGES = {"": "core", "apps": "apps", "batch": "batch", "policy": "policy",
                   "autoscaling": "autoscaling"}


def model_name(info: KindInfo) -> str:
    """The client's model class for a kind (``V1NetworkPolicy``, ``CoreV1Event``)."""
    version = info.version[0].upper() + info.version[1:]
    if info.key == "Event.events.k8s.io":
        return "EventsV1Event"
    if info.kind == "Event":
        return "CoreV1Event"
    return f"{version}{info.kind}"


@functools.cache
def _client() -> Any:
    """The client's models package (imported on first use: it loads ~700 classes, ~1 s)."""
    return importlib.import_module("kubernetes.client.models")


def _model(name: str) -> Any:
    return getattr(_client(), name, None)


def _description(cls: Any, attr: str) -> str:
    doc = getattr(getattr(cls, attr, None), "__doc__", None) or ""
    paragraphs = [p.strip() for p in doc.split("\n\n")]
    text = paragraphs[1] if len(paragraphs) > 2 else ""
    return text.replace("  # noqa: E501", "").strip()


def _required(cls: Any, attr: str) -> bool:
    obj = cls.__new__(cls)
    obj.local_vars_configuration = _client().V1ObjectMeta().local_vars_configuration
    try:
        setattr(obj, attr, None)
    except ValueError:
        return True
    return False


@functools.cache
def field_types(model: str) -> dict[str, str] | None:
    """A model's fields: JSON name → the client's type; None for a name the client lacks.

    Types read like ``list[V1NetworkPolicyPort]``, ``dict[str, str]``, ``int``, ``object``.
    """
    cls = _model(model)
    if cls is None:
        return None
    return {json_name: cls.openapi_types[attr] for attr, json_name in cls.attribute_map.items()}


def list_item(type_text: str) -> str | None:
    """The item type of a ``list[...]`` type, else None."""
    m = _LIST.match(type_text)
    return m.group(1) if m else None


def map_value(type_text: str) -> str | None:
    """The value type of a ``dict[str, ...]`` type, else None."""
    m = _DICT.match(type_text)
    return (m.group(1) or m.group(2)) if m else None


def schema_name(model: str) -> str:
    """Upstream-style definition name (``io.k8s.api.networking.v1.NetworkPolicy``)."""
    m = re.match(r"^(?:(Core|Events|Storage|Rbac|Apiextensions|Apiregistration|"
                 r"Admissionregistration|Authentication|Discovery|Flowcontrol|Resource)"
                 r")?(V\d+(?:alpha\d+|beta\d+)?)(.+)$", model)
    if not m:
        return model
    prefix, version, kind = m.group(1), m.group(2).lower(), m.group(3)
    meta = {"ObjectMeta", "LabelSelector", "LabelSelectorRequirement", "ListMeta", "Time",
            "ManagedFieldsEntry", "OwnerReference", "Status", "StatusDetails", "Condition"}
    if kind in meta and version == "v1":
        return f"io.k8s.apimachinery.pkg.apis.meta.v1.{kind}"
    return f"io.k8s.api.{(prefix or 'core').lower()}.{version}.{kind}"


def component_schemas(root: str, gvk: dict[str, str]) -> dict[str, dict[str, Any]]:
    """OpenAPI v3 schemas for ``root`` and every model it references, by definition name.

    Args:
        root: The kind's model class name.
        gvk: ``{"group", "version", "kind"}`` tagged on the root schema, which is how
            ``kubectl explain`` finds a kind's schema.
    """
    out: dict[str, dict[str, Any]] = {}
    _collect(root, out)
    out[schema_name(root)]["x-kubernetes-group-version-kind"] = [gvk]
    return out


def _collect(model: str, out: dict[str, dict[str, Any]]) -> None:
    name = schema_name(model)
    cls = _model(model)
    if name in out or cls is None:
        return
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    out[name] = schema
    required = []
    for attr, json_name in sorted(cls.attribute_map.items(), key=lambda kv: kv[1]):
        prop = _property(cls, attr, cls.openapi_types[attr], out)
        if description := _description(cls, attr) or ref_description(cls.__name__,
                                                                      json_name):
            prop["description"] = description
        schema["properties"][json_name] = prop
        if _required(cls, attr):
            required.append(json_name)
    if required:
        schema["required"] = required


def _property(cls: Any, attr: str, type_text: str,
              out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if (cls.__name__, attr) in _INT_OR_STRING:
        return {"allOf": [{"$ref": "#/components/schemas/"
                                   "io.k8s.apimachinery.pkg.util.intstr.IntOrString"}]}
    if m := _LIST.match(type_text):
        prop = {"type": "array", "items": _item_schema(m.group(1), out)}
        if attr in _MERGE:
            prop.update({"x-kubernetes-patch-merge-key": _MERGE[attr][0],
                         "x-kubernetes-patch-strategy": "merge",
                         "x-kubernetes-list-type": "map",
                         "x-kubernetes-list-map-keys": list(_MERGE[attr])})
        elif attr == "ports" and cls.__name__ in ("V1Container", "V1ServiceSpec"):
            key = "containerPort" if cls.__name__ == "V1Container" else "port"
            prop.update({"x-kubernetes-patch-merge-key": key,
                         "x-kubernetes-patch-strategy": "merge"})
        elif attr == "finalizers":
            prop.update({"x-kubernetes-patch-strategy": "merge",
                         "x-kubernetes-list-type": "set"})
        else:
            prop["x-kubernetes-list-type"] = "atomic"
        return prop
    if m := _DICT.match(type_text):
        value = m.group(1) or m.group(2)
        if attr in QUANTITY_MAPS and value == "str":
            return {"type": "object", "additionalProperties": {
                "allOf": [{"$ref": "#/components/schemas/"
                                   "io.k8s.apimachinery.pkg.api.resource.Quantity"}]}}
        return {"type": "object", "additionalProperties": _item_schema(value, out)}
    return _item_schema(type_text, out)


def _item_schema(type_text: str, out: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if type_text in _SCALARS:
        typ, fmt = _SCALARS[type_text]
        return {"type": typ, **({"format": fmt} if fmt else {})}
    if type_text == "object":
        return {"type": "object"}
    _collect(type_text, out)
    return {"allOf": [{"$ref": f"#/components/schemas/{schema_name(type_text)}"}],
            "default": {}}


SHARED_SCHEMAS: dict[str, dict[str, Any]] = {
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {
        "type": "string", "format": "int-or-string",
        "description": "IntOrString is a type that can hold an int32 or a string."},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {
        "type": "string", "description": "Quantity is a fixed-point representation of a "
                                         "number (for example 100m, 1Gi)."},
}
"""Scalar wrapper types every document references."""
