"""The frontend and the load generator log each failure as Online Boutique v0.10.6 does.

``handlers.go``: recommendations and ads are optional (a warning, the page still 200);
currencies, products, the cart, shipping and checkout are not (500 "request error"). A
callee whose own dependency fails answers with that failure (``recommendation_server.py``
raises "Exception calling application"), and the load generator counts the 500s.
"""

from __future__ import annotations

import json
import random

from netarena.k8s.pods.applogs import request_lines
from netarena.k8s.pods.boutique import PAGES, Call, frontend_lines, page_fails

_PORTS = {"adservice": 9555, "cartservice": 7070, "checkoutservice": 5050,
          "currencyservice": 7000, "productcatalogservice": 3550,
          "recommendationservice": 8080, "shippingservice": 50051}


def _calls(**states: str | Call) -> dict[str, Call]:
    out = {}
    for name, port in _PORTS.items():
        given = states.get(name, "open")
        out[name] = given if isinstance(given, Call) else Call(
            name, port, given, f"10.96.0.{port % 200}", "10.244.0.7")
    return out


def _entries(calls: dict[str, Call], page: str, n: int = 80) -> list[dict[str, object]]:
    """Log entries of the frontend's requests for ``page`` (over many draws)."""
    out = []
    for k in range(n * 40):
        for _, line in frontend_lines(1_800_000_000.0 + k, random.Random(k), calls):
            if line.startswith("{"):
                entry = json.loads(line)
                if str(entry.get("http.req.path", "")).startswith(page):
                    out.append(entry)
        if len(out) > n:
            break
    return out


def _statuses(entries: list[dict[str, object]]) -> set[object]:
    return {e["http.resp.status"] for e in entries if e["message"] == "request complete"}


def test_unreachable_recommendations_are_a_warning_and_the_page_is_served() -> None:
    entries = _entries(_calls(recommendationservice="timeout"), "/product/")
    warnings = [e for e in entries if e["message"] == "failed to get product recommendations"]
    assert warnings and all(e["severity"] == "warning" for e in warnings)
    assert "10.96.0.80:8080: i/o timeout" in str(warnings[0]["error"])
    assert _statuses(entries) == {200}
    assert not [e for e in entries if e["message"] == "request error"]


def test_failing_recommendations_pass_their_own_error_on() -> None:
    catalog = Call("productcatalogservice", 3550, "timeout", "10.96.0.150", "10.244.0.9")
    recs = Call("recommendationservice", 8080, "open", "10.96.0.80", "10.244.0.7", (catalog,))
    entries = _entries(_calls(recommendationservice=recs), "/product/")
    warnings = [e for e in entries if e["message"] == "failed to get product recommendations"]
    assert warnings and "Exception calling application" in str(warnings[0]["error"])
    assert "10.96.0.150:3550" in str(warnings[0]["error"]) and _statuses(entries) == {200}


def test_unreachable_currencies_fail_the_page() -> None:
    entries = _entries(_calls(currencyservice="refused"), "/product/")
    errors = [e for e in entries if e["message"] == "request error"]
    assert errors and all(e["severity"] == "error" for e in errors)
    assert "could not retrieve currencies" in str(errors[0]["error"])
    assert "connect: connection refused" in str(errors[0]["error"])
    assert _statuses(entries) == {500}


def test_the_load_generator_counts_failed_pages() -> None:
    frontend = {"frontend": Call("frontend", 80, "open", "10.96.0.2", "10.244.0.3")}
    healthy = request_lines("loadgenerator", "lg-0", "10.244.0.3", 1.8e9, random.Random(1),
                            frontend)
    assert healthy[0][1].endswith("10 users running, 0 failures")
    broken = _calls(currencyservice="timeout")
    assert sum(w for m, p, w in PAGES if page_fails(m, p, broken)) > 0
    cart = Call("frontend", 80, "open", "10.96.0.2", "10.244.0.3", tuple(broken.values()))
    failing = request_lines("loadgenerator", "lg-0", "10.244.0.3", 1.8e9, random.Random(1),
                            {"frontend": cart})
    assert not failing[0][1].endswith(" 0 failures")
