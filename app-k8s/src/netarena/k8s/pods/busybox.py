"""The rest of a busybox container: a shell, files, the environment and ``ping``.

Operators poke around a pod before they probe: ``sh -c 'env | grep ADDR'``, ``ls /etc``,
``cat /etc/hosts``, ``ping -c 1 10.244.1.7``. A container whose image has a shell answers
BusyBox's set (``images``; the network tools live in ``probes``), from the pod's own spec
and the cluster's state: the environment is the container's plus the Service variables the kubelet
injects, files are the ones a container of this image has, and ICMP follows
NetworkPolicy as Calico and Cilium enforce it (a rule that names ports never allows ICMP;
a ClusterIP never answers a ping). ``sh -c`` runs a script of these commands joined by
``;``, ``&&``, ``||`` and pipes into ``grep``, ``head``, ``tail`` and ``wc``; the root
filesystem is read-only, so a redirection to a file fails as it would there.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from netarena.k8s.apiserver.coredns import CLUSTER_DOMAIN, DNS_SERVICE_IP
from netarena.k8s.pods.images import BUSYBOX_APPLETS
from netarena.k8s.policy import PodView

__all__ = ["environment", "read_file", "list_dir", "ping_lines", "filter_output"]

_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_DIRS = {
    "/": ["bin", "dev", "etc", "home", "lib", "proc", "root", "run", "sys", "tmp", "usr",
          "var"],
    "/bin": sorted(BUSYBOX_APPLETS),
    "/etc": ["group", "hostname", "hosts", "nsswitch.conf", "os-release", "passwd",
             "resolv.conf"],
    "/tmp": [], "/home": [], "/root": [], "/dev": ["null", "random", "urandom", "zero"],
    "/var": ["run"], "/run": ["secrets"], "/var/run": ["secrets"],
    "/var/run/secrets": ["kubernetes.io"], "/var/run/secrets/kubernetes.io": ["serviceaccount"],
    "/var/run/secrets/kubernetes.io/serviceaccount": ["ca.crt", "namespace", "token"],
    "/usr": ["bin", "lib", "sbin"], "/lib": [], "/proc": ["net", "self"],
}


def _svc_vars(services: list[dict[str, Any]], namespace: str) -> list[str]:
    """The ``*_SERVICE_HOST``/``*_PORT`` variables the kubelet injects for a namespace."""
    out = []
    for svc in sorted(services, key=lambda s: s["metadata"]["name"]):
        spec = svc.get("spec") or {}
        ip = spec.get("clusterIP")
        if svc["metadata"].get("namespace") != namespace or not ip or ip == "None":
            continue
        name = re.sub(r"[^A-Z0-9]", "_", svc["metadata"]["name"].upper())
        ports = spec.get("ports") or []
        if not ports:
            continue
        first = ports[0]
        out += [f"{name}_SERVICE_HOST={ip}", f"{name}_SERVICE_PORT={first['port']}"]
        if first.get("name"):
            pname = re.sub(r"[^A-Z0-9]", "_", str(first["name"]).upper())
            out.append(f"{name}_SERVICE_PORT_{pname}={first['port']}")
        out.append(f"{name}_PORT={first.get('protocol', 'TCP').lower()}://{ip}:{first['port']}")
        for p in ports:
            proto = p.get("protocol", "TCP")
            key = f"{name}_PORT_{p['port']}_{proto}"
            out += [f"{key}={proto.lower()}://{ip}:{p['port']}", f"{key}_PROTO={proto.lower()}",
                    f"{key}_PORT={p['port']}", f"{key}_ADDR={ip}"]
    return out


def environment(pod: dict[str, Any], services: list[dict[str, Any]]) -> list[str]:
    """``NAME=value`` lines of the pod's first container, as ``env`` prints them."""
    meta = pod["metadata"]
    container = (pod["spec"].get("containers") or [{}])[0]
    own = [f"{e['name']}={e.get('value', '')}" for e in container.get("env") or []
           if "name" in e]
    default_svc = ["KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_SERVICE_PORT=443",
                   "KUBERNETES_SERVICE_PORT_HTTPS=443", "KUBERNETES_PORT=tcp://10.96.0.1:443",
                   "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
                   "KUBERNETES_PORT_443_TCP_PROTO=tcp", "KUBERNETES_PORT_443_TCP_PORT=443",
                   "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1"]
    namespace = meta.get("namespace", "default")
    services = [s for s in services if s["metadata"]["name"] != "kubernetes"]
    return [f"PATH={_PATH}", f"HOSTNAME={meta['name']}", *own, *default_svc,
            *_svc_vars(services, namespace), "HOME=/"]


