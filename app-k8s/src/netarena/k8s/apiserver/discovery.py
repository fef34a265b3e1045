"""Discovery and OpenAPI documents, all derived from the kinds table.

kubectl starts every command with discovery. It asks for aggregated discovery
(``apidiscovery.k8s.io/v2``) first, which lets it learn every resource from two requests
(``/api`` and ``/apis``); the legacy documents are served too for older clients. The OpenAPI
v3 documents are minimal: PATCH/PUT/POST operations tagged with
``x-kubernetes-group-version-kind`` and declaring the ``fieldValidation`` parameter, which is
what kubectl probes before ``patch``, ``apply`` and ``label``.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from netarena.k8s.apiserver.kinds import KIND_DESCRIPTIONS, KINDS, KindInfo
from netarena.k8s.apiserver.models import (
    SHARED_SCHEMAS,
    component_schemas,
    model_name,
    schema_name,
)

__all__ = [
    "SERVER_VERSION",
    "AGGREGATED_CONTENT_TYPE",
    "version_info",
    "legacy_api_versions",
    "api_group_list",
    "api_group",
    "api_resource_list",
    "aggregated_discovery",
    "group_versions",
    "openapi_root",
    "openapi_document",
]

SERVER_VERSION = ("1", "37", "v1.37.1")
"""Major, minor and git version reported by ``/version`` (the release of the bundled
kubectl; its commit, build date and Go version below are that release's)."""

AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
"""Content type of an aggregated discovery answer (kubectl checks it before parsing)."""


def version_info() -> dict[str, Any]:
    """The ``/version`` document."""
    major, minor, git = SERVER_VERSION
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "gitVersion": git,
        "gitCommit": "f78e722310e50bcaca9276be22276d9e91d91308",
        "gitTreeState": "clean",
        "buildDate": "2026-09-23T17:10:04Z",
        "goVersion": "go1.26.8",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def group_versions() -> list[tuple[str, str]]:
    """Every served (group, version), core first, in a stable order."""
    seen: list[tuple[str, str]] = []
    for info in KINDS.values():
        gv = (info.group, info.version)
        if gv not in seen:
            seen.append(gv)
    return seen


def legacy_api_versions(server_address: str) -> dict[str, Any]:
    """The legacy ``/api`` document (``APIVersions``)."""
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def api_group(group: str) -> dict[str, Any]:
    """One ``APIGroup`` entry (also served at ``/apis/<group>``)."""
    versions = [
        {"groupVersion": f"{group}/{v}", "version": v} for g, v in group_versions() if g == group
    ]
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": versions,
        "preferredVersion": versions[0],
    }


def api_group_list() -> dict[str, Any]:
    """The legacy ``/apis`` document (``APIGroupList``)."""
    groups: list[dict[str, Any]] = []
    for group, _ in group_versions():
        if group and all(g["name"] != group for g in groups):
            entry = api_group(group)
            entry.pop("kind")
            entry.pop("apiVersion")
            groups.append(entry)
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


_SUB_VERBS = {
    "status": ("get", "patch", "update"), "scale": ("get", "patch", "update"),
    "ephemeralcontainers": ("get", "patch", "update"), "approval": ("get", "patch", "update"),
    "exec": ("create", "get"), "attach": ("create", "get"), "portforward": ("create", "get"),
    "log": ("get",), "binding": ("create",), "eviction": ("create",), "token": ("create",),
    "finalize": ("update",), "proxy": ("create", "delete", "get", "patch", "update"),
}
_SUB_KINDS = {"scale": ("autoscaling", "v1", "Scale"), "exec": ("", "v1", "PodExecOptions"),
              "attach": ("", "v1", "PodAttachOptions"), "log": ("", "v1", "Pod"),
              "portforward": ("", "v1", "PodPortForwardOptions"),
              "eviction": ("policy", "v1", "Eviction"), "binding": ("", "v1", "Binding"),
              "token": ("authentication.k8s.io", "v1", "TokenRequest")}


def _sub_kind(k: KindInfo, sub: str) -> tuple[str, str, str]:
    proxy = ("", "v1", {"Pod": "PodProxyOptions", "Node": "NodeProxyOptions",
                        "Service": "ServiceProxyOptions"}.get(k.kind, k.kind))
    return proxy if sub == "proxy" else _SUB_KINDS.get(sub, (k.group, k.version, k.kind))


def _kinds_in(group: str, version: str) -> list[KindInfo]:
    return [k for k in KINDS.values() if (k.group, k.version) == (group, version)]


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    """The ``APIResourceList`` of one group version (None when not served)."""
    kinds = _kinds_in(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for k in kinds:
        entry: dict[str, Any] = {
            "name": k.plural,
            "singularName": k.singular,
            "namespaced": k.namespaced,
            "kind": k.kind,
            "verbs": list(k.verbs),
        }
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if k.categories:
            entry["categories"] = list(k.categories)
        resources.append(entry)
        for sub in k.subresources:
            sub_group, sub_version, sub_kind = _sub_kind(k, sub)
            entry = {"name": f"{k.plural}/{sub}", "singularName": "",
                     "namespaced": k.namespaced, "kind": sub_kind,
                     "verbs": list(_SUB_VERBS[sub])}
            if (sub_group, sub_version) != (k.group, k.version):
                entry.update(group=sub_group, version=sub_version)
            resources.append(entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv,
            "resources": resources}


def _aggregated_resource(k: KindInfo) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "resource": k.plural,
        "responseKind": {"group": k.group, "version": k.version, "kind": k.kind},
        "scope": "Namespaced" if k.namespaced else "Cluster",
        "singularResource": k.singular,
        "verbs": list(k.verbs),
    }
    if k.short_names:
        entry["shortNames"] = list(k.short_names)
    if k.categories:
        entry["categories"] = list(k.categories)
    if k.subresources:
        entry["subresources"] = [
            {
                "subresource": sub,
                "responseKind": dict(zip(("group", "version", "kind"), _sub_kind(k, sub),
                                         strict=True)),
                "verbs": list(_SUB_VERBS[sub]),
            }
            for sub in k.subresources
        ]
    return entry


