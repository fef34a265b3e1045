"""What a command run with ``kubectl exec`` in a pod prints: connectivity probes.

Operators test a policy by dialling from inside a pod: ``nc -zv -w 2 HOST PORT``,
``wget -qO- --timeout=2 http://HOST:PORT``, ``curl -m 2 http://HOST:PORT``, and look at
names with ``nslookup`` or ``cat /etc/resolv.conf``. The answer comes from the cluster's
state, as the packets would: the name is resolved through CoreDNS (which needs the pod's
egress to allow UDP 53 to the CoreDNS pods), a Service IP is forwarded to one of its ready
endpoints on the target port, NetworkPolicy decides (a dropped SYN is a timeout), and a
port nobody listens on is refused. Tools print what busybox (nc, wget, nslookup) and curl 8
print on success, refusal, timeout and a failed lookup.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from netarena.k8s.apiserver.coredns import CLUSTER_DOMAIN, DNS_LABELS, DNS_NAMESPACE, DNS_SERVICE_IP
from netarena.k8s.apiserver.podruntime import ExecResult
from netarena.k8s.policy import PodView, PolicyEngine
from netarena.k8s.policy_matrix import resolves

__all__ = ["ClusterView", "outcome", "nc", "wget", "curl", "nslookup", "is_ip",
           "flag_value"]

_FRONTEND_PAGE = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n    <meta charset=\"UTF-8\">\n"
                  "    <title>Online Boutique</title>\n</head>\n<body>\n    <header>\n"
                  "      <div class=\"navbar sub-navbar\">Free shipping with $75 purchase!"
                  "</div>\n    </header>\n    <main role=\"main\" class=\"home\">\n"
                  "      <h3>Hot Products</h3>\n    </main>\n</body>\n</html>\n")


@dataclass(frozen=True)
class _Target:
    ip: str
    pods: tuple[PodView, ...]
    port: int
    listening: bool
    """Some backend declares the port (else the connection is refused)."""
    http: bool = False
    """The port is an HTTP server's (named ``http``), so a request gets a page back."""


class ClusterView:
    """The objects a probe needs, read once per command."""

    def __init__(self, objects: dict[str, list[dict[str, Any]]]) -> None:
        self.engine = PolicyEngine(objects["Pod"], objects["Namespace"],
                                   objects["NetworkPolicy"])
        self.services = objects["Service"]
        self.dns = [v for v in self.engine.views if v.namespace == DNS_NAMESPACE
                    and all(v.labels.get(k) == val for k, val in DNS_LABELS.items())]

    def lookup(self, name: str, namespace: str) -> dict[str, Any] | None:
        """The Service a DNS name means in ``namespace``'s search path (None: NXDOMAIN)."""
        parts = name.rstrip(".").split(".")
        suffix = ["svc", *CLUSTER_DOMAIN.split(".")]
        if len(parts) > 2 and parts[2:] not in (suffix[:k] for k in range(1, len(suffix) + 1)):
            return None
        ns = parts[1] if len(parts) > 1 else namespace
        return next((s for s in self.services if s["metadata"]["name"] == parts[0]
                     and s["metadata"].get("namespace") == ns), None)

    def target(self, ip: str, port: int) -> _Target | None:
        """Where a connection to ``ip:port`` lands (None: nothing answers, a timeout)."""
        for svc in self.services:
            spec = svc.get("spec") or {}
            if spec.get("clusterIP") != ip:
                continue
            sp = next((p for p in spec.get("ports") or [] if p.get("port") == port
                       and p.get("protocol", "TCP") == "TCP"), None)
            if sp is None:
                return None
            backends = tuple(v for v in self.engine.views if v.namespace == svc["metadata"][
                "namespace"] and spec.get("selector") and all(
                v.labels.get(k) == val for k, val in spec["selector"].items()))
            target = sp.get("targetPort", port)
            number = next((n for v in backends for name, n, _ in v.ports if name == target),
                          target if isinstance(target, int) else port)
            return _Target(ip, backends, number, any(
                n == number for v in backends for _, n, _ in v.ports), _is_http(backends, number))
        pods = tuple(v for v in self.engine.views if ip in v.ips)
        if not pods:
            return None
        return _Target(ip, pods, port, any(n == port for _, n, _ in pods[0].ports),
                       _is_http(pods, port))


