"""The real-cluster backend: the application deployed on a user's cluster.

``backend=cluster`` runs each episode on the cluster a kubeconfig points at (kind ≥ 0.24,
whose kindnet enforces NetworkPolicy, is the intended target). The official
``kubernetes`` Python client deploys Online Boutique, its monitoring namespace and the
faulted policies (one initial deploy, as the embedded backend does), reads the objects
back for the judge, and resets the namespace between episodes. The agent's commands run
through the real kubectl with the same allowlist, on a private minified copy of the
kubeconfig whose context namespace is the task's (the user's file is never written).

The judge is our policy engine on the objects read from the cluster. Where the CNI
enforces policy, ``probe_image`` confirms it: one ephemeral debug container per source
pod (``kubectl debug`` does the same), then every pair probed at once with
``nc -z -w 2`` through exec, in parallel threads. Disagreements are logged.

Everything the backend creates is labelled ``netarena.io/managed=true``; a reset deletes
only such objects, and a namespace it did not create is never deleted.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from netarena.common.core.errors import ConfigError, EmulatorError
from netarena.k8s.judge import workload_state
from netarena.k8s.kubectl import Kubectl

__all__ = ["LiveCluster", "MANAGED_LABEL", "private_kubeconfig"]

log = logging.getLogger(__name__)

MANAGED_LABEL = "netarena.io/managed"
"""Label on everything the backend creates (value ``true``)."""
_RESET_KINDS = (("networking.k8s.io/v1", "NetworkPolicy"), ("apps/v1", "Deployment"),
                ("v1", "Service"), ("v1", "Pod"), ("v1", "ServiceAccount"))
_LOCKS: dict[tuple[str, str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def private_kubeconfig(path: str, context: str | None, namespace: str) -> dict[str, Any]:
    """The user's kubeconfig minified to one context whose namespace is ``namespace``.

    Raises:
        ConfigError: The file or the context does not exist.
    """
    try:
        config = yaml.safe_load(Path(path).expanduser().read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read kubeconfig {path}: {exc}") from exc
    name = context or config.get("current-context")
    ctx = next((c for c in config.get("contexts") or [] if c.get("name") == name), None)
    if ctx is None:
        raise ConfigError(f"kubeconfig {path} has no context {name!r}")
    inner = dict(ctx.get("context") or {}, namespace=namespace)
    cluster = next(c for c in config.get("clusters") or [] if c["name"] == inner["cluster"])
    users = [u for u in config.get("users") or [] if u["name"] == inner.get("user")]
    return {"apiVersion": "v1", "kind": "Config", "current-context": name,
            "contexts": [{"name": name, "context": inner}], "clusters": [cluster],
            "users": users, "preferences": {}}


def _lock(path: str, context: str | None, namespace: str) -> threading.Lock:
    key = (str(Path(path).expanduser().resolve()), context or "", namespace)
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(key, threading.Lock())


class LiveCluster:
    """One episode's hold on a real cluster namespace.

    Episodes on the same kubeconfig, context and namespace run one after another (a
    process-wide lock): the namespace is reset and redeployed for each.

    Args:
        kubeconfig: Path of the user's kubeconfig.
        context: Context to use (``None``: the current one).
        namespace: The task's namespace (created when missing).
        probe_image: Image of the debug containers that confirm verdicts with real
            probes; ``None`` judges with the policy engine alone.
    """

    def __init__(self, kubeconfig: str, context: str | None, namespace: str,
                 probe_image: str | None = None) -> None:
        from kubernetes import config as kube_config
        from kubernetes.dynamic import DynamicClient

        self.namespace = namespace
        self.probe_image = probe_image
        self._lock = _lock(kubeconfig, context, namespace)
        if not self._lock.acquire(timeout=600):
            raise EmulatorError(f"namespace {namespace} is busy with another episode")
        self._held = True
        self.revision = 0
        """Moved by the episode after each command that may change objects."""
        self.kubectl: Kubectl | None = None
        try:
            minified = private_kubeconfig(kubeconfig, context, namespace)
            api = kube_config.new_client_from_config_dict(minified)
            self._dynamic = DynamicClient(api)
            self._api = api
            self.kubectl = Kubectl.from_config(minified, namespace)
        except Exception:
            self.close()
            raise

    # -------------------------------------------------------------- objects
    def _resource(self, api_version: str, kind: str) -> Any:
        return self._dynamic.resources.get(api_version=api_version, kind=kind)

    def _list(self, api_version: str, kind: str, namespace: str | None = None,
              selector: str | None = None) -> list[dict[str, Any]]:
        res = self._resource(api_version, kind)
        found = res.get(namespace=namespace, label_selector=selector)
        return [item.to_dict() for item in found.items]

    def reset(self) -> None:
        """Delete what an earlier episode deployed here (only objects labelled as ours)."""
        selector = f"{MANAGED_LABEL}=true"
        for api_version, kind in _RESET_KINDS:
            res = self._resource(api_version, kind)
            for item in self._list(api_version, kind, None, selector):
                meta = item["metadata"]
                res.delete(name=meta["name"], namespace=meta.get("namespace"))

    def deploy(self, objects: Sequence[dict[str, Any]]) -> None:
        """Create ``objects`` (namespaces only when missing), each labelled as ours."""
        existing = {n["metadata"]["name"] for n in self._list("v1", "Namespace")}
        for obj in objects:
            if obj["kind"] == "Namespace" and obj["metadata"]["name"] in existing:
                continue
            body = _managed(obj)
            res = self._resource(body["apiVersion"], body["kind"])
            res.create(body=body, namespace=body["metadata"].get("namespace"))

    def snapshot(self) -> tuple[list[Any], list[Any], list[Any]]:
        """Pods, namespaces and NetworkPolicies of the whole cluster, as API dicts."""
        return (self._list("v1", "Pod"), self._list("v1", "Namespace"),
                self._list("networking.k8s.io/v1", "NetworkPolicy"))

    def workloads(self) -> dict[tuple[str, str], Any]:
        """What the agent must leave alone on the namespace's Deployments and Services."""
        return {(kind, obj["metadata"]["name"]): workload_state(obj, (MANAGED_LABEL,))
                for api_version, kind in (("apps/v1", "Deployment"), ("v1", "Service"))
                for obj in self._list(api_version, kind, self.namespace)}

    # --------------------------------------------------------------- probes
    def probe(self, pairs: Sequence[tuple[str, str, int]]) -> dict[tuple[str, str, int], bool]:
        """Open TCP from a pod of each source app to each ``host:port``, all at once.

        Args:
            pairs: ``(source app, host, port)``; ``host`` a Service name or an address.

        Returns:
            Whether each connection opened (``nc -z -w 2`` exit status 0).
        """
        if self.probe_image is None:
            return {}
        pods = {p["metadata"]["labels"].get("app"): p["metadata"]["name"]
                for p in self._list("v1", "Pod", self.namespace)
                if (p.get("status") or {}).get("phase") == "Running"}
        with ThreadPoolExecutor(max_workers=16) as pool:
            futures = {pair: pool.submit(self._nc, pods[pair[0]], pair[1], pair[2])
                       for pair in pairs if pair[0] in pods}
            return {pair: fut.result() for pair, fut in futures.items()}

    def _nc(self, pod: str, host: str, port: int) -> bool:
        from kubernetes.client import CoreV1Api
        from kubernetes.stream import stream

        core = CoreV1Api(self._api)
        container = self._debug_container(core, pod)
        client = stream(core.connect_get_namespaced_pod_exec, pod, self.namespace,
                        container=container, command=["nc", "-z", "-w", "2", host, str(port)],
                        stderr=True, stdout=True, stdin=False, tty=False,
                        _preload_content=False)
        client.run_forever(timeout=10)
        code: int | None = client.returncode  # None: the command never reported its exit
        client.close()
        return code == 0

    def _debug_container(self, core: Any, pod: str) -> str:
        name = "netarena-probe"
        current = core.read_namespaced_pod(pod, self.namespace)
        names = {c.name for c in current.spec.ephemeral_containers or []}
        if name not in names:
            body = {"spec": {"ephemeralContainers": [
                *[c.to_dict() for c in current.spec.ephemeral_containers or []],
                {"name": name, "image": self.probe_image, "command": ["sleep", "86400"],
                 "targetContainerName": current.spec.containers[0].name}]}}
            core.patch_namespaced_pod_ephemeralcontainers(pod, self.namespace, body)
        return name

    def close(self) -> None:
        """Release the namespace (objects stay until the next episode's reset). Idempotent."""
        if self.kubectl is not None:
            self.kubectl.close()
            self.kubectl = None
        if self._held:
            self._held = False
            self._lock.release()


def _managed(obj: dict[str, Any]) -> dict[str, Any]:
    body = dict(obj, metadata=dict(obj["metadata"]))
    body["metadata"]["labels"] = {**(obj["metadata"].get("labels") or {}), MANAGED_LABEL: "true"}
    if body["kind"] == "Deployment":  # its pods carry the label too, so a reset finds them
        template = dict(body["spec"]["template"])
        template["metadata"] = dict(template.get("metadata") or {})
        template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}),
                                          MANAGED_LABEL: "true"}
        body["spec"] = dict(body["spec"], template=template)
    return body