def aggregated_discovery(core: bool) -> dict[str, Any]:
    """``APIGroupDiscoveryList`` for ``/api`` (core) or ``/apis`` (named groups)."""
    items: list[dict[str, Any]] = []
    for group, version in group_versions():
        if (group == "") != core:
            continue
        resources = [_aggregated_resource(k) for k in _kinds_in(group, version)]
        items.append({
            "metadata": {"name": group, "creationTimestamp": None},
            "versions": [{"version": version, "resources": resources, "freshness": "Current"}],
        })
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {}, "items": items}


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def _openapi_root() -> str:
    return json.dumps(_build_openapi_root())


def openapi_root() -> dict[str, Any]:
    """The ``/openapi/v3`` index: one ``serverRelativeURL`` (content-hashed) per group version."""
    root: dict[str, Any] = json.loads(_openapi_root())
    return root


def _build_openapi_root() -> dict[str, Any]:
    paths = {}
    for group, version in group_versions():
        rel = _gv_path(group, version)
        kinds = [(k.key, k.plural, k.verbs, k.subresources) for k in _kinds_in(group, version)]
        digest = hashlib.sha512(
            json.dumps([SERVER_VERSION, kinds]).encode()).hexdigest()[:64].upper()
        paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
    return {"paths": paths}


_PARAMS = [
    {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
    {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
    {"name": "fieldValidation", "in": "query",
     "schema": {"type": "string", "uniqueItems": True}},
]
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


def _operation(
    k: KindInfo, action: str, op_id: str, *, body: tuple[str, ...] = ()
) -> dict[str, Any]:
    ref = {"$ref": f"#/components/schemas/{_schema_name(k)}"}
    op: dict[str, Any] = {
        "operationId": op_id,
        "responses": {
            "200": {"description": "OK", "content": {"application/json": {"schema": ref}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": k.group, "version": k.version, "kind": k.kind},
    }
    if body:
        op["parameters"] = list(_PARAMS)
        op["requestBody"] = {"content": {t: {"schema": {"type": "object"}} for t in body},
                             "required": True}
    return op


def _schema_name(k: KindInfo) -> str:
    group = k.group.split(".")
    prefix = "io.k8s.api." + (group[0] if k.group else "core")
    return f"{prefix}.{k.version}.{k.kind}"


def openapi_document(group: str, version: str) -> dict[str, Any] | None:
    """The OpenAPI v3 document of one group version (None when not served).

    Paths carry each operation's group-version-kind and parameters; component schemas
    come from the official client's models (``models.component_schemas``). Built once
    per process, then copied.
    """
    text = _openapi_text(group, version)
    return None if text is None else dict(json.loads(text))


@functools.cache
def _openapi_text(group: str, version: str) -> str | None:
    doc = _build_openapi_document(group, version)
    return None if doc is None else json.dumps(doc)


def _build_openapi_document(group: str, version: str) -> dict[str, Any] | None:
    kinds = _kinds_in(group, version)
    if not kinds:
        return None
    base = "/" + _gv_path(group, version)
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for k in kinds:
        name = (k.group.split(".")[0].capitalize() if k.group else "Core") + version.capitalize()
        ns_part = "Namespaced" if k.namespaced else ""
        item_path = (f"{base}/namespaces/{{namespace}}/{k.plural}/{{name}}" if k.namespaced
                     else f"{base}/{k.plural}/{{name}}")
        coll_path = item_path.rsplit("/", 1)[0]
        item: dict[str, Any] = {"get": _operation(k, "get", f"read{name}{ns_part}{k.kind}")}
        coll: dict[str, Any] = {"get": _operation(k, "list", f"list{name}{ns_part}{k.kind}")}
        if "patch" in k.verbs:
            item["patch"] = _operation(k, "patch", f"patch{name}{ns_part}{k.kind}",
                                       body=_PATCH_TYPES)
            item["put"] = _operation(k, "put", f"replace{name}{ns_part}{k.kind}",
                                     body=("application/json",))
            item["delete"] = _operation(k, "delete", f"delete{name}{ns_part}{k.kind}")
            coll["post"] = _operation(k, "post", f"create{name}{ns_part}{k.kind}",
                                      body=("application/json",))
        paths[item_path] = item
        paths[coll_path] = coll
        gvk = {"group": k.group, "version": k.version, "kind": k.kind}
        found = component_schemas(model_name(k), gvk)
        root = found.get(schema_name(model_name(k)))
        if root is not None:
            root["description"] = KIND_DESCRIPTIONS.get(k.kind, "")
            schemas.update(found)
            schemas[_schema_name(k)] = {"allOf": [{"$ref": "#/components/schemas/"
                                                   + schema_name(model_name(k))}]} if \
                _schema_name(k) != schema_name(model_name(k)) else root
    schemas.update(SHARED_SCHEMAS)
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION[2]},
        "paths": paths,
        "components": {"schemas": schemas},
    }
