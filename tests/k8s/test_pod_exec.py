"""Pod exec into an Alpine image: one consistent BusyBox container answered by the cluster state.

recommendationservice runs Python on Alpine, so it has BusyBox's applets and no curl or
bash; the distroless images' refusals are in test_cluster.
"""

from __future__ import annotations

import pytest

from netarena.k8s.episode import K8sEpisode
from netarena.k8s.pods.images import BUSYBOX_APPLETS

pytestmark = pytest.mark.slow
_ALPINE = "recommendationservice"


def _exec(ep: K8sEpisode, app: str, *cmd: str) -> tuple[int, str, str]:
    assert ep.kubectl is not None
    pod = ep.store.list("Pod", "default", f"app={app}")[0]["metadata"]["name"]
    result = ep.kubectl.run(["exec", pod, "--", *cmd])
    return result.exit_code, result.stdout, result.stderr


def test_every_applet_exists_from_exec_and_from_the_shell(episode: K8sEpisode) -> None:
    """Before: ``sh -c``, cat, nc, curl, wget existed but sh, ls, env, ping were "not found"."""
    for tool in sorted(BUSYBOX_APPLETS):
        args = {"sleep": ["0"], "ping": ["-c", "1", "127.0.0.1"], "cat": ["/etc/hostname"],
                "nc": ["-h"]}.get(tool, [])
        code, out, err = _exec(episode, _ALPINE, tool, *args)
        assert "not found" not in err and "executable file" not in err, (tool, err)
        code, out, err = _exec(episode, _ALPINE, "sh", "-c", " ".join([tool, *args]))
        assert "not found" not in err, (tool, err)
    code, _, err = _exec(episode, _ALPINE, "bash")
    assert code != 0 and 'exec: "bash": executable file not found in $PATH' in err
    code, _, err = _exec(episode, _ALPINE, "sh", "-c", "bash -c id")
    assert code == 127 and "sh: bash: not found" in err
    code, _, err = _exec(episode, _ALPINE, "curl", "-s", "adservice:9555")
    assert code != 0 and 'exec: "curl": executable file not found in $PATH' in err


def test_files_environment_and_identity_are_the_pods(episode: K8sEpisode) -> None:
    pod = episode.store.list("Pod", "default", "app=" + _ALPINE)[0]
    code, env, _ = _exec(episode, _ALPINE, "env")
    assert code == 0 and f"HOSTNAME={pod['metadata']['name']}" in env
    assert "PRODUCT_CATALOG_SERVICE_ADDR=productcatalogservice:3550" in env
    ip = episode.store.get("Service", "default", "adservice")["spec"]["clusterIP"]
    assert f"ADSERVICE_SERVICE_HOST={ip}" in env
    _, hosts, _ = _exec(episode, _ALPINE, "cat", "/etc/hosts")
    assert f"{pod['status']['podIP']}\t{pod['metadata']['name']}" in hosts
    _, resolv, _ = _exec(episode, _ALPINE, "cat", "/etc/resolv.conf")
    assert "nameserver 10.96.0.10" in resolv
    code, listing, _ = _exec(episode, _ALPINE, "ls", "/etc")
    assert code == 0 and "resolv.conf" in listing.split()
    code, _, err = _exec(episode, _ALPINE, "cat", "/etc/shadow")
    assert code == 1 and "No such file or directory" in err


def test_the_shell_runs_scripts_with_pipes_and_conditions(episode: K8sEpisode) -> None:
    code, out, _ = _exec(episode, _ALPINE, "sh", "-c",
                         "env | grep SERVICE_ADDR | grep -c CATALOG; false && echo no || echo yes")
    assert code == 0 and out == "1\nyes\n"
    code, out, _ = _exec(episode, _ALPINE, "sh", "-c", "echo $HOSTNAME | wc -l")
    assert out == "1\n"
    code, _, err = _exec(episode, _ALPINE, "sh", "-c", "echo x > /etc/x")
    assert code == 1 and "Read-only file system" in err
    code, out, _ = _exec(episode, _ALPINE, "sh", "-c",
                         "nc -zv -w 1 adservice 9555 2>&1 | head -n 1")
    assert "adservice" in out


def test_ping_follows_network_policy(episode: K8sEpisode) -> None:
    """ICMP passes only rules without ports; a ClusterIP never answers; DNS first."""
    coredns = episode.store.list("Pod", "kube-system", "k8s-app=kube-dns")[0]
    code, out, _ = _exec(episode, _ALPINE, "ping", "-c", "2", coredns["status"]["podIP"])
    assert code == 0 and "2 packets received, 0% packet loss" in out  # kube-system isolates nothing
    ads = episode.store.list("Pod", "default", "app=adservice")[0]
    code, out, _ = _exec(episode, _ALPINE, "ping", "-c", "1", ads["status"]["podIP"])
    assert code == 1 and "100% packet loss" in out  # its ingress rules all name ports
    code, out, _ = _exec(episode, _ALPINE, "ping", "-c", "1", "adservice")
    assert code == 1 and "100% packet loss" in out
    code, _, err = _exec(episode, _ALPINE, "ping", "-c", "1", "nosuchservice")
    assert code == 1 and "bad address 'nosuchservice'" in err
