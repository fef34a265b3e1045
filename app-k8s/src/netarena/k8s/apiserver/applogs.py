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
from dataclasses import dataclass

from netarena.k8s.dns import DNS_SERVICE_IP

__all__ = ["Call", "request_lines", "startup_lines", "system_lines", "PERIOD_S",
           "DEFAULT_PERIOD_S"]

PERIOD_S = {"frontend": 5.0, "loadgenerator": 20.0, "redis-cart": 60.0}
"""Seconds between two logged requests of a service (others: ``DEFAULT_PERIOD_S``)."""
DEFAULT_PERIOD_S = 8.0
"""Seconds between two logged requests of a service ``PERIOD_S`` does not name."""
_PRODUCTS = ("OLJCESPC7Z", "66VCHSJNUP", "1YMWWN1N4O", "L9ECAV7KIM", "2ZYFJ3GM2N",
             "0PUK6V6EV0", "LS4PSXUNUM", "9SIQT8TOJO", "6E92ZMYYFZ")
_PAGES = ("/", "/product/{p}", "/cart", "/product/{p}", "/", "/cart/checkout")
_SLOW = ("timeout", "dns")
"""Failures that take the caller's timeout to surface (a dropped SYN, an unanswered query)."""
_QUIET = ("productcatalogservice",)
"""Services that log nothing per request."""


@dataclass(frozen=True)
class Call:
    """One dependency of a service, as its address variable names it, and what a call does."""

    name: str
    """The callee's host as configured (``productcatalogservice``)."""
    port: int
    state: str
    """``open``/``http`` (answers), ``timeout``, ``refused`` or ``dns`` (lookup fails)."""
    ip: str | None = None
    """The address dialled (the Service IP), when the name resolved."""

    @property
    def ok(self) -> bool:
        """Whether the call goes through."""
        return self.state in ("open", "http")


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


def _go_error(call: Call, pod_ip: str, rng: random.Random) -> str:
    """What grpc-go returns for a failed call."""
    if call.state == "dns":
        return (f"rpc error: code = Unavailable desc = dns: A record lookup error: lookup "
                f"{call.name} on {DNS_SERVICE_IP}:53: read udp {pod_ip}:{rng.randint(32768, 60999)}"
                f"->{DNS_SERVICE_IP}:53: i/o timeout")
    if call.state == "refused":
        return ('rpc error: code = Unavailable desc = connection error: desc = "transport: Error '
                f'while dialing: dial tcp {call.ip}:{call.port}: connect: connection refused"')
    if rng.random() < 0.3:
        return "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    return ('rpc error: code = Unavailable desc = connection error: desc = "transport: Error '
            f'while dialing: dial tcp {call.ip}:{call.port}: i/o timeout"')


def _python_error(call: Call) -> str:
    if call.state == "dns":
        detail = (f"DNS resolution failed for {call.name}:{call.port}: C-ares status is not "
                  f"ARES_SUCCESS qtype=A name={call.name} is_balancer=0: Timeout while "
                  "contacting DNS servers")
    elif call.state == "refused":
        detail = (f"failed to connect to all addresses; last error: UNKNOWN: ipv4:{call.ip}:"
                  f"{call.port}: Failed to connect to remote host: Connection refused")
    else:
        detail = (f"failed to connect to all addresses; last error: UNKNOWN: ipv4:{call.ip}:"
                  f"{call.port}: Failed to connect to remote host: Timeout occurred: FD Shutdown")
    return ("Exception calling application: <_InactiveRpcError of RPC that terminated with:\n"
            f"\tstatus = StatusCode.UNAVAILABLE\n\tdetails = \"{detail}\"\n>")


def _redis_error(call: Call) -> str:
    if call.state == "dns":
        kind = "UnableToResolvePhysicalConnection"
    else:
        kind = "UnableToConnect" if call.state == "refused" else "ConnectTimeout"
    return ("Can't access cart storage. StackExchange.Redis.RedisConnectionException: It was not "
            f"possible to connect to the redis server(s). {kind} on {call.name}:{call.port}/"
            "Interactive, Initializing/NotStarted, last: NONE, origin: BeginConnectAsync, "
            "outstanding: 0, last-read: 0s ago, last-write: 0s ago, keep-alive: 180s, "
            "state: Connecting, mgr: 10 of 10 available, last-heartbeat: never, "
            "global: 0s ago, v: 2.6.122.38350")


_FRONTEND_STEPS = {
    "/": (("currencyservice", "could not retrieve currencies"),
          ("productcatalogservice", "could not retrieve products"),
          ("cartservice", "could not retrieve cart"),
          ("adservice", None)),
    "/product/{p}": (("productcatalogservice", "could not retrieve product"),
                     ("currencyservice", "could not retrieve currencies"),
                     ("cartservice", "could not retrieve cart"),
                     ("recommendationservice", "failed to get product recommendations"),
                     ("adservice", None)),
    "/cart": (("currencyservice", "could not retrieve currencies"),
              ("cartservice", "could not retrieve cart"),
              ("recommendationservice", "failed to get product recommendations"),
              ("shippingservice", "failed to get shipping quote")),
    "/cart/checkout": (("checkoutservice", "failed to complete the order"),),
}


def _at(ts: float, message: str, severity: str = "info", **fields: object
        ) -> tuple[float, str]:
    """A logrus line written at ``ts``."""
    return ts, _go(ts, message, severity, **fields)


Line = tuple[float, str]


