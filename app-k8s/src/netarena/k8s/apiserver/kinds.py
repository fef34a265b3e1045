"""The resource kinds the embedded Kubernetes API serves, and the API error tree.

One table drives the store (which kinds exist, which are namespaced), discovery (group,
version, plural, short names, verbs) and the OpenAPI document, so they cannot disagree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from netarena.common.core.errors import NetArenaError

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
    "Forbidden",
]

_RW_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
_RO_VERBS = ("get", "list", "watch")
_T = TypeVar("_T")


@overload
def clone(obj: dict[str, Any]) -> dict[str, Any]: ...
@overload
def clone(obj: list[Any]) -> list[Any]: ...
@overload
def clone(obj: _T) -> _T: ...


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
        subresources: Subresources served under each object (``status``, ``exec``).
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
    key: str = ""
    """Name in the store and in ``KINDS``: the kind, unless another group serves it too."""

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` string objects of this kind carry."""
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def resource(self) -> str:
        """``plural.group``: the resource as the API names it in messages.

        ``pods`` for the core group, ``networkpolicies.networking.k8s.io`` otherwise.
        """
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def singular(self) -> str:
        """Lower-case singular name, as discovery reports it."""
        return self.kind.lower()

    @property
    def list_kind(self) -> str:
        """Kind of the collection (``PodList``)."""
        return f"{self.kind}List"


def _k(kind: str, gv: str, plural: str, *short: str, cluster: bool = False,
       all_: bool = False, verbs: tuple[str, ...] = _RW_VERBS, generated: bool = False,
       sub: tuple[str, ...] = (), key: str = "") -> KindInfo:
    group, _, version = gv.rpartition("/")
    return KindInfo(kind, group, version, plural, namespaced=not cluster, short_names=short,
                    categories=("all",) if all_ else (), verbs=verbs, generated=generated,
                    subresources=sub, key=key or kind)


_CREATE = ("create",)
_STATUS = ("status",)

KINDS: dict[str, KindInfo] = {
    k.key: k
    for k in (
        # core
        _k("ComponentStatus", "v1", "componentstatuses", "cs", cluster=True,
           verbs=("get", "list"), generated=True),
        _k("ConfigMap", "v1", "configmaps", "cm"),
        _k("Endpoints", "v1", "endpoints", "ep", verbs=_RO_VERBS, generated=True),
        _k("Event", "v1", "events", "ev"),
        _k("LimitRange", "v1", "limitranges", "limits"),
        _k("Namespace", "v1", "namespaces", "ns", cluster=True, sub=("finalize", "status")),
        _k("Node", "v1", "nodes", "no", cluster=True, sub=("proxy", "status")),
        _k("PersistentVolumeClaim", "v1", "persistentvolumeclaims", "pvc", sub=_STATUS),
        _k("PersistentVolume", "v1", "persistentvolumes", "pv", cluster=True, sub=_STATUS),
        _k("Pod", "v1", "pods", "po", all_=True,
           sub=("attach", "binding", "ephemeralcontainers", "eviction", "exec", "log",
                "portforward", "proxy", "status")),
        _k("PodTemplate", "v1", "podtemplates"),
        _k("ReplicationController", "v1", "replicationcontrollers", "rc", all_=True,
           sub=("scale", "status")),
        _k("ResourceQuota", "v1", "resourcequotas", "quota", sub=_STATUS),
        _k("Secret", "v1", "secrets"),
        _k("ServiceAccount", "v1", "serviceaccounts", "sa", sub=("token",)),
        _k("Service", "v1", "services", "svc", all_=True, sub=("proxy", "status")),
        # named groups, in the order a cluster lists them
        _k("MutatingWebhookConfiguration", "admissionregistration.k8s.io/v1",
           "mutatingwebhookconfigurations", cluster=True),
        _k("ValidatingWebhookConfiguration", "admissionregistration.k8s.io/v1",
           "validatingwebhookconfigurations", cluster=True),
        _k("CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions",
           "crd", "crds", cluster=True, sub=_STATUS),
        _k("APIService", "apiregistration.k8s.io/v1", "apiservices", cluster=True, sub=_STATUS),
        _k("ControllerRevision", "apps/v1", "controllerrevisions"),
        _k("DaemonSet", "apps/v1", "daemonsets", "ds", all_=True, sub=_STATUS),
        _k("Deployment", "apps/v1", "deployments", "deploy", all_=True, sub=("scale", "status")),
        _k("ReplicaSet", "apps/v1", "replicasets", "rs", all_=True, verbs=_RO_VERBS,
           generated=True),
        _k("StatefulSet", "apps/v1", "statefulsets", "sts", all_=True, sub=("scale", "status")),
        _k("SelfSubjectReview", "authentication.k8s.io/v1", "selfsubjectreviews",
           cluster=True, verbs=_CREATE),
        _k("TokenReview", "authentication.k8s.io/v1", "tokenreviews", cluster=True,
           verbs=_CREATE),
        _k("LocalSubjectAccessReview", "authorization.k8s.io/v1", "localsubjectaccessreviews",
           verbs=_CREATE),
        _k("SelfSubjectAccessReview", "authorization.k8s.io/v1", "selfsubjectaccessreviews",
           cluster=True, verbs=_CREATE),
        _k("SelfSubjectRulesReview", "authorization.k8s.io/v1", "selfsubjectrulesreviews",
           cluster=True, verbs=_CREATE),
        _k("SubjectAccessReview", "authorization.k8s.io/v1", "subjectaccessreviews",
           cluster=True, verbs=_CREATE),
        _k("HorizontalPodAutoscaler", "autoscaling/v2", "horizontalpodautoscalers", "hpa",
           all_=True, sub=_STATUS),
        _k("CronJob", "batch/v1", "cronjobs", "cj", all_=True, sub=_STATUS),
        _k("Job", "batch/v1", "jobs", all_=True, sub=_STATUS),
        _k("CertificateSigningRequest", "certificates.k8s.io/v1", "certificatesigningrequests",
           "csr", cluster=True, sub=("approval", "status")),
        _k("Lease", "coordination.k8s.io/v1", "leases"),
        _k("EndpointSlice", "discovery.k8s.io/v1", "endpointslices", verbs=_RO_VERBS,
           generated=True),
        _k("Event", "events.k8s.io/v1", "events", "ev", verbs=_RO_VERBS, generated=True,
           key="Event.events.k8s.io"),
        _k("IngressClass", "networking.k8s.io/v1", "ingressclasses", cluster=True),
        _k("Ingress", "networking.k8s.io/v1", "ingresses", "ing", sub=_STATUS),
        _k("NetworkPolicy", "networking.k8s.io/v1", "networkpolicies", "netpol"),
        _k("RuntimeClass", "node.k8s.io/v1", "runtimeclasses", cluster=True),
        _k("PodDisruptionBudget", "policy/v1", "poddisruptionbudgets", "pdb", sub=_STATUS),
        _k("ClusterRoleBinding", "rbac.authorization.k8s.io/v1", "clusterrolebindings",
           cluster=True),
        _k("ClusterRole", "rbac.authorization.k8s.io/v1", "clusterroles", cluster=True),
        _k("RoleBinding", "rbac.authorization.k8s.io/v1", "rolebindings"),
        _k("Role", "rbac.authorization.k8s.io/v1", "roles"),
        _k("PriorityClass", "scheduling.k8s.io/v1", "priorityclasses", "pc", cluster=True),
        _k("CSIDriver", "storage.k8s.io/v1", "csidrivers", cluster=True),
        _k("CSINode", "storage.k8s.io/v1", "csinodes", cluster=True),
        _k("CSIStorageCapacity", "storage.k8s.io/v1", "csistoragecapacities"),
        _k("StorageClass", "storage.k8s.io/v1", "storageclasses", "sc", cluster=True),
        _k("VolumeAttachment", "storage.k8s.io/v1", "volumeattachments", cluster=True,
           sub=_STATUS),
    )
}
"""Every served kind by name."""


