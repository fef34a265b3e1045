"""What each Online Boutique service prints: start-up lines, requests, failed calls.

The formats are the real services' (``microservices-demo``): frontend and checkout are Go
with logrus JSON (``message``/``severity``/``timestamp``), currency and payment Node with
pino JSON (``time`` in ms), email and recommendation Python JSON loggers, ad Java log4j2
JSON, cart C# console lines, redis its own, the load generator locust's. A call to a
dependency prints the error the caller's gRPC stack gives for what the network did: a
dropped SYN (NetworkPolicy) is a dial timeout, a port nobody listens on a refused
connection, a blocked DNS query a failed lookup, each naming the callee's address.
A service of a synthetic application logs like the Go services.
"""

from __future__ import annotations

import json
import random
import time

from netarena.k8s.pods.boutique import (
    PAGES,
    PRODUCTS,
    Call,
    checkout_lines,
    frontend_lines,
    go_error,
    page_fails,
    python_error,
    redis_error,
)

__all__ = ["Call", "request_lines", "startup_lines", "system_lines", "PERIOD_S",
           "DEFAULT_PERIOD_S"]

PERIOD_S = {"frontend": 5.0, "loadgenerator": 20.0, "redis-cart": 60.0}
"""Seconds between two logged requests of a service (others: ``DEFAULT_PERIOD_S``)."""
DEFAULT_PERIOD_S = 8.0
"""Seconds between two logged requests of a service ``PERIOD_S`` does not name."""
_SLOW = ("timeout", "dns")
"""Failures that take the caller's timeout to surface (a dropped SYN, an unanswered query)."""
_QUIET = ("productcatalogservice",)
"""Services that log nothing per request."""


def _iso(ts: float, digits: int = 9) -> str:
    frac = f"{ts % 1:.9f}"[2:2 + digits]
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{frac}Z"


def _go(ts: float, message: str, severity: str = "info", **fields: object) -> str:
    """A logrus JSON line (fields sorted, as logrus writes them)."""
    entry = {**fields, "message": message, "severity": severity, "timestamp": _iso(ts)}
    return json.dumps(dict(sorted(entry.items())), separators=(",", ":"))


def _pino(ts: float, pod: str, app: str, message: str, severity: str = "info") -> str:
    return json.dumps({"severity": severity, "time": int(ts * 1000), "pid": 1, "hostname": pod,
                       "name": f"{app}-server", "message": message}, separators=(",", ":"))


def _python(ts: float, app: str, message: str, severity: str = "INFO") -> str:
    return json.dumps({"timestamp": _iso(ts, 6), "severity": severity,
                       "name": f"{app}-server", "message": message})


def _java(ts: float, message: str, level: str = "INFO") -> str:
    return json.dumps({"instant": {"epochSecond": int(ts), "nanoOfSecond": int(ts % 1 * 1e9)},
                       "thread": "grpc-default-executor-0", "level": level,
                       "loggerName": "hipstershop.AdService", "message": message,
                       "endOfBatch": False,
                       "loggerFqcn": "org.apache.logging.log4j.spi.AbstractLogger",
                       "threadId": 21, "threadPriority": 5}, separators=(",", ":"))


def _at(ts: float, message: str, severity: str = "info", **fields: object
        ) -> tuple[float, str]:
    """A logrus line written at ``ts``."""
    return ts, _go(ts, message, severity, **fields)


Line = tuple[float, str]


def _generic_go(ts: float, rng: random.Random, calls: dict[str, Call], pod_ip: str,
                app: str) -> list[Line]:
    lines = [_at(ts, "request served", "info", method=f"/{app}/Serve")]
    for call in calls.values():
        if not call.ok:
            waited = rng.uniform(1, 20) if call.state in _SLOW else 0.01
            lines.append(_at(ts + waited, f"call to {call.name}:{call.port} failed: "
                             f"{go_error(call, rng)}", "error"))
    return lines


