"""The embedded Kubernetes API server: an ``ObjectStore`` served over HTTP on loopback.

Real ``kubectl`` drives it. It serves ``/version``, discovery (aggregated and legacy),
OpenAPI v3 with every kind's schema, the REST verbs on every kind (watch, server-side
apply, the ``scale``, ``log`` and ``exec`` subresources), and the access reviews behind
``kubectl auth``, answering errors with ``Status`` objects so kubectl prints
``Error from server (NotFound): ...`` as against a cluster. ``transport`` is the HTTP side.
"""

from __future__ import annotations

import logging
import threading
import time
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from netarena.common.core.errors import EmulatorError
from netarena.k8s.apiserver import discovery as disc
from netarena.k8s.apiserver.kinds import (
    BadRequest,
    Forbidden,
    KindInfo,
    NotFound,
    kind_info,
    resource_info,
)
from netarena.k8s.apiserver.nonresource import health_reply, openapi_reply, root_reply
from netarena.k8s.apiserver.podruntime import ExecResult, PodRuntime
from netarena.k8s.apiserver.rbac import UserInfo, authorize, review
from netarena.k8s.apiserver.request_args import (
    check_body_target,
    delete_dry_run,
    field_manager,
    field_validation,
    json_body,
    rbac_verb,
    split_path,
    wants_table,
    warning_headers,
)
from netarena.k8s.apiserver.store import ObjectStore
from netarena.k8s.apiserver.tables import render_table
from netarena.k8s.apiserver.tls import server_context
from netarena.k8s.apiserver.transport import (
    PATCH_TYPES,
    Handler,
    HttpServer,
    MethodNotAllowed,
    Reply,
    UnsupportedMediaType,
)
from netarena.k8s.apiserver.watch import watch_reply

__all__ = ["ApiServer"]

logger = logging.getLogger(__name__)


