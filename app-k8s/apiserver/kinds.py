"""The resource kinds the embedded Kubernetes API serves, and the API error tree.

One table drives the store (which kinds exist, which are namespaced), discovery (group,
version, plural, short names, verbs) and the OpenAPI document, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from netarena.common.errors import NetArenaError

__all__ = [
    "clone",
    "KindInfo",
    "KINDS",
    "kind_info",
    "resource_info",
    "ApiError",
    "NotFound",
    "AlreadyExists",
    "Conflict",
    "Invalid",
    "BadRequest",
]

_RW_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
_RO_VERBS = ("get", "list", "watch")

def clone(obj: Any) -> Any:
    """Deep copy of a JSON value (faster than ``copy.deepcopy`` for plain dicts/lists)."""
    if isinstance(obj, dict):
        return {k: clone(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [clone(v) for v in obj]
    return obj


@dataclass(frozen=True)
class KindInfo:
    """One served resource type.

    Attributes:
        kind: The object kind (``Pod``).
        group: API group, ``""`` for the core group.
        version: API version inside the group.
        plural: Resource name in URLs (``pods``).
        namespaced: Whether objects live in a namespace.
        short_names: kubectl aliases (``po``).
        categories: Discovery categories (``all`` makes ``kubectl get all`` include it).
        verbs: Verbs advertised in discovery.
        generated: True for kinds the store computes or keeps empty (writes refused).
    """

    kind: str
    group: str
    version: str
    plural: str
    namespaced: bool = True
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = _RW_VERBS
    generated: bool = False
    subresources: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string objects of this kind carry."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        """Lower-case singular name, as discovery reports it."""
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        """Kind of the collection (``PodList``)."""
        return f"{self.kind}List"


KINDS: dict[str, KindInfo] = {
    k.kind: k
    for k in (
        KindInfo("Namespace", "", "v1", "namespaces", namespaced=False, short_names=("ns",)),
        KindInfo("Pod", "", "v1", "pods", short_names=("po",), categories=("all",),
                 subresources=("status",)),
        KindInfo("Service", "", "v1", "services", short_names=("svc",), categories=("all",),
                 subresources=("status",)),
        KindInfo("Endpoints", "", "v1", "endpoints", short_names=("ep",), verbs=_RO_VERBS,
                 generated=True),
        KindInfo("Event", "", "v1", "events", short_names=("ev",), verbs=_RO_VERBS,
                 generated=True),
        KindInfo("Deployment", "apps", "v1", "deployments", short_names=("deploy",),
                 categories=("all",), subresources=("status", "scale")),
        KindInfo("ReplicaSet", "apps", "v1", "replicasets", short_names=("rs",),
                 categories=("all",), verbs=_RO_VERBS, generated=True),
        KindInfo("NetworkPolicy", "networking.k8s.io", "v1", "networkpolicies",
                 short_names=("netpol",)),
        KindInfo("EndpointSlice", "discovery.k8s.io", "v1", "endpointslices",
                 verbs=_RO_VERBS, generated=True),
    )
}
"""Every served kind by name."""


def kind_info(kind: str) -> KindInfo:
    """Return the table entry for ``kind``.

    Raises:
        NotFound: The kind is not served (so callers answer like an API server would).
    """
    try:
        return KINDS[kind]
    except KeyError:
        raise NotFound(f'the server doesn\'t have a resource type "{kind}"') from None


def resource_info(group: str, version: str, plural: str) -> KindInfo | None:
    """Find the kind served at ``group/version/plural`` (None when there is none)."""
    for info in KINDS.values():
        if (info.group, info.version, info.plural) == (group, version, plural):
            return info
    return None


class ApiError(NetArenaError):
    """An error the API answers with a ``Status`` object (kubectl prints it).

    Attributes:
        code: HTTP status code.
        reason: Kubernetes ``StatusReason`` (``NotFound``, ``AlreadyExists``, ...).
        details: Optional ``Status.details`` (name, kind, causes).
    """

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}

    def status(self) -> dict[str, Any]:
        """Render as a ``meta/v1 Status`` object."""
        out: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            out["details"] = self.details
        return out


class NotFound(ApiError):
    """The object (or resource type) does not exist."""

    code = 404
    reason = "NotFound"


class AlreadyExists(ApiError):
    """Create of an object whose name is taken."""

    code = 409
    reason = "AlreadyExists"


class Conflict(ApiError):
    """Update against a stale ``resourceVersion``."""

    code = 409
    reason = "Conflict"


class Invalid(ApiError):
    """The object fails validation (HTTP 422)."""

    code = 422
    reason = "Invalid"


class BadRequest(ApiError):
    """Malformed request: bad JSON, bad selector, unsupported patch."""

    code = 400
    reason = "BadRequest"