def read_file(pod: dict[str, Any], path: str, os_release: str = "") -> tuple[str | None, str]:
    """``(content, error)`` of ``cat PATH`` in the pod (``content`` None: the error applies)."""
    meta = pod["metadata"]
    ns = meta.get("namespace", "default")
    ip = (pod.get("status") or {}).get("podIP", "")
    path = re.sub(r"/+", "/", path).rstrip("/") or "/"
    files = {
        "/etc/resolv.conf": f"search {ns}.svc.{CLUSTER_DOMAIN} svc.{CLUSTER_DOMAIN} "
                            f"{CLUSTER_DOMAIN}\nnameserver {DNS_SERVICE_IP}\noptions ndots:5\n",
        "/etc/hostname": meta["name"] + "\n",
        "/etc/hosts": "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost "
                      "ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix"
                      f"\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n{ip}\t{meta['name']}\n",
        "/etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/"
                       "false\n",
        "/etc/group": "root:x:0:\nnogroup:x:65534:\n",
        "/etc/os-release": os_release or 'NAME="BusyBox"\nVERSION_ID="1.37.0"\nID=busybox\n',
        "/etc/nsswitch.conf": "hosts: files dns\n",
        "/var/run/secrets/kubernetes.io/serviceaccount/namespace": ns,
    }
    if path in files:
        return files[path], ""
    if path in _DIRS:
        return None, "cat: read error: Is a directory\n"
    if path.endswith(("/token", "/ca.crt")) and path.startswith("/var/run/secrets"):
        return None, f"cat: can't open '{path}': Permission denied\n"
    return None, f"cat: can't open '{path}': No such file or directory\n"


def list_dir(path: str, long: bool = False) -> tuple[str | None, str]:
    """``ls PATH``: ``(listing, error)``."""
    path = re.sub(r"/+", "/", path).rstrip("/") or "/"
    if path not in _DIRS:
        parent, _, name = path.rpartition("/")
        if name in _DIRS.get(parent or "/", []):
            return path + "\n", ""
        return None, f"ls: {path}: No such file or directory\n"
    names = _DIRS[path]
    if long:
        base = "" if path == "/" else path
        return "".join(
            (f"drwxr-xr-x    2 root     root          4096 Jan 17 18:12 {n}\n"
             if f"{base}/{n}" in _DIRS else
             f"-rw-r--r--    1 root     root           {len(n) * 7:>3} Jan 17 18:12 {n}\n")
            for n in names), ""
    return "".join(n + "\n" for n in names), ""


def ping_lines(host: str, ip: str, count: int, reply: bool, rng_ms: Callable[[], float]
               ) -> tuple[str, int]:
    """Busybox ``ping -c COUNT``'s output and exit status, answered or not."""
    out = [f"PING {host} ({ip}): 56 data bytes"]
    times = [rng_ms() for _ in range(count)] if reply else []
    out += [f"64 bytes from {ip}: seq={i} ttl=63 time={t:.3f} ms" for i, t in enumerate(times)]
    out += ["", f"--- {host} ping statistics ---",
            f"{count} packets transmitted, {len(times)} packets received, "
            f"{0 if reply else 100}% packet loss"]
    if times:
        out.append(f"round-trip min/avg/max = {min(times):.3f}/{sum(times) / len(times):.3f}/"
                   f"{max(times):.3f} ms")
    return "\n".join(out) + "\n", 0 if reply else 1


def icmp_allowed(engine: Any, src: PodView, dst: PodView) -> bool:
    """ICMP passes only rules without ports (the ``ICMP`` protocol matches no port entry)."""
    return bool(engine.allowed(src, dst, 0, "ICMP"))


def filter_output(argv: list[str], text: str) -> tuple[str, str, int]:
    """Apply a pipe filter (``grep``, ``head``, ``tail``, ``wc``) to ``text``."""
    tool, args = argv[0].rsplit("/", 1)[-1], argv[1:]
    lines = text.splitlines(keepends=True)
    if tool in ("head", "tail"):
        n = 10
        for i, a in enumerate(args):
            if a == "-n" and i + 1 < len(args) and args[i + 1].lstrip("-").isdigit():
                n = int(args[i + 1])
            elif a.startswith("-n") and a[2:].isdigit():
                n = int(a[2:])
            elif a.startswith("-") and a[1:].isdigit():
                n = int(a[1:])
        picked = lines[:n] if tool == "head" else lines[len(lines) - n:] if n else []
        return "".join(picked), "", 0
    if tool == "wc":
        if "-l" in args:
            return f"{len(lines)}\n", "", 0
        return f"{len(lines):>8} {len(text.split()):>8} {len(text):>8}\n", "", 0
    flags = "".join(a[1:] for a in args if a.startswith("-") and len(a) > 1)
    words = [a for a in args if not a.startswith("-")]
    if not words:
        return "", ("BusyBox v1.37.0 multi-call binary.\n\nUsage: grep [-HhnlLoqvsrRiwFE] "
                    "PATTERN\n"), 2
    try:
        pattern = re.compile(re.escape(words[0]) if "F" in flags else words[0],
                             re.IGNORECASE if "i" in flags else 0)
    except re.error:
        return "", f"grep: bad regex '{words[0]}'\n", 2
    hits = [ln for ln in lines if bool(pattern.search(ln)) != ("v" in flags)]
    if "c" in flags:
        return f"{len(hits)}\n", "", 0 if hits else 1
    return ("" if "q" in flags else "".join(hits)), "", 0 if hits else 1


def date_line(now: float) -> str:
    """Busybox ``date``: ``Wed Nov 25 19:05:01 UTC 2026``."""
    return time.strftime("%a %b %e %H:%M:%S UTC %Y", time.gmtime(now)) + "\n"
