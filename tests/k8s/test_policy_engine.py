# ruff: noqa: E501 - one case per line reads as a table
"""The NetworkPolicy engine against the Kubernetes semantics, one case per rule of the spec.

World: namespaces ``default`` (team=a), ``prod`` (env=prod), ``dev`` (env=dev); pods
``a``/``b`` in default, ``c``/``e`` in prod, ``d`` in dev. Each case installs some policies
and asks whether one connection is allowed.
"""

from __future__ import annotations

from typing import Any

import pytest

from netarena.k8s.policy import PodView, PolicyEngine, policy_types, selector_matches


def _pod(name: str, ns: str, labels: dict[str, str], ip: str,
         ports: list[tuple[str, int, str | None]]) -> dict[str, Any]:
    cports = []
    for pname, num, proto in ports:
        p: dict[str, Any] = {"containerPort": num}
        if pname:
            p["name"] = pname
        if proto:
            p["protocol"] = proto
        cports.append(p)
    return {"metadata": {"name": name, "namespace": ns, "labels": labels},
            "spec": {"containers": [{"name": "c", "ports": cports}]},
            "status": {"podIP": ip, "podIPs": [{"ip": ip}]}}


PODS = [
    _pod("a", "default", {"app": "a", "role": "web"}, "10.0.0.10",
         [("http", 8080, None), ("dns", 53, "UDP")]),
    _pod("b", "default", {"app": "b"}, "10.0.0.20",
         [("grpc", 9000, "TCP"), ("", 9100, None), ("sig", 7777, "SCTP")]),
    _pod("c", "prod", {"app": "c", "role": "web"}, "10.1.0.5", [("http", 8081, None)]),
    _pod("e", "prod", {"app": "e"}, "10.1.0.6", [("http", 8080, None)]),
    _pod("d", "dev", {"app": "d"}, "10.2.0.7", [("http", 8080, None)]),
]
NAMESPACES = [
    {"metadata": {"name": "default", "labels": {"team": "a"}}},
    {"metadata": {"name": "prod", "labels": {"env": "prod"}}},
    {"metadata": {"name": "dev", "labels": {"env": "dev"}}},
]
NS_OF = {"a": "default", "b": "default", "c": "prod", "e": "prod", "d": "dev"}


def pol(spec: dict[str, Any], ns: str = "default", name: str | None = None) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name or f"p{id(spec)}", "namespace": ns}, "spec": spec}


def sel(**labels: str) -> dict[str, Any]:
    return {"matchLabels": labels}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return {"matchExpressions": [e]}


def ingress_to_b(*peers: dict[str, Any], ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"from": list(peers)}
    if ports is not None:
        rule["ports"] = ports
    return pol({"podSelector": sel(app="b"), "policyTypes": ["Ingress"], "ingress": [rule]})


def egress_from_a(*rules: dict[str, Any]) -> dict[str, Any]:
    return pol({"podSelector": sel(app="a"), "policyTypes": ["Egress"], "egress": list(rules)})


