"""kubectl is confined by the kernel, not only by the allowlist.

Each test runs kubectl *directly* with a command the allowlist refuses (as if it had
misread one, as it once misread ``--patch_file``): the Landlock domain must still keep
kubectl away from the host's files, from other ports on loopback and from proxies.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from netarena.k8s.apiserver import ApiServer, ObjectStore
from netarena.k8s.jail import landlock_available
from netarena.k8s.kubectl import Kubectl

pytestmark = pytest.mark.skipif(not landlock_available(),
                                reason="this kernel has no Landlock: kubectl cannot be confined")

POLICY = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
          "metadata": {"name": "x", "namespace": "default"}, "spec": {"podSelector": {}}}


@pytest.fixture
def env() -> Iterator[tuple[ObjectStore, Kubectl]]:
    store = ObjectStore(seed=1)
    store.create(dict(POLICY))
    with ApiServer(store) as api, Kubectl(api.url) as kubectl:
        yield store, kubectl


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    sock.settimeout(0.5)
    yield sock
    sock.close()


def _nobody_called(sock: socket.socket) -> bool:
    try:
        sock.accept()[0].close()
    except TimeoutError:
        return True
    return False


def test_host_files_cannot_be_read(env: tuple[ObjectStore, Kubectl], tmp_path: Path) -> None:
    store, k = env
    secret = tmp_path / "secret.json"
    secret.write_text('{"metadata": {"labels": {"leaked": "yes"}}}')
    result = k.run(["patch", "networkpolicy", "x", "--type=merge", f"--patch-file={secret}"])
    assert not result.ok and "permission denied" in result.stderr, result.stderr
    assert "labels" not in store.get("NetworkPolicy", "default", "x")["metadata"]
    result = k.run(["create", "-f", "/dev/zero", "--dry-run=client"])
    assert not result.ok and "permission denied" in result.stderr, result.stderr
    result = k.run(["get", "pods", f"--kubeconfig={secret}"])
    assert not result.ok and "permission denied" in result.stderr, result.stderr
    assert secret.read_text().startswith("{")  # the evaluator itself is not confined


def test_host_directories_cannot_be_written(env: tuple[ObjectStore, Kubectl],
                                            tmp_path: Path) -> None:
    _, k = env
    k.run(["get", "pods", f"--cache-dir={tmp_path / 'planted'}"])
    assert not (tmp_path / "planted").exists()


@pytest.mark.parametrize("flag", ["--server=http://127.0.0.1:{port}",
                                  "--proxy-url=http://127.0.0.1:{port}"])
def test_other_ports_cannot_be_reached(env: tuple[ObjectStore, Kubectl],
                                       listener: socket.socket, flag: str) -> None:
    _, k = env
    port = listener.getsockname()[1]
    result = k.run(["get", "pods", flag.format(port=port), "--request-timeout=2s"])
    assert not result.ok
    assert _nobody_called(listener)


def test_the_confined_kubectl_still_does_its_job(env: tuple[ObjectStore, Kubectl]) -> None:
    store, k = env
    assert k.run(["label", "networkpolicy", "x", "checked=yes"]).ok
    assert store.get("NetworkPolicy", "default", "x")["metadata"]["labels"] == {"checked": "yes"}
    diff = k.run(["diff", "-f", "-"], stdin='{"apiVersion": "networking.k8s.io/v1", '
                 '"kind": "NetworkPolicy", "metadata": {"name": "x", "namespace": "default"},'
                 ' "spec": {"podSelector": {"matchLabels": {"a": "b"}}}}')
    assert diff.exit_code == 1 and "+      a: b" in diff.stdout, diff.stderr
