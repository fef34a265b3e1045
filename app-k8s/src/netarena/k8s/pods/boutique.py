"""Online Boutique v0.10.6's request paths: what a call returns, and what each caller logs.

Read from ``microservices-demo`` v0.10.6 (``src/frontend/handlers.go``, ``rpc.go``,
``checkoutservice/main.go``, ``recommendation_server.py``, ``RedisCartStore.cs``):

* a call's error is grpc-go's for what the network did (a dropped SYN is a dial timeout,
  a refused port ``connection refused``, a blocked DNS query a failed lookup), or the
  callee's own failure passed on: recommendationservice answers ``Unknown`` with "Exception
  calling application: ..." when it cannot list products; cartservice answers
  ``FailedPrecondition`` "Can't access cart storage. ..." when redis is out of reach;
  checkoutservice answers ``Internal`` (``Unavailable`` for shipping) with the stage that
  failed ("cart failure: ...", "failed to prepare order: ...", "failed to charge card: ...")
  and does not log it; a failed confirmation email is only a warning in its log;
* the frontend serves 500 "request error" when currencies, products, the cart, a
  conversion, the shipping quote or the order fail, and only warns ("failed to get product
  recommendations", "failed to retrieve ads": 100 ms deadline) and serves 200 when
  recommendations or ads fail; the home page also prints "env platform is either empty or
  invalid" (``ENV_PLATFORM`` is not set in the manifests).
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass

from netarena.k8s.apiserver.coredns import DNS_SERVICE_IP

__all__ = ["Call", "go_error", "python_error", "redis_error", "call_error", "frontend_lines",
           "checkout_lines", "page_fails", "PAGES", "PRODUCTS"]

PRODUCTS = ("0PUK6V6EV0", "1YMWWN1N4O", "2ZYFJ3GM2N", "66VCHSJNUP", "6E92ZMYYFZ", "9SIQT8TOJO",
            "L9ECAV7KIM", "LS4PSXUNUM", "OLJCESPC7Z")
"""The catalog's product ids (the load generator's list)."""
PAGES = (("GET", "/", 3), ("POST", "/setCurrency", 2), ("GET", "/product/{p}", 13),
         ("POST", "/cart", 3), ("GET", "/cart", 6), ("POST", "/cart/checkout", 1))
"""The load generator's requests with their relative rates (its task weights, redirects
followed: a set currency lands on the home page, an added item on the cart)."""
_CURRENCIES = ("EUR", "USD", "JPY", "CAD", "GBP", "TRY")
_SLOW = ("timeout", "dns")


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
    origin: str = "10.244.0.1"
    """The caller's pod IP (the local address of its DNS queries)."""
    behind: tuple[Call, ...] = ()
    """The callee's own calls (what it does on behalf of this one)."""

    @property
    def ok(self) -> bool:
        """Whether the connection goes through."""
        return self.state in ("open", "http")

    @property
    def service(self) -> str:
        """The callee's service name."""
        return self.name.split(".")[0]


def go_error(call: Call, rng: random.Random) -> str:
    """What grpc-go returns for a call the network stops."""
    if call.state == "dns":
        return (f"rpc error: code = Unavailable desc = dns: A record lookup error: lookup "
                f"{call.name} on {DNS_SERVICE_IP}:53: read udp {call.origin}:"
                f"{rng.randint(32768, 60999)}->{DNS_SERVICE_IP}:53: i/o timeout")
    if call.state == "refused":
        return ('rpc error: code = Unavailable desc = connection error: desc = "transport: Error '
                f'while dialing: dial tcp {call.ip}:{call.port}: connect: connection refused"')
    return ('rpc error: code = Unavailable desc = connection error: desc = "transport: Error '
            f'while dialing: dial tcp {call.ip}:{call.port}: i/o timeout"')


def python_error(call: Call) -> str:
    """The ``_InactiveRpcError`` a Python gRPC client raises for a call the network stops."""
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
    return ("<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE"
            f"\n\tdetails = \"{detail}\"\n\tdebug_error_string = \"UNKNOWN:Error received from "
            f"peer  {{grpc_status:14, grpc_message:\"{detail}\"}}\"\n>")


