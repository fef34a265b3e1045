"""The microservice application as data: services, ports, labels and allowed edges.

Manifests, NetworkPolicies, the expected connectivity matrix and the prompt's description
of the intended traffic are all derived from one ``AppModel``, so the Online Boutique and
a larger synthetic service graph go through exactly the same code.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from netarena.common.core.errors import ConfigError
from netarena.k8s.bounded import BoundedCache
from netarena.k8s.detail import ClusterDetail

__all__ = [
    "per_model",
    "ServiceSpec",
    "AppModel",
    "online_boutique",
    "synthetic_app",
    "parse_intended",
    "ANYONE",
]

ANYONE = "*"
"""Marker in ``ServiceSpec.sources`` meaning every pod may reach the service."""


@dataclass(frozen=True)
class ServiceSpec:
    """One microservice: its Deployment, its Service and who may call it.

    ``port`` is the Service port clients dial; ``target_port`` the container port that
    NetworkPolicies name (traffic is DNATed to it before policy applies).
    """

    name: str
    """Service, Deployment and ``app`` label value."""
    port: int | None = None
    """Service port, or ``None`` for a client-only workload (loadgenerator)."""
    target_port: int | None = None
    """Container port; equals ``port`` unless stated."""
    port_name: str = "grpc"
    """Name of the Service port and of the container port."""
    sources: tuple[str, ...] = ()
    """Services allowed to reach it over TCP, in policy order; ``(ANYONE,)`` for everyone."""
    image: str = ""
    """Container image (informational: nothing runs)."""

    @property
    def container_port(self) -> int | None:
        """The port policies allow: the target port, defaulting to the Service port."""
        return self.target_port if self.target_port is not None else self.port


@dataclass(frozen=True)
class AppModel:
    """A whole application: services plus the namespace it runs in."""

    services: tuple[ServiceSpec, ...]
    namespace: str = "default"
    name: str = "online-boutique"
    detail: ClusterDetail | None = None
    """Monitoring, external egress and ownership the healthy policies carry (``None``:
    the bare upstream policies)."""
    _by_name: dict[str, ServiceSpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_name.update({s.name: s for s in self.services})

    def service(self, name: str) -> ServiceSpec:
        """The service called ``name`` (``KeyError`` when unknown)."""
        return self._by_name[name]

    @property
    def names(self) -> list[str]:
        """Service names in declaration order."""
        return [s.name for s in self.services]

    @property
    def servers(self) -> list[ServiceSpec]:
        """Services that listen on a port (probe destinations)."""
        return [s for s in self.services if s.port is not None]

    def expected(self, source: str, dest: str) -> bool:
        """Whether the healthy application lets ``source`` reach ``dest``'s port."""
        spec = self._by_name[dest]
        return spec.port is not None and (ANYONE in spec.sources or source in spec.sources)

    def callees(self, source: str) -> list[ServiceSpec]:
        """Services ``source`` may reach (named as a caller, or open to any pod)."""
        return [d for d in self.servers if d.name != source and self.expected(source, d.name)]

    def pairs(self) -> list[tuple[str, str]]:
        """Every probed (source, destination) pair.

        All ordered pairs of distinct services whose destination listens on a port.
        """
        return [(s, d.name) for s in self.names for d in self.servers if s != d.name]

    def describe(self) -> str:
        """The intended traffic, one line per service, as shown to agents.

        ``parse_intended`` reads it back.
        """
        lines = []
        for s in self.services:
            if s.port is None:
                lines.append(f"- {s.name}: no listening port (client only)")
                continue
            who = "any pod" if ANYONE in s.sources else (", ".join(s.sources) or "nobody")
            lines.append(
                f"- {s.name}: service port {s.port} -> container port {s.container_port}/TCP"
                f" ({s.port_name}); may be reached from: {who}"
            )
        return "\n".join(lines)


_OB_IMAGE = "us-central1-docker.pkg.dev/online-boutique-ci/microservices-demo/{}:v0.10.6"