def _is_http(pods: tuple[PodView, ...], port: int) -> bool:
    return any(name == "http" and n == port for v in pods[:1] for name, n, _ in v.ports)


def outcome(cluster: ClusterView, src: PodView, host: str, port: int
             ) -> tuple[str, str | None]:
    """``("dns"|"timeout"|"refused"|"open"|"http", ip)`` for a TCP connect from ``src``.

    ``http`` is an open connection to an HTTP server (the others close on a request).
    """
    ip = host if is_ip(host) else None
    if ip is None:
        svc = cluster.lookup(host, src.namespace)
        if svc is None or not resolves(cluster.engine, src, cluster.dns):
            return "dns", None
        ip = (svc.get("spec") or {}).get("clusterIP")
        if not ip or ip == "None":
            return "dns", None
    target = cluster.target(ip, port)
    if target is None:
        return "timeout", ip
    if not target.pods:
        return "refused", ip  # kube-proxy rejects a Service without endpoints
    if not cluster.engine.allowed(src, target.pods[0], target.port, "TCP"):
        return "timeout", ip  # the SYN is dropped
    if not target.listening:
        return "refused", ip
    return ("http" if target.http else "open"), ip


def is_ip(text: str) -> bool:
    """Whether ``text`` is a dotted IPv4 address."""
    parts = text.split(".")
    return len(parts) == 4 and all(p.isdigit() and int(p) < 256 for p in parts)


def _url(url: str) -> tuple[str, int, bool]:
    rest = url.split("://", 1)[-1]
    hostport = rest.split("/", 1)[0]
    host, _, port = hostport.partition(":")
    https = url.startswith("https://")
    return host, int(port) if port.isdigit() else (443 if https else 80), https


def flag_value(argv: list[str], names: tuple[str, ...], default: float) -> float:
    """The number a flag of ``names`` gives in ``argv`` (``default`` when absent)."""
    for i, arg in enumerate(argv):
        for name in names:
            value = None
            if arg == name and i + 1 < len(argv):
                value = argv[i + 1]
            elif arg.startswith(name + "=") or (len(name) == 2 and arg.startswith(name)
                                                 and len(arg) > 2):
                value = arg[len(name):].lstrip("=")
            if value is not None:
                try:
                    return float(value)
                except ValueError:
                    return default
    return default