KIND_DESCRIPTIONS = {
    "NetworkPolicy": "NetworkPolicy describes what network traffic is allowed for a set of "
                     "Pods",
    "Pod": "Pod is a collection of containers that can run on a host. This resource is "
           "created by clients and scheduled onto hosts.",
    "Service": "Service is a named abstraction of software service (for example, mysql) "
               "consisting of local port (for example 3306) that the proxy listens on, and "
               "the selector that determines which pods will answer requests sent through "
               "the proxy.",
    "Deployment": "Deployment enables declarative updates for Pods and ReplicaSets.",
    "Namespace": "Namespace provides a scope for Names. Use of multiple namespaces is "
                 "optional.",
    "Node": "Node is a worker node in Kubernetes. Each node will have a unique identifier in "
            "the cache (i.e. in etcd).",
    "ConfigMap": "ConfigMap holds configuration data for pods to consume.",
    "ServiceAccount": "ServiceAccount binds together: * a name, understood by users, and "
                      "perhaps by peripheral systems, for an identity * a principal that can "
                      "be authenticated and authorized * a set of secrets",
    "Endpoints": "Endpoints is a collection of endpoints that implement the actual service.",
    "EndpointSlice": "EndpointSlice represents a subset of the endpoints that implement a "
                     "service.",
    "Event": "Event is a report of an event somewhere in the cluster.",
    "Ingress": "Ingress is a collection of rules that allow inbound connections to reach the "
               "endpoints defined by a backend.",
    "ReplicaSet": "ReplicaSet ensures that a specified number of pod replicas are running at "
                  "any given time.",
    "DaemonSet": "DaemonSet represents the configuration of a daemon set.",
    "Role": "Role is a namespaced, logical grouping of PolicyRules that can be referenced as "
            "a unit by a RoleBinding.",
}
"""Top-level descriptions ``kubectl explain <kind>`` prints (the client's models lack them)."""


def kind_info(kind: str) -> KindInfo:
    """Return the table entry for ``kind`` (a ``KindInfo.key``).

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


class Forbidden(ApiError):
    """RBAC does not allow the requester this verb on this resource."""

    code = 403
    reason = "Forbidden"


class BadRequest(ApiError):
    """Malformed request: bad JSON, bad selector, unsupported patch."""

    code = 400
    reason = "BadRequest"
