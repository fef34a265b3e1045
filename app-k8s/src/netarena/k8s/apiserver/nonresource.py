"""Answers for the paths that name no resource: version, discovery roots, OpenAPI, health."""

from __future__ import annotations

from netarena.k8s.apiserver import discovery as disc
from netarena.k8s.apiserver.kinds import NotFound
from netarena.k8s.apiserver.request_args import wants_aggregated
from netarena.k8s.apiserver.transport import Reply

__all__ = ["health_reply", "openapi_reply", "root_reply"]


_HEALTH_CHECKS = ("ping", "log", "etcd", "poststarthook/start-apiserver-admission-initializer",
                  "poststarthook/generic-apiserver-start-informers",
                  "poststarthook/start-apiextensions-controllers",
                  "poststarthook/crd-informer-synced", "poststarthook/rbac/bootstrap-roles",
                  "poststarthook/scheduling/bootstrap-system-priority-classes",
                  "poststarthook/bootstrap-controller", "poststarthook/aggregator-reload-"
                  "proxy-client-cert", "poststarthook/apiservice-registration-controller",
                  "autoregister-completion")
_READY_ONLY = ("etcd-readiness", "informer-sync", "shutdown")


def health_reply(parts: list[str], params: dict[str, str]) -> Reply:
    """``/healthz``, ``/livez``, ``/readyz``: ``ok``, one check, or the verbose list."""
    which = parts[0]
    checks = _HEALTH_CHECKS + (_READY_ONLY if which == "readyz" else ())
    if len(parts) > 1:
        name = "/".join(parts[1:])
        if name not in checks:
            raise NotFound("the server could not find the requested resource")
        return Reply("ok", content_type="text/plain")
    if "verbose" not in params:
        return Reply("ok", content_type="text/plain")
    body = "".join(f"[+]{c} ok\n" for c in checks) + f"{which} check passed\n"
    return Reply(body, content_type="text/plain")


def root_reply(which: str, headers: dict[str, str], url: str | None) -> Reply:
    """``/version``, the discovery roots ``/api`` and ``/apis`` (legacy or aggregated), ``/``."""
    if which == "version":
        return Reply(disc.version_info())
    if which in {"api", "apis"} and wants_aggregated(headers):
        return Reply(disc.aggregated_discovery(core=which == "api"),
                      content_type=disc.AGGREGATED_CONTENT_TYPE)
    if which == "api":
        host = url.split("//", 1)[-1] if url else "127.0.0.1"
        return Reply(disc.legacy_api_versions(host))
    if which == "apis":
        return Reply(disc.api_group_list())
    return Reply({"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]})


def openapi_reply(parts: list[str]) -> Reply:
    """``/openapi/v3`` and the OpenAPI v3 document of one group-version."""
    if parts == ["openapi", "v3"]:
        return Reply(disc.openapi_root())
    rest = parts[2:]
    doc = None
    if parts[1:2] == ["v3"] and rest[:1] == ["api"] and len(rest) == 2:
        doc = disc.openapi_document("", rest[1])
    elif parts[1:2] == ["v3"] and rest[:1] == ["apis"] and len(rest) == 3:
        doc = disc.openapi_document(rest[1], rest[2])
    if doc is None:
        raise NotFound("the server could not find the requested resource")
    return Reply(doc, headers={"Cache-Control": "public, immutable"})