def nc(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    """The busybox ``nc``: ``-z`` connects, ``-v`` says how it went, ``-w`` bounds the wait."""
    plain = [a for i, a in enumerate(argv[1:], 1)
             if not a.startswith("-") and argv[i - 1] not in ("-w", "-W", "-p", "-s")]
    if len(plain) < 2 or not plain[-1].isdigit():
        return ExecResult("", "BusyBox v1.37.0 (2025-01-17 18:12:01 UTC) multi-call binary."
                              "\n\nUsage: nc [OPTIONS] HOST PORT  - connect\n", 1)
    host, port = plain[-2], int(plain[-1])
    wait = flag_value(argv, ("-w",), 127.0)
    verbose = any(a.startswith("-") and "v" in a for a in argv[1:])
    state, ip = outcome(cluster, src, host, port)
    where = f"{host} ({ip}:{port})"
    if state == "dns":
        return ExecResult("", f"nc: bad address '{host}'\n", 1)
    if state == "timeout":
        return ExecResult("", f"nc: {where}: Operation timed out\n" if verbose else "", 1, wait)
    if state == "refused":
        return ExecResult("", f"nc: {where}: Connection refused\n", 1)
    return ExecResult("", f"{where} open\n" if verbose else "", 0)


def wget(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    """The busybox ``wget``: fetches a URL (the frontend's page; gRPC ports reset)."""
    urls = [a for a in argv[1:] if "://" in a or (not a.startswith("-") and ":" in a)]
    if not urls:
        return ExecResult("", "wget: missing URL\n", 1)
    host, port, _ = _url(urls[-1])
    wait = flag_value(argv, ("-T", "--timeout"), 900.0)
    state, ip = outcome(cluster, src, host, port)
    quiet = any(a in ("-q", "-qO-", "-qO", "--quiet") or (a.startswith("-q")) for a in argv)
    if state == "dns":
        return ExecResult("", f"wget: bad address '{host}:{port}'\n", 1)
    if state == "timeout":
        return ExecResult("", "wget: download timed out\n", 1, wait)
    if state == "refused":
        return ExecResult("", f"wget: can't connect to remote host ({ip}): Connection refused\n",
                          1)
    body = _FRONTEND_PAGE if state == "http" else None
    head = "" if quiet else f"Connecting to {host}:{port} ({ip}:{port})\n"
    if body is None:
        return ExecResult("", head + "wget: error getting response: Connection reset by peer\n",
                          1)
    return ExecResult(body, head + ("" if quiet else "writing to stdout\n-                    "
                                    "100% |********************************|  "
                                    f"{len(body)}  0:00:00 ETA\nwritten to stdout\n"), 0)


def curl(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    """The curl 8 client: fetches a URL, with its exit codes (6 lookup, 7 refused, 28 timeout)."""
    urls = [a for i, a in enumerate(argv[1:], 1) if not a.startswith("-")
            and argv[i - 1] not in ("-m", "--max-time", "--connect-timeout", "-o", "-H", "-w")]
    if not urls:
        return ExecResult("", "curl: try 'curl --help' or 'curl --manual' for more "
                              "information\n", 2)
    host, port, _ = _url(urls[-1])
    wait = min(flag_value(argv, ("-m", "--max-time"), 300.0),
               flag_value(argv, ("--connect-timeout",), 300.0))
    state, _ = outcome(cluster, src, host, port)
    if state == "dns":
        return ExecResult("", f"curl: (6) Could not resolve host: {host}\n", 6)
    if state == "timeout":
        return ExecResult("", f"curl: (28) Connection timed out after {int(wait * 1000) + 1} "
                              "milliseconds\n", 28, wait)
    if state == "refused":
        return ExecResult("", f"curl: (7) Failed to connect to {host} port {port} after 0 ms: "
                              "Couldn't connect to server\n", 7)
    if state != "http":
        return ExecResult("", "curl: (56) Recv failure: Connection reset by peer\n", 56)
    return ExecResult(_FRONTEND_PAGE, "", 0)


def nslookup(cluster: ClusterView, src: PodView, argv: list[str]) -> ExecResult:
    """The busybox ``nslookup``: resolves a Service name through CoreDNS."""
    names = [a for a in argv[1:] if not a.startswith("-")]
    if not names:
        return ExecResult("", "BusyBox v1.37.0 multi-call binary.\n\nUsage: nslookup [-type=QUERY_"
                              "TYPE] [-debug] HOST [DNS_SERVER]\n", 1)
    name = names[0]
    server = f"Server:\t\t{DNS_SERVICE_IP}\nAddress:\t{DNS_SERVICE_IP}:53\n\n"
    if not resolves(cluster.engine, src, cluster.dns):
        return ExecResult("", ";; connection timed out; no servers could be reached\n\n", 1,
                          15.0)
    svc = cluster.lookup(name, src.namespace)
    if svc is None:
        return ExecResult(server, f"** server can't find {name}: NXDOMAIN\n\n", 1)
    meta = svc["metadata"]
    fqdn = f"{meta['name']}.{meta['namespace']}.svc.{CLUSTER_DOMAIN}"
    ip = (svc.get("spec") or {}).get("clusterIP")
    return ExecResult(server + f"Name:\t{fqdn}\nAddress: {ip}\n\n", "", 0)
