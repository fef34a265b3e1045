"""What an API request asks for beyond its path.

Its RBAC verb, query parameters, wanted content (Table, aggregated discovery), field
validation, field manager, dry run and JSON body.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from netarena.k8s.apiserver.kinds import BadRequest, KindInfo
from netarena.k8s.apiserver.store import FieldValidation

__all__ = [
    "check_body_target", "delete_dry_run", "field_manager", "field_validation", "json_body",
    "rbac_verb", "split_path", "wants_aggregated", "wants_table", "warning_headers",
]


def rbac_verb(method: str, name: str | None, params: dict[str, str]) -> str:
    """The RBAC verb of a request (``get``, ``list``, ``watch``, ``create``, ...)."""
    if method == "GET":
        if params.get("watch") in ("true", "1"):
            return "watch"
        return "get" if name else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower())


def split_path(path: str) -> tuple[list[str], dict[str, str]]:
    """The path's segments and its query parameters (the last value of each)."""
    parts = urlsplit(path)
    params = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
    return [p for p in parts.path.split("/") if p], params


def wants_table(headers: dict[str, str]) -> bool:
    """Whether the client asks for a ``meta.k8s.io`` Table (``kubectl get``)."""
    accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
    return "as=Table" in accept


def wants_aggregated(headers: dict[str, str]) -> bool:
    """Whether the client asks for aggregated discovery (``APIGroupDiscoveryList`` v2)."""
    accept = next((v for k, v in headers.items() if k.lower() == "accept"), "")
    return "as=APIGroupDiscoveryList" in accept and "v=v2" in accept


def field_validation(params: dict[str, str]) -> FieldValidation:
    """The request's ``fieldValidation``; the API server's default is ``Warn``."""
    mode = params.get("fieldValidation") or "Warn"
    for allowed in ("Ignore", "Warn", "Strict"):
        if mode == allowed:
            return allowed
    raise BadRequest(f'fieldValidation must be one of "Ignore", "Warn" or "Strict", not '
                     f'"{mode}"')


def warning_headers(warnings: list[str]) -> dict[str, str] | None:
    """The ``Warning`` header kubectl prints for ``warnings`` (none when there are none)."""
    if not warnings:
        return None
    text = ", ".join('299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"'
                     for w in warnings)
    return {"Warning": text}


def field_manager(params: dict[str, str], headers: dict[str, str]) -> str:
    """The writer's name: ``fieldManager``, else the client's User-Agent product."""
    if params.get("fieldManager"):
        return params["fieldManager"]
    agent = next((v for k, v in headers.items() if k.lower() == "user-agent"), "")
    return agent.split("/", 1)[0].split(" ", 1)[0] or "unknown"


def delete_dry_run(raw: bytes) -> bool:
    """Whether a DELETE's ``DeleteOptions`` body asks for a dry run (kubectl sends it there)."""
    try:
        options = json.loads(raw or b"{}")
    except ValueError:
        raise BadRequest("the body of a DELETE must be DeleteOptions") from None
    return isinstance(options, dict) and bool(options.get("dryRun"))


def json_body(raw: bytes) -> Any:
    """The request body as JSON (``None`` when empty).

    Raises:
        BadRequest: The body is not JSON.
    """
    try:
        return json.loads(raw or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"the request body is not valid JSON: {exc}") from None


def check_body_target(info: KindInfo, obj: dict[str, Any], namespace: str | None,
                      name: str | None) -> None:
    """Check that a write's body names the URL's kind, namespace and name; fill kind and version.

    Raises:
        BadRequest: The body names another kind, namespace or name.
    """
    if obj.get("kind") not in (None, info.kind):
        raise BadRequest(f"the body's kind {obj.get('kind')!r} does not match "
                         f"{info.plural}")
    obj["kind"] = info.kind
    obj.setdefault("apiVersion", info.api_version)
    meta = obj.setdefault("metadata", {})
    if namespace is not None and meta.get("namespace") not in (None, namespace):
        raise BadRequest("the namespace of the provided object does not match the "
                         "namespace sent on the request")
    if name is not None and meta.get("name") != name:
        raise BadRequest("the name of the object does not match the name on the URL")