def request_lines(app: str, pod: str, pod_ip: str, ts: float, rng: random.Random,
                  calls: dict[str, Call]) -> list[tuple[float, str]]:
    """The lines one request (or one tick) of ``app`` prints at ``ts``.

    Args:
        app: The pod's ``app`` label.
        pod: The pod's name (pino's ``hostname``).
        pod_ip: The pod's IP (the local address of a failed DNS query).
        ts: When the request arrived (epoch seconds).
        rng: Draws for this request (stable: seeded from the pod and the time slot).
        calls: The service's dependencies by host, and what calling each does now.
    """
    product = rng.choice(PRODUCTS)
    if app == "frontend":
        return frontend_lines(ts, rng, calls)
    if app == "checkoutservice":
        return checkout_lines(ts, rng, calls)
    if app == "cartservice":
        user = f"{rng.getrandbits(128):032x}"
        redis = next(iter(calls.values()), None)
        lines = [(ts, f"GetCartAsync called with userId={user}")]
        if redis is not None and not redis.ok:  # StackExchange.Redis waits 5 s to connect
            lines.append((ts + (5.0 if redis.state in _SLOW else 0.01), redis_error(redis)))
        return lines
    if app == "recommendationservice":
        lines = [(ts, _python(ts, app, f"[Recv ListRecommendations] product_ids=['{product}']"))]
        failed = [c for c in calls.values() if not c.ok][:1]
        for call in failed:  # gRPC gives up connecting after 20 s
            at = ts + (20.0 if call.state in _SLOW else 0.01)
            lines.append((at, _python(at, "grpc._server", "Exception calling application: "
                                      + python_error(call), "ERROR")))
        return lines
    if app == "emailservice":
        texts = [_python(ts, app, "A request to send order confirmation email to "
                         "someone@example.com has been received.")]
    elif app == "currencyservice":
        texts = [_pino(ts, pod, app, rng.choice(["Getting supported currencies...",
                                                 "conversion request successful"]))]
    elif app == "paymentservice":
        texts = [_pino(ts, pod, app, "Transaction processed: visa ending 0454     Amount: "
                       f"USD{rng.randint(10, 300)}.{rng.randint(0, 99):02d}")]
    elif app == "adservice":
        words = rng.choice(["clothing", "kitchen", "accessories", "footwear"])
        texts = [_java(ts, f"received ad request (context_words=[{words}])")]
    elif app == "shippingservice":
        texts = [_go(ts, "[GetQuote] received request"), _go(ts + 0.001,
                                                             "[GetQuote] completed request")]
    elif app == "redis-cart":
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1000):03d}"
        texts = [f"1:M {stamp} * 1 changes in 3600 seconds. Saving..."]
    elif app == "loadgenerator":
        texts = _locust(ts, pod, calls, rng)
    elif app in _QUIET:
        texts = []
    else:
        return _generic_go(ts, rng, calls, pod_ip, app)
    return [(ts + i * 1e-4, text) for i, text in enumerate(texts)]