def redis_error(call: Call) -> str:
    """StackExchange.Redis's exception for a redis the network stops."""
    kind = ("UnableToResolvePhysicalConnection" if call.state == "dns" else
            "UnableToConnect" if call.state == "refused" else "ConnectTimeout")
    return ("StackExchange.Redis.RedisConnectionException: It was not possible to connect to "
            f"the redis server(s). {kind} on {call.name}:{call.port}/Interactive, "
            "Initializing/NotStarted, last: NONE, origin: BeginConnectAsync, outstanding: 0, "
            "last-read: 0s ago, last-write: 0s ago, keep-alive: 180s, state: Connecting, mgr: "
            "10 of 10 available, last-heartbeat: never, global: 0s ago, v: 2.6.122.38350")


def _failed(call: Call, service: str) -> Call | None:
    return next((c for c in call.behind if c.service == service and call_error(
        c, random.Random(0)) is not None), None)


def _checkout_failure(call: Call, rng: random.Random) -> str | None:
    """The status checkoutservice's PlaceOrder ends with, by the first stage that fails."""
    product = rng.choice(PRODUCTS)
    stages = (
        ("cartservice", "Internal", "cart failure: failed to get user cart during checkout: "),
        ("productcatalogservice", "Internal", f'failed to prepare order: failed to get product '
                                              f'#"{product}"'),
        ("currencyservice", "Internal", f'failed to prepare order: failed to convert price of '
                                        f'"{product}" to USD'),
        ("shippingservice", "Internal", "shipping quote failure: failed to get shipping "
                                        "quote: "),
        ("paymentservice", "Internal", "failed to charge card: could not charge the card: "),
    )
    for service, code, text in stages:
        dep = _failed(call, service)
        if dep is None:
            continue
        inner = call_error(dep, rng) or ""
        return f"rpc error: code = {code} desc = {text}{inner if text.endswith(': ') else ''}"
    return None


def call_error(call: Call, rng: random.Random) -> str | None:
    """What a Go caller's stub returns for ``call`` (``None``: it succeeds)."""
    if not call.ok:
        return go_error(call, rng)
    if call.service == "recommendationservice":
        dep = _failed(call, "productcatalogservice")
        if dep is not None:
            return ("rpc error: code = Unknown desc = Exception calling application: "
                    + python_error(dep))
    if call.service == "cartservice":
        dep = _failed(call, "redis-cart")
        if dep is not None:
            return ("rpc error: code = FailedPrecondition desc = Can't access cart storage. "
                    + redis_error(dep))
    if call.service == "checkoutservice":
        return _checkout_failure(call, rng)
    return None


def _go(ts: float, message: str, severity: str = "info", **fields: object) -> tuple[float, str]:
    """A logrus JSON line written at ``ts`` (fields sorted, as logrus writes them)."""
    frac = f"{ts % 1:.9f}"[2:]
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{frac}Z"
    entry = {**fields, "message": message, "severity": severity, "timestamp": stamp}
    return ts, json.dumps(dict(sorted(entry.items())), separators=(",", ":"))


def _steps(method: str, page: str, product: str) -> list[tuple[str, str | None, str | None]]:
    """``(service, wrap or None, warning or None)`` a handler calls, in order."""
    cur = ("currencyservice", "could not retrieve currencies", None)
    cart = ("cartservice", "could not retrieve cart", None)
    recs = ("recommendationservice", None, "failed to get product recommendations")
    ad = ("adservice", None, "failed to retrieve ads")
    if page == "/":
        return [cur, ("productcatalogservice", "could not retrieve products", None), cart,
                ("currencyservice", f"failed to do currency conversion for product {product}",
                 None), ad]
    if page.startswith("/product/"):
        return [("productcatalogservice", "could not retrieve product", None), cur, cart,
                ("currencyservice", "failed to convert currency", None), recs, ad]
    if method == "POST" and page == "/cart":
        return [("productcatalogservice", "could not retrieve product", None),
                ("cartservice", "failed to add to cart", None)]
    if page == "/cart":
        return [cur, cart, recs, ("shippingservice", "failed to get shipping quote", None),
                ("productcatalogservice", f"could not retrieve product #{product}", None)]
    if page == "/cart/checkout":
        return [("checkoutservice", "failed to complete the order", None), cur]
    return []