ALL_NS = {"namespaceSelector": {}}
DENY_ALL = pol({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
ALLOW_ALL_EGRESS = pol({"podSelector": {}, "policyTypes": ["Egress"], "egress": [{}]})

# (id, policies, src, dst, port, protocol, expected)
CASES: list[tuple[str, list[dict[str, Any]], str, str, int, str, bool]] = [
    ("no-policies-allow", [], "a", "b", 9000, "TCP", True),
    ("policy-selecting-other-pod", [pol({"podSelector": sel(app="zzz")})], "a", "b", 9000, "TCP", True),
    ("deny-all-ingress", [pol({"podSelector": {}})], "a", "b", 9000, "TCP", False),
    ("deny-all-other-namespace", [pol({"podSelector": {}}, ns="prod")], "a", "b", 9000, "TCP", True),
    ("deny-all-both-directions", [DENY_ALL], "a", "b", 9000, "TCP", False),
    ("types-default-egress-when-rules", [pol({"podSelector": sel(app="a"), "egress": [
        {"to": [{"podSelector": sel(app="zzz")}]}]})], "a", "b", 9000, "TCP", False),
    ("types-default-ingress-only", [pol({"podSelector": sel(app="a")})], "a", "b", 9000, "TCP", True),
    ("types-default-empty-egress-list-is-ingress-only",
     [pol({"podSelector": sel(app="a"), "egress": []})], "a", "b", 9000, "TCP", True),
    ("egress-only-policy-leaves-ingress-open",
     [pol({"podSelector": sel(app="b"), "policyTypes": ["Egress"]})], "a", "b", 9000, "TCP", True),
    ("empty-podselector-peer-same-ns", [ingress_to_b({"podSelector": {}})], "a", "b", 9000, "TCP", True),
    ("empty-podselector-peer-not-other-ns", [ingress_to_b({"podSelector": {}})], "c", "b", 9000, "TCP", False),
    ("empty-namespaceselector-all-ns", [ingress_to_b(ALL_NS)], "d", "b", 9000, "TCP", True),
    ("namespaceselector-match", [ingress_to_b({"namespaceSelector": sel(env="prod")})], "c", "b", 9000, "TCP", True),
    ("namespaceselector-nomatch", [ingress_to_b({"namespaceSelector": sel(env="prod")})], "d", "b", 9000, "TCP", False),
    ("namespaceselector-name-label", [ingress_to_b(
        {"namespaceSelector": sel(**{"kubernetes.io/metadata.name": "dev"})})], "d", "b", 9000, "TCP", True),
    ("namespaceselector-excludes-own-ns", [ingress_to_b({"namespaceSelector": sel(env="prod")})], "a", "b", 9000, "TCP", False),
    ("and-peer-both-match", [ingress_to_b(
        {"namespaceSelector": sel(env="prod"), "podSelector": sel(role="web")})], "c", "b", 9000, "TCP", True),
    ("and-peer-pod-fails", [ingress_to_b(
        {"namespaceSelector": sel(env="prod"), "podSelector": sel(role="web")})], "e", "b", 9000, "TCP", False),
    ("and-peer-ns-fails", [ingress_to_b(
        {"namespaceSelector": sel(env="prod"), "podSelector": sel(role="web")})], "a", "b", 9000, "TCP", False),
    ("or-peers-ns-branch", [ingress_to_b(
        {"namespaceSelector": sel(env="prod")}, {"podSelector": sel(role="web")})], "e", "b", 9000, "TCP", True),
    ("or-peers-pod-branch", [ingress_to_b(
        {"namespaceSelector": sel(env="prod")}, {"podSelector": sel(role="web")})], "a", "b", 9000, "TCP", True),
    ("or-peers-neither", [ingress_to_b(
        {"namespaceSelector": sel(env="prod")}, {"podSelector": sel(role="web")})], "d", "b", 9000, "TCP", False),
    ("podselector-peer-policy-ns-only", [ingress_to_b({"podSelector": sel(role="web")})], "c", "b", 9000, "TCP", False),
    ("expr-in-match", [ingress_to_b({**ALL_NS, "podSelector": expr("app", "In", "a", "c")})], "c", "b", 9000, "TCP", True),
    ("expr-in-nomatch", [ingress_to_b({**ALL_NS, "podSelector": expr("app", "In", "a", "c")})], "d", "b", 9000, "TCP", False),
    ("expr-notin-match", [ingress_to_b({**ALL_NS, "podSelector": expr("app", "NotIn", "a")})], "c", "b", 9000, "TCP", True),
    ("expr-notin-nomatch", [ingress_to_b({**ALL_NS, "podSelector": expr("app", "NotIn", "a")})], "a", "b", 9000, "TCP", False),
    ("expr-notin-missing-key-matches", [ingress_to_b({**ALL_NS, "podSelector": expr("role", "NotIn", "web")})], "d", "b", 9000, "TCP", True),
    ("expr-exists-match", [ingress_to_b({**ALL_NS, "podSelector": expr("role", "Exists")})], "c", "b", 9000, "TCP", True),
    ("expr-exists-nomatch", [ingress_to_b({**ALL_NS, "podSelector": expr("role", "Exists")})], "d", "b", 9000, "TCP", False),
    ("expr-doesnotexist-match", [ingress_to_b({**ALL_NS, "podSelector": expr("role", "DoesNotExist")})], "d", "b", 9000, "TCP", True),
    ("expr-doesnotexist-nomatch", [ingress_to_b({**ALL_NS, "podSelector": expr("role", "DoesNotExist")})], "a", "b", 9000, "TCP", False),
    ("expr-and-matchlabels", [ingress_to_b({**ALL_NS, "podSelector": {
        "matchLabels": {"role": "web"}, **expr("app", "NotIn", "c")}})], "c", "b", 9000, "TCP", False),
    ("expr-unknown-operator", [ingress_to_b({**ALL_NS, "podSelector": expr("app", "Like", "a")})], "a", "b", 9000, "TCP", False),
    ("expr-on-namespaceselector", [ingress_to_b({"namespaceSelector": expr("env", "In", "dev")})], "d", "b", 9000, "TCP", True),
    ("port-number-match", [ingress_to_b(ALL_NS, ports=[{"port": 9000}])], "a", "b", 9000, "TCP", True),
    ("port-number-nomatch", [ingress_to_b(ALL_NS, ports=[{"port": 9000}])], "a", "b", 9001, "TCP", False),
    ("protocol-defaults-tcp", [ingress_to_b(ALL_NS, ports=[{"port": 9000}])], "a", "b", 9000, "UDP", False),
    ("protocol-udp-match", [ingress_to_b(ALL_NS, ports=[{"port": 53, "protocol": "UDP"}])], "a", "b", 53, "UDP", True),
    ("protocol-udp-rule-tcp-probe", [ingress_to_b(ALL_NS, ports=[{"port": 53, "protocol": "UDP"}])], "a", "b", 53, "TCP", False),
    ("protocol-sctp", [ingress_to_b(ALL_NS, ports=[{"port": 7777, "protocol": "SCTP"}])], "a", "b", 7777, "SCTP", True),
    ("protocol-only-entry-any-port", [ingress_to_b(ALL_NS, ports=[{"protocol": "UDP"}])], "a", "b", 4242, "UDP", True),
    ("protocol-only-entry-wrong-proto", [ingress_to_b(ALL_NS, ports=[{"protocol": "UDP"}])], "a", "b", 4242, "TCP", False),
    ("endport-inside", [ingress_to_b(ALL_NS, ports=[{"port": 9000, "endPort": 9100}])], "a", "b", 9050, "TCP", True),
    ("endport-inclusive-top", [ingress_to_b(ALL_NS, ports=[{"port": 9000, "endPort": 9100}])], "a", "b", 9100, "TCP", True),
    ("endport-above", [ingress_to_b(ALL_NS, ports=[{"port": 9000, "endPort": 9100}])], "a", "b", 9101, "TCP", False),
    ("endport-below", [ingress_to_b(ALL_NS, ports=[{"port": 9000, "endPort": 9100}])], "a", "b", 8999, "TCP", False),
    ("named-port-match", [ingress_to_b(ALL_NS, ports=[{"port": "grpc"}])], "a", "b", 9000, "TCP", True),
    ("named-port-other-number", [ingress_to_b(ALL_NS, ports=[{"port": "grpc"}])], "a", "b", 9100, "TCP", False),
    ("named-port-resolved-on-destination", [ingress_to_b(ALL_NS, ports=[{"port": "http"}])], "a", "b", 8080, "TCP", False),
    ("named-port-protocol-mismatch", [ingress_to_b(ALL_NS, ports=[{"port": "sig"}])], "a", "b", 7777, "SCTP", False),
    ("named-port-protocol-match", [ingress_to_b(ALL_NS, ports=[{"port": "sig", "protocol": "SCTP"}])], "a", "b", 7777, "SCTP", True),
    ("numeric-string-port", [ingress_to_b(ALL_NS, ports=[{"port": "9000"}])], "a", "b", 9000, "TCP", True),
    ("several-port-entries", [ingress_to_b(ALL_NS, ports=[{"port": 80}, {"port": 9000}])], "a", "b", 9000, "TCP", True),
    ("ipblock-match", [ingress_to_b({"ipBlock": {"cidr": "10.0.0.0/24"}})], "a", "b", 9000, "TCP", True),
    ("ipblock-nomatch", [ingress_to_b({"ipBlock": {"cidr": "10.0.0.0/24"}})], "c", "b", 9000, "TCP", False),
    ("ipblock-except-excludes", [ingress_to_b({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/28"]}})], "a", "b", 9000, "TCP", False),
    ("ipblock-except-keeps-rest", [ingress_to_b({"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.0.0.0/28"]}})], "c", "b", 9000, "TCP", True),
    ("egress-ipblock-destination", [egress_from_a({"to": [{"ipBlock": {"cidr": "10.0.0.16/28"}}]})], "a", "b", 9000, "TCP", True),
    ("egress-ipblock-destination-miss", [egress_from_a({"to": [{"ipBlock": {"cidr": "10.0.0.16/28"}}]})], "a", "c", 8081, "TCP", False),
    ("egress-named-port-on-destination", [egress_from_a({"ports": [{"port": "grpc"}]})], "a", "b", 9000, "TCP", True),
    ("egress-named-port-missing-on-destination", [egress_from_a({"ports": [{"port": "grpc"}]})], "a", "c", 8081, "TCP", False),
    ("egress-and-peer", [egress_from_a({"to": [{"namespaceSelector": sel(env="prod"), "podSelector": sel(role="web")}]})], "a", "c", 8081, "TCP", True),
    ("egress-and-peer-miss", [egress_from_a({"to": [{"namespaceSelector": sel(env="prod"), "podSelector": sel(role="web")}]})], "a", "e", 8080, "TCP", False),
    ("egress-empty-rules-deny", [egress_from_a()], "a", "b", 9000, "TCP", False),
    ("egress-allowed-ingress-denied", [egress_from_a({}), ingress_to_b({"podSelector": sel(app="zzz")})], "a", "b", 9000, "TCP", False),
    ("ingress-allowed-egress-denied", [egress_from_a(), ingress_to_b({"podSelector": sel(app="a")})], "a", "b", 9000, "TCP", False),
    ("both-directions-allowed", [DENY_ALL, egress_from_a({"to": [{"podSelector": sel(app="b")}]}),
                                 ingress_to_b({"podSelector": sel(app="a")})], "a", "b", 9000, "TCP", True),
    ("deny-all-plus-allow-ingress-needs-egress", [DENY_ALL, ingress_to_b({"podSelector": sel(app="a")})], "a", "b", 9000, "TCP", False),
    ("deny-all-plus-allow-both", [DENY_ALL, ALLOW_ALL_EGRESS, ingress_to_b({"podSelector": sel(app="a")})], "a", "b", 9000, "TCP", True),
    ("union-of-policies-first", [ingress_to_b({"podSelector": sel(app="a")}, ports=[{"port": 9000}]),
                                 ingress_to_b({**ALL_NS, "podSelector": sel(app="c")})], "c", "b", 9100, "TCP", True),
    ("union-of-policies-second", [ingress_to_b({"podSelector": sel(app="a")}, ports=[{"port": 9000}]),
                                  ingress_to_b({**ALL_NS, "podSelector": sel(app="c")})], "a", "b", 9000, "TCP", True),
    ("union-of-policies-neither", [ingress_to_b({"podSelector": sel(app="a")}, ports=[{"port": 9000}]),
                                   ingress_to_b({**ALL_NS, "podSelector": sel(app="c")})], "a", "b", 9100, "TCP", False),
    ("rules-bind-ports-to-peers", [pol({"podSelector": sel(app="b"), "ingress": [
        {"from": [{"podSelector": sel(app="a")}], "ports": [{"port": 9000}]},
        {"from": [{**ALL_NS, "podSelector": sel(app="c")}], "ports": [{"port": 9100}]}]})], "a", "b", 9100, "TCP", False),
    ("empty-rule-allows-all", [pol({"podSelector": sel(app="b"), "ingress": [{}]})], "d", "b", 1234, "UDP", True),
    ("rule-without-from-any-source", [pol({"podSelector": sel(app="b"), "ingress": [{"ports": [{"port": 9000}]}]})], "d", "b", 9000, "TCP", True),
    ("rule-without-ports-any-port", [ingress_to_b({"podSelector": sel(app="a")})], "a", "b", 31337, "TCP", True),
    ("policy-ns-podselector-scope", [pol({"podSelector": sel(app="b"), "ingress": [{}]}, ns="prod"),
                                     pol({"podSelector": {}})], "a", "b", 9000, "TCP", False),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_engine_case(case: tuple[str, list[dict[str, Any]], str, str, int, str, bool]) -> None:
    _, policies, src, dst, port, proto, expected = case
    engine = PolicyEngine(PODS, NAMESPACES, policies)
    s, d = engine.pod(NS_OF[src], src), engine.pod(NS_OF[dst], dst)
    assert engine.allowed(s, d, port, proto) is expected


def test_enough_cases() -> None:
    assert len(CASES) >= 40


def test_policy_types_defaulting() -> None:
    assert policy_types({"spec": {}}) == {"Ingress"}
    assert policy_types({"spec": {"egress": [{}]}}) == {"Ingress", "Egress"}
    assert policy_types({"spec": {"egress": []}}) == {"Ingress"}
    assert policy_types({"spec": {"policyTypes": ["Egress"], "ingress": [{}]}}) == {"Egress"}


def test_selector_edge_cases() -> None:
    assert selector_matches({}, {})
    assert selector_matches(None, {"a": "b"})
    assert not selector_matches({"matchLabels": {"a": "b"}}, {})
    assert selector_matches({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {})


def test_podview_reads_api_pod() -> None:
    view = PodView.from_obj(PODS[1])
    assert view.key == ("default", "b")
    assert ("grpc", 9000, "TCP") in view.ports and ("", 9100, "TCP") in view.ports
    assert view.ips == ("10.0.0.20",)
    assert PodView.from_obj({"metadata": {"name": "x"}, "status": {"podIP": "1.2.3.4"}}).ips == ("1.2.3.4",)


def test_direction_checks_are_independent() -> None:
    engine = PolicyEngine(PODS, NAMESPACES, [egress_from_a(), ingress_to_b({"podSelector": sel(app="a")})])
    a, b = engine.pod("default", "a"), engine.pod("default", "b")
    assert engine.ingress_allowed(a, b, 9000) and not engine.egress_allowed(a, b, 9000)