def _locust(ts: float, pod: str, calls: dict[str, Call], rng: random.Random) -> list[str]:
    """Locust's status line: the pages the frontend answers with 500 count as failures."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + f",{int(ts % 1 * 1000):03d}"
    bad = [c for c in calls.values() if not c.ok]
    if not bad:
        behind = {c.name: c for call in calls.values() for c in call.behind}  # the frontend's
        failing = sum(w for method, page, w in PAGES if page_fails(method, page, behind))
        share = failing / sum(w for *_, w in PAGES)
        failures = sum(rng.random() < share for _ in range(40))
        return [f"[{stamp}] {pod}/INFO/locust.runners: 10 users running, {failures} failures"]
    call = bad[0]
    cause = (f"NameResolutionError(\"<urllib3.connection.HTTPConnection object>: Failed to "
             f"resolve '{call.name}' ([Errno -3] Temporary failure in name resolution)\")"
             if call.state == "dns" else
             "NewConnectionError('<urllib3.connection.HTTPConnection object>: Failed to "
             "establish a new connection: [Errno 111] Connection refused')"
             if call.state == "refused" else
             f"ConnectTimeoutError(<urllib3.connection.HTTPConnection object>, 'Connection to "
             f"{call.name} timed out. (connect timeout=None)')")
    return [f"[{stamp}] {pod}/ERROR/locust.user.task: HTTPConnectionPool(host='{call.name}', "
            f"port={call.port}): Max retries exceeded with url: / (Caused by {cause})"]


def startup_lines(app: str, pod: str, port: int | None, ts: float) -> list[tuple[float, str]]:
    """What ``app`` prints when its container starts at ``ts``."""
    ts += 0.4123  # the process is up a moment after the container starts
    if app == "redis-cart":
        stamp = time.strftime("%d %b %Y %H:%M:%S", time.gmtime(ts)) + ".000"
        texts = [f"1:C {stamp} # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo",
                 f"1:M {stamp} * Server initialized", f"1:M {stamp} * Ready to accept "
                 "connections tcp"]
    elif app == "loadgenerator":
        stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + ",000"
        texts = [f"[{stamp}] {pod}/INFO/locust.main: Starting Locust 2.32.4",
                 f"[{stamp}] {pod}/INFO/locust.runners: Ramping to 10 users at a rate of 1.00 "
                 "per second"]
    elif app in ("currencyservice", "paymentservice"):
        texts = [_pino(ts, pod, app, "Profiler disabled."),
                 _pino(ts, pod, app, f"Starting gRPC server on port {port}...")]
    elif app in ("emailservice", "recommendationservice"):
        texts = [_python(ts, app, "Profiler disabled."),
                 _python(ts, app, f"listening on port: {port}")]
    elif app == "adservice":
        texts = [_java(ts, f"Ad Service started, listening on {port}")]
    elif app == "cartservice":
        texts = ["Reading host address from REDIS_ADDR environment variable",
                 "info: Microsoft.Hosting.Lifetime[14]",
                 f"      Now listening on: http://0.0.0.0:{port}"]
    elif app == "frontend":
        texts = [_go(ts, "Profiling disabled."), _go(ts, f"starting server on :{port}")]
    else:
        texts = [_go(ts, "Profiling disabled."), _go(ts, f"starting grpc server at :{port}")]
    return [(ts + i * 0.01, text) for i, text in enumerate(texts)]


def _klog(ts: float, where: str, message: str) -> str:
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}"
    return f"I{stamp}       1 {where}] {message}"


_SYSTEM = {
    "kube-proxy": (("server_linux.go:66", '"Using iptables proxy"'),
                   ("server.go:516", '"Version info" version="v1.33.1"'),
                   ("config.go:199", '"Starting service config controller"'),
                   ("shared_informer.go:350", '"Caches are synced" controller="service config"')),
    "kindnet": (("main.go:109", '"connected to apiserver" host="https://10.96.0.1:443"'),
                ("controller.go:1206", '"Starting network policy controller"')),
    "kube-apiserver": (("options.go:249", "external host was not specified, using 172.18.0.2"),
                       ("server.go:175", '"Version info" version="v1.33.1"'),
                       ("secure_serving.go:211", "Serving securely on [::]:6443")),
    "kube-controller-manager": (("serving.go:386", "Generated self-signed cert in-memory"),
                                ("controllermanager.go:197", '"Starting" version="v1.33.1"'),
                                ("leaderelection.go:271", "successfully acquired lease "
                                 "kube-system/kube-controller-manager")),
    "kube-scheduler": (("serving.go:386", "Generated self-signed cert in-memory"),
                       ("server.go:166", '"Starting Kubernetes Scheduler" version="v1.33.1"'),
                       ("leaderelection.go:271", "successfully acquired lease "
                        "kube-system/kube-scheduler")),
}


def system_lines(component: str, ts: float) -> list[tuple[float, str]] | None:
    """Start-up lines of a cluster component (kube-proxy, kindnet, etcd...), else None."""
    ts += 0.4123
    if component in _SYSTEM:
        texts = [_klog(ts + i * 0.0131, where, msg)
                 for i, (where, msg) in enumerate(_SYSTEM[component])]
    elif component == "etcd":
        stamp = _iso(ts, 6)
        texts = [json.dumps({"level": "info", "ts": stamp, "caller": "embed/etcd.go:140",
                             "msg": "configuring peer listeners",
                             "listen-peer-urls": ["https://172.18.0.2:2380"]},
                            separators=(",", ":")),
                 json.dumps({"level": "info", "ts": stamp, "caller": "etcdserver/server.go:2145",
                             "msg": "published local member to cluster through raft"},
                            separators=(",", ":"))]
    elif component == "local-path-provisioner":
        texts = ["time=\"" + _iso(ts, 0).replace(".Z", "Z") + '" level=info msg="Starting '
                 'provisioner controller"']
    elif component == "prometheus":
        texts = [f"ts={_iso(ts, 3)} caller=main.go:1150 level=info msg=\"Server is ready to "
                 "receive web requests.\""]
    elif component == "grafana":
        texts = [f"logger=http.server t={_iso(ts, 3)} level=info msg=\"HTTP Server Listen\" "
                 "address=[::]:3000 protocol=http"]
    else:
        return None
    return [(ts + i * 0.0131, text) for i, text in enumerate(texts)]