def online_boutique(namespace: str = "default") -> AppModel:
    """Google's Online Boutique, as its upstream manifests and 13 policies describe it."""
    fe, co = "frontend", "checkoutservice"

    def svc(name: str, port: int | None, sources: tuple[str, ...], **kw: Any) -> ServiceSpec:
        return ServiceSpec(name, port, sources=sources, image=_OB_IMAGE.format(name), **kw)

    return AppModel(
        namespace=namespace,
        services=(
            svc(fe, 80, (ANYONE,), target_port=8080, port_name="http"),
            svc("adservice", 9555, (fe,)),
            svc("cartservice", 7070, (fe, co)),
            svc(co, 5050, (fe,)),
            svc("currencyservice", 7000, (fe, co)),
            svc("emailservice", 5000, (co,), target_port=8080),
            svc("paymentservice", 50051, (co,)),
            svc("productcatalogservice", 3550, (fe, co, "recommendationservice")),
            svc("recommendationservice", 8080, (fe,)),
            svc("shippingservice", 50051, (fe, co)),
            ServiceSpec("redis-cart", 6379, port_name="tcp-redis", sources=("cartservice",),
                        image="redis:alpine"),
            svc("loadgenerator", None, ()),
        ),
    )


def synthetic_app(num_services: int, rng: random.Random, namespace: str = "default") -> AppModel:
    """A random layered service graph of ``num_services`` services (≥ 3).

    Shape: a ``gateway`` reachable from anyone, a client-only ``loadgen``, and
    ``svc-<i>`` backends each called by one to three services from earlier layers, so
    the graph stays acyclic like real call graphs. Ports are drawn without repeats.

    Raises:
        ConfigError: Fewer than 3 services.
    """
    if num_services < 3:
        raise ConfigError("a synthetic application needs at least 3 services")
    ports = rng.sample(range(3000, 9000), num_services)
    services = [ServiceSpec("gateway", 80, target_port=ports[0], port_name="http",
                            sources=(ANYONE,), image="synthetic/gateway:1")]
    callers = ["gateway"]
    for i in range(1, num_services - 1):
        name = f"svc-{i}"
        k = min(len(callers), rng.randint(1, 3))
        sources = tuple(sorted(rng.sample(callers, k)))
        services.append(ServiceSpec(name, ports[i], sources=sources, image=f"synthetic/{name}:1"))
        callers.append(name)
    services.append(ServiceSpec("loadgen", None, image="synthetic/loadgen:1"))
    return AppModel(services=tuple(services), namespace=namespace, name="synthetic")


_LINE = re.compile(
    r"^- (?P<name>[a-z0-9-]+): (?:no listening port[^\n]*|"
    r"service port (?P<port>\d+) -> container port "
    r"(?P<cport>\d+)/TCP \((?P<pname>[a-z0-9-]+)\); may be reached from: (?P<who>.*))$",
    re.MULTILINE,
)


def parse_intended(text: str, namespace: str = "default") -> AppModel:
    """Rebuild the model from ``AppModel.describe`` output embedded in a prompt.

    This is how the reference solver learns the healthy application from text alone.

    Raises:
        ConfigError: No service lines found.
    """
    services = []
    for m in _LINE.finditer(text):
        if m["port"] is None:
            services.append(ServiceSpec(m["name"]))
            continue
        who = m["who"].strip()
        sources = (ANYONE,) if who == "any pod" else () if who == "nobody" else tuple(
            w.strip() for w in who.split(",")
        )
        services.append(
            ServiceSpec(m["name"], int(m["port"]), int(m["cport"]), m["pname"], sources))
    if not services:
        raise ConfigError("no intended-connectivity lines found in the text")
    return AppModel(services=tuple(services), namespace=namespace)


_T = TypeVar("_T")


def per_model(limit: int) -> Callable[[Callable[[AppModel], _T]], Callable[[AppModel], _T]]:
    """Remember what ``fn(model)`` gave for the last ``limit`` model objects.

    Keyed by identity (a model is not hashable, and equal models are rare): what is derived
    from a design (its rendered policies, its pools) is read many times per query and is not
    free to build. Callers treat the result as read-only.
    """

    def wrap(fn: Callable[[AppModel], _T]) -> Callable[[AppModel], _T]:
        memo: BoundedCache[int, tuple[AppModel, _T]] = BoundedCache(limit)

        def cached(model: AppModel) -> _T:
            found = memo.get(id(model))
            if found is None or found[0] is not model:
                found = memo.put(id(model), (model, fn(model)))
            return found[1]

        cached.__doc__ = fn.__doc__
        return cached

    return wrap
