"""What each container image holds: a shell and which tools, as on the real images.

Online Boutique v0.10.6's images differ, and so does what ``kubectl exec`` finds in them:

* the Go services (frontend, checkout, product catalog, shipping) run on
  ``gcr.io/distroless/static`` and cartservice on .NET's ``runtime-deps:*-chiseled``: no
  shell and no tool at all, so every exec fails to start, as containerd reports it
  (``exec: "sh": executable file not found in $PATH``);
* adservice (Temurin JRE on Alpine), currency and payment (Alpine with Node.js), email,
  recommendation and the load generator (Python on Alpine) and redis-cart (``redis:alpine``)
  have Alpine's BusyBox: ``sh``, ``nc``, ``wget``, ``nslookup``, ``ping`` and the file
  tools, no ``curl``, no ``bash``, plus their runtime (``java``, ``node``, ``python3``,
  ``redis-cli``);
* Prometheus runs on Prometheus's BusyBox image, Grafana on Alpine with ``bash`` and
  ``curl``; the cluster's own components (CoreDNS, kube-proxy, etcd...) are distroless.

Other teams' workloads (``registry.example.com``) are taken to be Alpine-based.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Image", "image_of", "BUSYBOX_APPLETS", "RUNTIME_VERSIONS"]

BUSYBOX_APPLETS = frozenset({
    "cat", "date", "echo", "env", "false", "grep", "head", "hostname", "id", "ls", "nc",
    "nslookup", "ping", "printenv", "pwd", "sh", "ash", "sleep", "tail", "true", "uname", "wc",
    "wget", "whoami", "which"})
"""What Alpine's and Prometheus's BusyBox offer of the commands modelled here."""
RUNTIME_VERSIONS = {
    "python3": "Python 3.14.6", "python": "Python 3.14.6", "node": "v22.16.0",
    "java": 'openjdk version "25.0.3" 2026-04-21 LTS',
    "redis-cli": "redis-cli 8.0.3", "locust": "locust 2.43.0 from /usr/local/lib/python3.14/"
    "site-packages/locust (Python 3.14.6)",
}
"""What each runtime prints for ``--version``."""
_ALPINE = ('NAME="Alpine Linux"\nID=alpine\nVERSION_ID=3.24.1\nPRETTY_NAME="Alpine Linux '
           'v3.24"\nHOME_URL="https://alpinelinux.org/"\nBUG_REPORT_URL="https://gitlab.'
           'alpinelinux.org/alpine/aports/-/issues"\n')
_BUSYBOX = 'NAME="BusyBox"\nVERSION_ID="1.37.0"\nID=busybox\n'
_NO_SHELL = ("frontend", "checkoutservice", "productcatalogservice", "shippingservice",
             "cartservice", "registry.k8s.io/", "docker.io/kindest/", "coredns", "synthetic/")
_RUNTIMES = {"adservice": ("java",), "currencyservice": ("node",), "paymentservice": ("node",),
             "emailservice": ("python3", "python"),
             "recommendationservice": ("python3", "python"),
             "loadgenerator": ("python3", "python", "locust"), "redis": ("redis-cli",)}


@dataclass(frozen=True)
class Image:
    """What one container image holds."""

    shell: str | None
    """``sh`` (BusyBox ash), ``bash``, or ``None``: no shell at all."""
    tools: frozenset[str] = frozenset()
    """Commands on ``PATH``."""
    os_release: str = _ALPINE
    """``/etc/os-release``."""
    runtimes: tuple[str, ...] = field(default=())
    """Language runtimes and clients beside the shell tools (``python3``, ``node``)."""

    def has(self, tool: str) -> bool:
        """Whether ``tool`` is on the image's ``PATH``."""
        return tool in self.tools or tool in self.runtimes


def image_of(image: str) -> Image:
    """The profile of a container image reference."""
    name = image.rsplit("/", 1)[-1].split(":", 1)[0].split("@", 1)[0]
    if any(mark in image for mark in _NO_SHELL if "/" in mark) or name in _NO_SHELL:
        return Image(None, os_release="")
    if "prometheus" in image:
        return Image("sh", BUSYBOX_APPLETS, _BUSYBOX)
    if "grafana" in image:
        return Image("bash", BUSYBOX_APPLETS | {"bash", "curl"})
    runtimes = next((r for key, r in _RUNTIMES.items() if key == name or key in name), ())
    return Image("sh", BUSYBOX_APPLETS, _ALPINE, runtimes)
