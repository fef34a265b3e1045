"""The API server holds no pod behaviour: ``log`` and ``exec`` go to the injected runtime."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import netarena.k8s.apiserver as apiserver
import netarena.k8s.pods as pods
from netarena.k8s.apiserver import ApiServer, ExecResult, ObjectStore
from netarena.k8s.apiserver.kinds import BadRequest

_POD = {"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}
_LOG = "/api/v1/namespaces/default/pods/web/log"
_EXEC = "/api/v1/namespaces/default/pods/web/exec?command=true"


class _Runtime:
    """Records what the server asks; answers with fixed text."""

    def __init__(self) -> None:
        self.noted: list[float] = []

    def note(self, now: float) -> None:
        self.noted.append(now)

    def container_log(self, pod: dict[str, Any], params: dict[str, str], now: float) -> str:
        return f"log of {pod['metadata']['name']}\n"

    def follow_log(self, pod: dict[str, Any], params: dict[str, str],
                   clock: Callable[[], float], stop: threading.Event) -> Iterator[str]:
        yield "followed\n"

    def run_exec(self, pod: dict[str, Any], command: list[str],
                 stop: threading.Event) -> ExecResult:
        return ExecResult(" ".join(command), "", 0)


def _store() -> ObjectStore:
    store = ObjectStore(seed=1)
    store.create(_POD)
    return store


def test_public_surfaces_are_pinned() -> None:
    assert sorted(apiserver.__all__) == ["ApiError", "ApiServer", "ClusterProfile",
                                         "ExecResult", "ObjectStore", "PodRuntime",
                                         "bootstrap", "cluster_profile"]
    assert pods.__all__ == ["Kubelet"]


def test_log_and_exec_go_to_the_runtime_and_writes_are_noted() -> None:
    runtime = _Runtime()
    api = ApiServer(_store(), pods=runtime)
    assert api.handle("GET", _LOG, {}, b"").body == "log of web\n"
    pod, command = api.exec_target(_EXEC)
    assert api.run_exec(pod, command).stdout == "true"
    assert runtime.noted == []  # reads do not move the cluster's state
    api.handle("DELETE", "/api/v1/namespaces/default/pods/web", {}, b"")
    assert len(runtime.noted) == 1


def test_without_a_runtime_log_and_exec_are_refused() -> None:
    api = ApiServer(_store())
    with pytest.raises(BadRequest, match="no node runs the containers of pod web"):
        api.handle("GET", _LOG, {}, b"")
    with pytest.raises(BadRequest, match="no node runs"):
        api.exec_target(_EXEC)