def _frontend(ts: float, rng: random.Random, calls: dict[str, Call], pod_ip: str
              ) -> list[Line]:
    page = rng.choice(_PAGES)
    path = page.format(p=rng.choice(_PRODUCTS))
    method = "POST" if page == "/cart/checkout" else "GET"
    req = {"http.req.id": f"{rng.getrandbits(128):032x}"[:8] + "-" + f"{rng.getrandbits(64):x}",
           "http.req.method": method, "http.req.path": path,
           "session": f"{rng.getrandbits(128):032x}"}
    lines = [_at(ts, "request started", "debug", **req)]
    took = rng.randint(8, 60)
    for name, wrap in _FRONTEND_STEPS[page]:
        call = calls.get(name)
        if call is None or call.ok:
            continue
        error = _go_error(call, pod_ip, rng)
        waited = rng.randint(1000, 20000) if call.state in _SLOW else rng.randint(1, 30)
        if wrap is None:
            lines.append(_at(ts + waited / 1000, "failed to retrieve ads", "warning",
                             error=error, **req))
            took += waited
            continue
        if name == "checkoutservice":
            error = error.replace("rpc error: code = Unavailable", "rpc error: code = Internal", 1)
        took += waited
        lines.append(_at(ts + took / 1000 - 0.0002, "request error", "error",
                         error=f"{wrap}: {error}", **req))
        return lines + [_at(ts + took / 1000, "request complete", "debug", **{
            "http.resp.bytes": 2764, "http.resp.status": 500, "http.resp.took_ms": took}, **req)]
    if page == "/cart/checkout":
        lines.append(_at(ts + took / 1000 - 0.0002, "order placed", "info",
                         order=f"{rng.getrandbits(128):032x}", **req))
    return lines + [_at(ts + took / 1000, "request complete", "debug", **{
        "http.resp.bytes": rng.randint(7000, 12000), "http.resp.status": 200,
        "http.resp.took_ms": took}, **req)]


def _checkout(ts: float, rng: random.Random, calls: dict[str, Call], pod_ip: str
              ) -> list[Line]:
    user = f"{rng.getrandbits(128):032x}"
    lines = [_at(ts, f'[PlaceOrder] user_id="{user}" user_currency="USD"')]
    stages = (("cartservice", "failed to get user cart during checkout"),
              ("productcatalogservice", "failed to prepare order"),
              ("currencyservice", "failed to convert price"),
              ("shippingservice", "shipping quote failure"),
              ("paymentservice", "failed to charge card"),
              ("emailservice", None))
    now = ts
    for name, wrap in stages:
        call = calls.get(name)
        now += (rng.uniform(1, 20) if call is not None and call.state in _SLOW
                else rng.uniform(0.002, 0.02))
        if name == "emailservice":
            if call is not None and not call.ok:
                lines.append(_at(now, 'failed to send order confirmation to '
                                 f'"someone@example.com": {_go_error(call, pod_ip, rng)}',
                                 "warning"))
            else:
                lines.append(_at(now, 'order confirmation email sent to "someone@example.com"'))
            break
        if call is not None and not call.ok:
            lines.append(_at(now, f"[PlaceOrder] {wrap}: {_go_error(call, pod_ip, rng)}",
                             "error"))
            return lines
        if name == "paymentservice":
            lines.append(_at(now, "payment went through (transaction_id: "
                             f"{rng.getrandbits(64):016x})"))
    return lines


def _generic_go(ts: float, rng: random.Random, calls: dict[str, Call], pod_ip: str,
                app: str) -> list[Line]:
    lines = [_at(ts, "request served", "info", method=f"/{app}/Serve")]
    for call in calls.values():
        if not call.ok:
            waited = rng.uniform(1, 20) if call.state in _SLOW else 0.01
            lines.append(_at(ts + waited, f"call to {call.name}:{call.port} failed: "
                             f"{_go_error(call, pod_ip, rng)}", "error"))
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
    product = rng.choice(_PRODUCTS)
    if app == "frontend":
        return _frontend(ts, rng, calls, pod_ip)
    if app == "checkoutservice":
        return _checkout(ts, rng, calls, pod_ip)
    if app == "cartservice":
        user = f"{rng.getrandbits(128):032x}"
        redis = next(iter(calls.values()), None)
        lines = [(ts, f"GetCartAsync called with userId={user}")]
        if redis is not None and not redis.ok:  # StackExchange.Redis waits 5 s to connect
            lines.append((ts + (5.0 if redis.state in _SLOW else 0.01), _redis_error(redis)))
        return lines
    if app == "recommendationservice":
        lines = [(ts, _python(ts, app, f"[Recv ListRecommendations] product_ids=['{product}']"))]
        failed = [c for c in calls.values() if not c.ok][:1]
        for call in failed:  # gRPC gives up connecting after 20 s
            at = ts + (20.0 if call.state in _SLOW else 0.01)
            lines.append((at, _python(at, "grpc._server", _python_error(call), "ERROR")))
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
        texts = _locust(ts, pod, calls)
    elif app in _QUIET:
        texts = []
    else:
        return _generic_go(ts, rng, calls, pod_ip, app)
    return [(ts + i * 1e-4, text) for i, text in enumerate(texts)]


def _locust(ts: float, pod: str, calls: dict[str, Call]) -> list[str]:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts)) + f",{int(ts % 1 * 1000):03d}"
    bad = [c for c in calls.values() if not c.ok]
    if not bad:
        return [f"[{stamp}] {pod}/INFO/locust.runners: 10 users running, 0 failures"]
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