def page_fails(method: str, page: str, calls: dict[str, Call]) -> bool:
    """Whether the frontend answers this request with an error (500)."""
    by = {c.service: c for c in calls.values()}
    return any(wrap is not None and service in by and call_error(by[service],
                                                                 random.Random(0)) is not None
               for service, wrap, _ in _steps(method, page, PRODUCTS[0]))


def frontend_lines(ts: float, rng: random.Random, calls: dict[str, Call]
                   ) -> list[tuple[float, str]]:
    """What the frontend logs for one request of the load generator at ``ts``."""
    method, page, _ = rng.choices(PAGES, [w for *_, w in PAGES])[0]
    product = rng.choice(PRODUCTS)
    path = page.format(p=product)
    req = {"http.req.id": f"{rng.getrandbits(128):032x}", "http.req.method": method,
           "http.req.path": path, "session": f"{rng.getrandbits(128):032x}"}
    currency = rng.choice(_CURRENCIES)
    lines = [_go(ts, "request started", "debug", **req)]
    cart: dict[str, object] = ({} if method == "GET"
                               else {"product": product, "quantity": rng.randint(1, 10)})
    first: dict[str, tuple[str, str, dict[str, object]]] = {
        "/": ("home", "info", {"currency": currency}),
        "/setCurrency": ("setting currency", "debug", {"curr.new": currency, "curr.old": "USD"}),
        "/cart/checkout": ("placing order", "debug", {}),
        "/cart": ("view user cart" if method == "GET" else "adding to cart", "debug", cart)}
    message, level, fields = first.get(page, ("serving product page", "debug",
                                              {"currency": currency, "id": product}))
    lines.append(_go(ts + 1e-4, message, level, **fields, **req))
    took = rng.uniform(5, 40)
    by = {c.service: c for c in calls.values()}
    for service, wrap, warning in _steps(method, page, product):
        call = by.get(service)
        if call is None:
            continue
        error = call_error(call, rng)
        took += rng.uniform(1000, 20000) if call.state in _SLOW else rng.uniform(1, 15)
        if error is None:
            if service == "checkoutservice":
                lines.append(_go(ts + took / 1000, "order placed", "info",
                                 order=f"{rng.getrandbits(128):032x}", **req))
            continue
        if service == "adservice":
            error = ("failed to get ads: rpc error: code = DeadlineExceeded desc = context "
                     "deadline exceeded" if call.state in _SLOW else f"failed to get ads: {error}")
        if wrap is None:
            lines.append(_go(ts + took / 1000, str(warning), "warning", error=error, **req))
            continue
        lines.append(_go(ts + took / 1000, "request error", "error",
                         error=f"{wrap}: {error}", **req))
        return lines + [_go(ts + took / 1000 + 2e-4, "request complete", "debug", **{
            "http.resp.bytes": 2764, "http.resp.status": 500,
            "http.resp.took_ms": int(took)}, **req)]
    if page == "/":
        lines.append((ts + took / 1000, "env platform is either empty or invalid"))
    status = 302 if page == "/setCurrency" or (method == "POST" and page == "/cart") else 200
    return lines + [_go(ts + took / 1000 + 2e-4, "request complete", "debug", **{
        "http.resp.bytes": 0 if status == 302 else rng.randint(7000, 12000),
        "http.resp.status": status, "http.resp.took_ms": int(took)}, **req)]


def checkout_lines(ts: float, rng: random.Random, calls: dict[str, Call]
                   ) -> list[tuple[float, str]]:
    """What checkoutservice logs for one PlaceOrder: its failures go back to the caller."""
    user = f"{rng.getrandbits(128):032x}"
    lines = [_go(ts, f'[PlaceOrder] user_id="{user}" user_currency="USD"')]
    probe = Call("checkoutservice", 5050, "open", behind=tuple(calls.values()))
    if _checkout_failure(probe, rng) is not None:
        return lines
    by = {c.service: c for c in calls.values()}
    now = ts + rng.uniform(0.02, 0.08)
    lines.append(_go(now, f"payment went through (transaction_id: "
                          f"{rng.getrandbits(128):032x})"))
    email = by.get("emailservice")
    error = call_error(email, rng) if email is not None else None
    now += rng.uniform(1, 20) if email is not None and email.state in _SLOW else 0.01
    lines.append(_go(now, 'failed to send order confirmation to "someone@example.com": '
                          f"{error}", "warning") if error else
                 _go(now, 'order confirmation email sent to "someone@example.com"'))
    return lines
