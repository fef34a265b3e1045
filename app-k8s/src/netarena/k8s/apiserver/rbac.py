"""Role-based access control as ``kubectl auth can-i`` and ``auth whoami`` see it.

Rules come from the Role, ClusterRole, RoleBinding and ClusterRoleBinding objects in the
store, evaluated like the API server's RBAC authorizer: a request is allowed when some
binding that names the user (or one of its groups, or its service account) grants a role
with a rule matching the verb, API group, resource (``pods/exec`` for a subresource) and,
if the rule lists names, the object name. ``system:masters`` may do everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from netarena.k8s.apiserver.kinds import KindInfo
    from netarena.k8s.apiserver.store import ObjectStore

__all__ = ["UserInfo", "authorize", "rules_for", "review"]


@dataclass(frozen=True)
class UserInfo:
    """Who a request comes from."""

    username: str
    groups: tuple[str, ...] = field(default=("system:authenticated",))

    @staticmethod
    def service_account(namespace: str, name: str) -> UserInfo:
        """The identity of a service account's token."""
        return UserInfo(f"system:serviceaccount:{namespace}:{name}",
                        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                         "system:authenticated"))


def _names_user(binding: dict[str, Any], user: UserInfo) -> bool:
    for s in binding.get("subjects") or []:
        kind, name = s.get("kind"), s.get("name")
        if kind == "User" and name == user.username or kind == "Group" and name in user.groups:
            return True
        if kind == "ServiceAccount" and user.username == (
                f"system:serviceaccount:{s.get('namespace')}:{name}"):
            return True
    return False


def rules_for(store: ObjectStore, user: UserInfo, namespace: str | None) -> list[dict[str, Any]]:
    """Every policy rule ``user`` holds in ``namespace`` (cluster-wide ones included)."""
    roles = {r["metadata"]["name"]: r for r in store.list("ClusterRole")}
    rules: list[dict[str, Any]] = []
    for b in store.list("ClusterRoleBinding"):
        if _names_user(b, user) and b["roleRef"]["name"] in roles:
            rules += roles[b["roleRef"]["name"]].get("rules") or []
    if namespace:
        local = {r["metadata"]["name"]: r for r in store.list("Role", namespace)}
        for b in store.list("RoleBinding", namespace):
            if not _names_user(b, user):
                continue
            pool = roles if b["roleRef"]["kind"] == "ClusterRole" else local
            if b["roleRef"]["name"] in pool:
                rules += pool[b["roleRef"]["name"]].get("rules") or []
    return rules


def _matches(rule: dict[str, Any], attrs: dict[str, Any]) -> bool:
    def has(values: list[str] | None, value: str) -> bool:
        if not values:
            return False
        return "*" in values or value in values

    resource = attrs.get("resource", "")
    if attrs.get("subresource"):
        resource = f"{resource}/{attrs['subresource']}"
    if not has(rule.get("verbs"), attrs.get("verb", "")):
        return False
    if not has(rule.get("apiGroups"), attrs.get("group", "")):
        return False
    if not (has(rule.get("resources"), resource) or (
            "/" in resource and has(rule.get("resources"), resource.split("/")[0] + "/*"))):
        return False
    names = rule.get("resourceNames")
    return not names or attrs.get("name") in names


def authorize(store: ObjectStore, user: UserInfo, attrs: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``user`` may do what ``attrs`` describe (a ``resourceAttributes`` dict).

    Returns:
        ``(allowed, reason)``; the reason names the granting binding, as the API does.
    """
    if "system:masters" in user.groups:
        return True, ""
    for rule in rules_for(store, user, attrs.get("namespace") or None):
        if _matches(rule, attrs):
            return True, "RBAC: allowed by a role binding"
    return False, ""


def review(store: ObjectStore, user: UserInfo, info: KindInfo, namespace: str | None,
           obj: dict[str, Any]) -> dict[str, Any]:
    """Answer a review about ``user`` with its ``status`` filled in.

    Access reviews (``auth can-i``), rules reviews (``auth can-i --list``) and identity
    reviews (``auth whoami``).
    """
    spec = obj.get("spec") or {}
    out = {"kind": info.kind, "apiVersion": info.api_version,
           "metadata": {"creationTimestamp": None}, "spec": spec}
    if info.kind == "SelfSubjectReview":
        out["status"] = {"userInfo": {"username": user.username,
                                      "groups": list(user.groups)}}
    elif info.kind == "SelfSubjectRulesReview":
        ns = spec.get("namespace") or namespace
        rules = ([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
                 if "system:masters" in user.groups else
                 [r for r in rules_for(store, user, ns) if "resources" in r])
        out["status"] = {"resourceRules": rules + [{
            "verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": [
                "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                "/openapi/*", "/readyz", "/version", "/version/"]}],
            "incomplete": False}
    else:
        attrs = spec.get("resourceAttributes") or {}
        if spec.get("nonResourceAttributes"):
            allowed, reason = True, ""
        else:
            allowed, reason = authorize(store, user, attrs)
        out["status"] = {"allowed": allowed, **({"reason": reason} if reason else {})}
    return out