class ApiServer:
    """Serve an ``ObjectStore`` as a Kubernetes API on ``127.0.0.1`` (ephemeral port).

    Args:
        store: The state to serve; other threads may read and write it concurrently.
        host: Loopback address to bind.
        port: 0 picks a free port.
        user: Who every request is answered as (``auth can-i``, ``auth whoami``); by
            default the cluster's admin.
        tls: Serve HTTPS with the process's cluster certificate (``tls.serving_certificate``
            holds the CA a kubeconfig needs), as a real API server does.
        token: The bearer token requests must carry; others get 401 ``Unauthorized`` (and
            only the health and version paths answer a request without credentials), so
            one episode's kubectl cannot reach another episode's server.
        pods: What runs inside the pods (``log`` and ``exec``); without one those
            requests are refused, as when no kubelet answers.

    Use as a context manager, or ``start()`` (returns the URL) and ``stop()``.
    """

    def __init__(self, store: ObjectStore, host: str = "127.0.0.1", port: int = 0,
                 user: UserInfo | None = None, tls: bool = False,
                 token: str | None = None, pods: PodRuntime | None = None) -> None:
        self.store = store
        self.tls = tls
        self.token = token
        """The bearer token every request must carry (``None``: no authentication)."""
        self.user = user or UserInfo("kubernetes-admin", ("kubeadm:cluster-admins",
                                                          "system:masters",
                                                          "system:authenticated"))
        self._host = host
        self._port = port
        self._server: HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.url: str | None = None
        self.requests = 0
        self._stopping = threading.Event()
        self.pods = pods
        """The kubelets' side: container logs and exec (``None``: no node answers)."""

    # ------------------------------------------------------------ lifecycle
    def start(self) -> str:
        """Bind and serve in a background thread; return the base URL. Idempotent.

        Raises:
            EmulatorError: The socket could not be bound.
        """
        with self._lock:
            if self.url is not None:
                return self.url
            self._stopping.clear()
            if self.pods is not None:  # the deploy's state, in force since the start
                self.pods.note(time.time())
            try:
                server = HttpServer((self._host, self._port), Handler)
            except OSError as exc:
                raise EmulatorError(f"cannot bind the embedded API server: {exc}") from exc
            server.api = self
            server.tls = server_context() if self.tls else None
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever,
                                            kwargs={"poll_interval": 0.05},
                                            name="k8s-apiserver", daemon=True)
            self._thread.start()
            host, port = server.server_address[:2]
            if isinstance(host, bytes):  # only a unix socket's address; this one is TCP
                host = host.decode()
            self.url = f"{'https' if self.tls else 'http'}://{host}:{port}"
            logger.debug("embedded Kubernetes API at %s", self.url)
            return self.url

    def stop(self) -> None:
        """Stop serving and join the thread. Idempotent."""
        with self._lock:
            server, thread = self._server, self._thread
            self._server = self._thread = None
            self.url = None
        self._stopping.set()
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ApiServer:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    # ----------------------------------------------------------------- exec
    def exec_target(self, path: str) -> tuple[dict[str, Any], list[str]]:
        """The pod and command of an ``.../pods/NAME/exec?command=...`` request.

        Raises:
            ApiError: Not an exec path, no such pod or container, or no command.
        """
        parts = urlsplit(path)
        segs = [p for p in parts.path.split("/") if p]
        if len(segs) != 7 or segs[:2] != ["api", "v1"] or segs[2] != "namespaces" \
                or segs[4] != "pods" or segs[6] != "exec":
            raise NotFound("the server could not find the requested resource")
        query = parse_qs(parts.query)
        self._authorize(kind_info("Pod"), segs[3], segs[5], "exec", "create")
        pod = self.store.get("Pod", segs[3], segs[5])
        self._runtime(pod)
        names = [c["name"] for c in pod["spec"].get("containers") or []]
        container = (query.get("container") or names[:1])[0]
        if container not in names:
            raise BadRequest(f"container {container} is not valid for pod {segs[5]}")
        command = query.get("command") or []
        if not command:
            raise BadRequest("you must specify at least 1 command")
        return pod, command

    def run_exec(self, pod: dict[str, Any], command: list[str]) -> ExecResult:
        """Run ``command`` in ``pod`` against the current state (blocks as the tool would)."""
        return self._runtime(pod).run_exec(pod, command, self._stopping)

    def _runtime(self, pod: dict[str, Any]) -> PodRuntime:
        if self.pods is None:
            raise BadRequest(f"no node runs the containers of pod {pod['metadata']['name']}")
        return self.pods

    # -------------------------------------------------------------- routing
    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        """Answer one request (the HTTP layer only encodes the result).

        Raises:
            ApiError: Rendered by the HTTP layer as a ``Status`` object.
        """
        self.requests += 1
        if method == "GET":
            return self._handle(method, path, headers, raw)
        try:
            return self._handle(method, path, headers, raw)
        finally:  # a write may have changed what the services' calls do from now on
            if self.pods is not None:
                self.pods.note(time.time())

    def _handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        parts, params = split_path(path)
        if method == "GET" and parts[:1] in (["healthz"], ["livez"], ["readyz"]):
            return health_reply(parts, params)
        if method == "GET" and not parts[1:] and parts[:1] in ([], ["version"], ["api"],
                                                                 ["apis"]):
            return root_reply(parts[0] if parts else "", headers, self.url)
        if parts[:1] == ["openapi"]:
            return openapi_reply(parts)
        if parts[:1] == ["api"] and len(parts) >= 2:
            return self._group_version("", parts[1], parts[2:], method, params, headers, raw)
        if parts[:1] == ["apis"] and len(parts) == 2 and method == "GET":
            if any(g == parts[1] for g, _ in disc.group_versions()):
                return Reply(disc.api_group(parts[1]))
        if parts[:1] == ["apis"] and len(parts) >= 3:
            return self._group_version(parts[1], parts[2], parts[3:], method, params, headers,
                                       raw)
        raise NotFound("the server could not find the requested resource")

    def _group_version(self, group: str, version: str, rest: list[str], method: str,
                       params: dict[str, str], headers: dict[str, str], raw: bytes) -> Reply:
        if not rest:
            doc = disc.api_resource_list(group, version)
            if doc is None or method != "GET":
                raise NotFound("the server could not find the requested resource")
            return Reply(doc)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        info = resource_info(group, version, rest[0])
        if info is None or (namespace is not None and not info.namespaced):
            raise NotFound("the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        if len(rest) > 3 or (sub is not None and sub not in info.subresources):
            raise NotFound("the server could not find the requested resource")
        if info.namespaced and name is not None and namespace is None:
            raise NotFound("the server could not find the requested resource")
        self._authorize(info, namespace, name, sub, rbac_verb(method, name, params))
        if name is None:
            return self._collection(info, namespace, method, params, headers, raw)
        return self._item(info, namespace, name, sub, method, params, headers, raw)

    def _authorize(self, info: KindInfo, namespace: str | None, name: str | None,
                   sub: str | None, verb: str) -> None:
        """Refuse what the requester's roles do not grant, worded as the API server does."""
        if info.verbs == ("create",):  # access and identity reviews: every user may ask
            return
        attrs = {"verb": verb, "group": info.group, "resource": info.plural,
                 "subresource": sub or "", "namespace": namespace or "", "name": name or ""}
        allowed, _ = authorize(self.store, self.user, attrs)
        if allowed:
            return
        what = f'{info.resource} "{name}"' if name else info.resource
        resource = f"{info.plural}/{sub}" if sub else info.plural
        scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
        raise Forbidden(f'{what} is forbidden: User "{self.user.username}" cannot {verb} '
                        f'resource "{resource}" in API group "{info.group}" {scope}',
                        {"name": name or "", "group": info.group, "kind": info.plural})

    # ---------------------------------------------------------------- verbs
    def _collection(self, info: KindInfo, namespace: str | None, method: str,
                    params: dict[str, str], headers: dict[str, str], raw: bytes) -> Reply:
        if method == "GET":
            if params.get("watch") in {"true", "1"}:
                return watch_reply(self.store, info, namespace, params, wants_table(headers),
                                   self._stopping)
            items = self.store.list(info.key, namespace, params.get("labelSelector"),
                                    params.get("fieldSelector"))
            rv = str(self.store.revision)
            if wants_table(headers):
                return Reply(render_table(info, items, rv, params.get("includeObject",
                                                                       "Metadata")))
            return Reply({"kind": info.list_kind, "apiVersion": info.api_version,
                           "metadata": {"resourceVersion": rv}, "items": items})
        if method == "POST":
            obj = json_body(raw)
            if not isinstance(obj, dict):
                raise BadRequest("the request body must be a JSON object")
            if info.verbs == ("create",):
                return Reply(review(self.store, self.user, info, namespace, obj), 201)
            check_body_target(info, obj, namespace, None)
            if info.namespaced:
                obj.setdefault("metadata", {})["namespace"] = namespace
            warnings: list[str] = []
            created = self.store.create(obj, dry_run="dryRun" in params,
                                        field_validation=field_validation(params),
                                        warnings=warnings, manager=field_manager(params, headers))
            return Reply(created, 201, headers=warning_headers(warnings))
        raise MethodNotAllowed(f"method {method} is not supported on {info.plural}")

    def _item(self, info: KindInfo, namespace: str | None, name: str, sub: str | None,
              method: str, params: dict[str, str], headers: dict[str, str],
              raw: bytes) -> Reply:
        dry_run = "dryRun" in params or (method == "DELETE" and delete_dry_run(raw))
        if sub == "log" and method == "GET":
            pod = self.store.get(info.key, namespace, name)
            pods = self._runtime(pod)
            if params.get("follow") == "true":
                return Reply(None, content_type="text/plain",
                              stream=pods.follow_log(pod, params, time.time, self._stopping))
            return Reply(pods.container_log(pod, params, time.time()),
                          content_type="text/plain")
        if sub == "scale":
            return self._scale(info, namespace, name, method, raw, dry_run)
        if method == "GET":
            obj = self.store.get(info.key, namespace, name)
            if wants_table(headers):
                return Reply(render_table(info, [obj], str(self.store.revision),
                                           params.get("includeObject", "Metadata")))
            return Reply(obj)
        if sub is not None:
            raise MethodNotAllowed(f"{info.plural}/{sub} is read-only here")
        if method == "PUT":
            obj = json_body(raw)
            if not isinstance(obj, dict):
                raise BadRequest("the request body must be a JSON object")
            check_body_target(info, obj, namespace, name)
            warnings: list[str] = []
            replaced = self.store.replace(obj, dry_run=dry_run,
                                          field_validation=field_validation(params),
                                          warnings=warnings, manager=field_manager(params, headers))
            return Reply(replaced, headers=warning_headers(warnings))
        if method == "PATCH":
            ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
            patch_type = PATCH_TYPES.get(ctype.split(";")[0].strip())
            if patch_type is None:
                raise UnsupportedMediaType(
                    f"the body of the request was in an unknown format - accepted media types "
                    f"include: {', '.join(PATCH_TYPES)}"
                )
            warnings = []
            if patch_type == "apply":
                return self._apply(info, namespace, name, raw, params, headers)
            patched = self.store.patch(info.key, namespace, name, json_body(raw), patch_type,
                                       dry_run=dry_run,
                                       field_validation=field_validation(params),
                                       warnings=warnings, manager=field_manager(params, headers))
            return Reply(patched, headers=warning_headers(warnings))
        if method == "DELETE":
            obj = self.store.delete(info.key, namespace, name, dry_run=dry_run)
            return Reply({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Success",
                           "details": {"name": name, "group": info.group, "kind": info.plural,
                                       "uid": obj["metadata"].get("uid")}})
        raise MethodNotAllowed(f"method {method} is not supported on {info.plural}")

    def _apply(self, info: KindInfo, namespace: str | None, name: str, raw: bytes,
               params: dict[str, str], headers: dict[str, str]) -> Reply:
        try:
            obj = yaml.safe_load(raw.decode() or "null")
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise BadRequest(f"error decoding YAML: {exc}") from None
        if not isinstance(obj, dict):
            raise BadRequest("the apply configuration must be an object")
        if not params.get("fieldManager"):
            raise BadRequest("PATCH, application/apply-patch+yaml requires fieldManager to "
                             "be set")
        check_body_target(info, obj, namespace, name)
        if info.namespaced:
            obj["metadata"]["namespace"] = namespace
        warnings: list[str] = []
        result, created = self.store.apply(
            obj, params["fieldManager"], force=params.get("force") == "true",
            dry_run="dryRun" in params, field_validation=field_validation(params),
            warnings=warnings)
        return Reply(result, 201 if created else 200, headers=warning_headers(warnings))

    def _scale(self, info: KindInfo, namespace: str | None, name: str, method: str,
               raw: bytes, dry_run: bool) -> Reply:
        if method in {"PUT", "PATCH"}:
            body = json_body(raw)
            replicas = ((body or {}).get("spec") or {}).get("replicas")
            if not isinstance(replicas, int):
                raise BadRequest("scale needs spec.replicas")
            self.store.patch(info.key, namespace, name, {"spec": {"replicas": replicas}},
                             "merge", dry_run=dry_run)
        elif method != "GET":
            raise MethodNotAllowed(f"method {method} is not supported on {info.plural}/scale")
        obj = self.store.get(info.key, namespace, name)
        return Reply({
            "kind": "Scale", "apiVersion": "autoscaling/v1",
            "metadata": {k: obj["metadata"][k] for k in
                         ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")},
            "spec": {"replicas": obj["spec"].get("replicas", 1)},
            "status": {"replicas": (obj.get("status") or {}).get("replicas", 0),
                       "selector": ",".join(f"{k}={v}" for k, v in sorted(
                           (obj["spec"]["selector"].get("matchLabels") or {}).items()))},
        })
