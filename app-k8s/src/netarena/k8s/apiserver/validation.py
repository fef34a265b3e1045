"""Validation, as the real API server applies it on every write (after defaulting).

It covers what agents can get wrong through ``patch``/``apply`` (bad protocols, ports,
selectors, CIDRs) and answers with upstream's field paths and messages.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from netarena.k8s.apiserver.kinds import Invalid, KindInfo

__all__ = ["validate"]

_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_LABEL_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_NAME_RE = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PORT_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
_PROTOCOLS = ("SCTP", "TCP", "UDP")
_OPERATORS = ("DoesNotExist", "Exists", "In", "NotIn")


class _Errors:
    def __init__(self) -> None:
        self.causes: list[dict[str, str]] = []

    def add(self, field: str, reason: str, message: str) -> None:
        self.causes.append({"reason": reason, "message": f"{message}", "field": field})

    def required(self, field: str) -> None:
        self.add(field, "FieldValueRequired", "Required value")

    def invalid(self, field: str, value: Any, detail: str) -> None:
        self.add(field, "FieldValueInvalid", f"Invalid value: {_show(value)}: {detail}")

    def unsupported(self, field: str, value: Any, allowed: tuple[str, ...]) -> None:
        shown = ", ".join(f'"{a}"' for a in allowed)
        self.add(field, "FieldValueNotSupported",
                 f"Unsupported value: {_show(value)}: supported values: {shown}")


def _show(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value)


def validate(obj: dict[str, Any], info: KindInfo) -> None:
    """Check ``obj`` (already defaulted) like the API server would.

    Raises:
        Invalid: With one cause per bad field, rendered by kubectl as a bullet list.
    """
    errs = _Errors()
    meta = obj.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not name:
        errs.required("metadata.name")
    elif not isinstance(name, str) or len(name) > 253 or not _NAME_RE.match(name):
        errs.invalid("metadata.name", name, "a lowercase RFC 1123 subdomain must consist of "
                     "lower case alphanumeric characters, '-' or '.'")
    if isinstance(meta, dict):
        _check_labels(errs, "metadata.labels", meta.get("labels"))
    spec = obj.get("spec")
    if info.kind in {"Pod", "Service", "Deployment", "NetworkPolicy"}:
        if not isinstance(spec, dict):
            errs.required("spec")
        elif info.kind == "Pod":
            _check_pod_spec(errs, "spec", spec)
        elif info.kind == "Deployment":
            _check_deployment(errs, spec)
        elif info.kind == "Service":
            _check_service(errs, spec)
        else:
            _check_network_policy(errs, spec)
    if errs.causes:
        message = "; ".join(f"{c['field']}: {c['message']}" for c in errs.causes)
        raise Invalid(
            f'{info.kind} "{name}" is invalid: {message}',
            {"name": str(name), "group": info.group, "kind": info.kind, "causes": errs.causes},
        )


def _check_labels(errs: _Errors, field: str, labels: Any) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        errs.invalid(field, labels, "must be a map of strings")
        return
    for key, value in labels.items():
        name = key.rsplit("/", 1)[-1]
        if not name or len(name) > 63 or not _LABEL_NAME_RE.match(name):
            errs.invalid(field, key, "name part must consist of alphanumeric characters, "
                         "'-', '_' or '.', and must start and end with an alphanumeric character")
        if not isinstance(value, str) or len(value) > 63 or not _LABEL_VALUE_RE.match(value):
            errs.invalid(f"{field}", value, "a valid label must be an empty string or consist of"
                         " alphanumeric characters, '-', '_' or '.'")


def _check_selector(errs: _Errors, field: str, sel: Any) -> None:
    if sel is None:
        return
    if not isinstance(sel, dict):
        errs.invalid(field, sel, "must be a label selector object")
        return
    _check_labels(errs, f"{field}.matchLabels", sel.get("matchLabels"))
    for i, expr in enumerate(sel.get("matchExpressions") or []):
        f = f"{field}.matchExpressions[{i}]"
        if not isinstance(expr, dict) or not expr.get("key"):
            errs.required(f"{f}.key")
            continue
        op, values = expr.get("operator"), expr.get("values") or []
        if op not in _OPERATORS:
            errs.unsupported(f"{f}.operator", op, _OPERATORS)
        elif op in {"In", "NotIn"} and not values:
            errs.required(f"{f}.values")
        elif op in {"Exists", "DoesNotExist"} and values:
            errs.add(f"{f}.values", "FieldValueForbidden",
                     "Forbidden: may not be specified when `operator` is 'Exists' or "
                     "'DoesNotExist'")


def _check_port_number(errs: _Errors, field: str, port: Any, *, named_ok: bool) -> None:
    if isinstance(port, bool) or port is None:
        errs.invalid(field, port, "must be a port number or name")
    elif isinstance(port, int):
        if not 1 <= port <= 65535:
            errs.invalid(field, port, "must be between 1 and 65535, inclusive")
    elif isinstance(port, str) and named_ok:
        if len(port) > 15 or not _PORT_NAME_RE.match(port) or port.isdigit():
            errs.invalid(field, port, "must be no more than 15 characters, contain only "
                         "lowercase alphanumerics and '-', and contain at least one letter")
    else:
        errs.invalid(field, port, "must be a port number")


def _check_protocol(errs: _Errors, field: str, proto: Any) -> None:
    if proto not in _PROTOCOLS:
        errs.unsupported(field, proto, _PROTOCOLS)


def _check_pod_spec(errs: _Errors, field: str, spec: dict[str, Any]) -> None:
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        errs.required(f"{field}.containers")
        return
    for i, c in enumerate(containers):
        f = f"{field}.containers[{i}]"
        if not isinstance(c, dict) or not c.get("name"):
            errs.required(f"{f}.name")
            continue
        if not c.get("image"):
            errs.required(f"{f}.image")
        for j, port in enumerate(c.get("ports") or []):
            pf = f"{f}.ports[{j}]"
            if not isinstance(port, dict):
                errs.invalid(pf, port, "must be an object")
                continue
            _check_port_number(errs, f"{pf}.containerPort", port.get("containerPort"),
                               named_ok=False)
            _check_protocol(errs, f"{pf}.protocol", port.get("protocol"))


def _check_deployment(errs: _Errors, spec: dict[str, Any]) -> None:
    replicas = spec.get("replicas")
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        errs.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
    selector = spec.get("selector")
    template = spec.get("template")
    if not isinstance(selector, dict) or not selector:
        errs.required("spec.selector")
    else:
        _check_selector(errs, "spec.selector", selector)
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        errs.required("spec.template")
        return
    labels = (template.get("metadata") or {}).get("labels") or {}
    _check_labels(errs, "spec.template.metadata.labels", labels)
    wanted = (selector or {}).get("matchLabels") or {} if isinstance(selector, dict) else {}
    if any(labels.get(k) != v for k, v in wanted.items()):
        errs.invalid("spec.template.metadata.labels", labels,
                     "`selector` does not match template `labels`")
    _check_pod_spec(errs, "spec.template.spec", template["spec"])


def _check_service(errs: _Errors, spec: dict[str, Any]) -> None:
    ports = spec.get("ports") or []
    if not ports and spec.get("clusterIP") != "None":
        errs.required("spec.ports")
    names = [p.get("name") for p in ports or [] if isinstance(p, dict)]
    for i, port in enumerate(ports or []):
        f = f"spec.ports[{i}]"
        if not isinstance(port, dict):
            errs.invalid(f, port, "must be an object")
            continue
        if len(ports) > 1 and not port.get("name"):
            errs.required(f"{f}.name")
        elif port.get("name") and names.count(port.get("name")) > 1:
            errs.add(f"{f}.name", "FieldValueDuplicate", f'Duplicate value: "{port["name"]}"')
        _check_port_number(errs, f"{f}.port", port.get("port"), named_ok=False)
        _check_port_number(errs, f"{f}.targetPort", port.get("targetPort"), named_ok=True)
        _check_protocol(errs, f"{f}.protocol", port.get("protocol"))
    types = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    if spec.get("type") not in types:
        errs.unsupported("spec.type", spec.get("type"), types)


def _check_network_policy(errs: _Errors, spec: dict[str, Any]) -> None:
    _check_selector(errs, "spec.podSelector", spec.get("podSelector"))
    for i, ptype in enumerate(spec.get("policyTypes") or []):
        if ptype not in ("Ingress", "Egress"):
            errs.unsupported(f"spec.policyTypes[{i}]", ptype, ("Egress", "Ingress"))
    for direction, peers_key in (("ingress", "from"), ("egress", "to")):
        rules = spec.get(direction)
        if rules is None:
            continue
        if not isinstance(rules, list):
            errs.invalid(f"spec.{direction}", rules, "must be a list of rules")
            continue
        for i, rule in enumerate(rules):
            f = f"spec.{direction}[{i}]"
            if not isinstance(rule, dict):
                errs.invalid(f, rule, "must be an object")
                continue
            for j, port in enumerate(rule.get("ports") or []):
                _check_policy_port(errs, f"{f}.ports[{j}]", port)
            for j, peer in enumerate(rule.get(peers_key) or []):
                _check_peer(errs, f"{f}.{peers_key}[{j}]", peer)


def _check_policy_port(errs: _Errors, field: str, port: Any) -> None:
    if not isinstance(port, dict):
        errs.invalid(field, port, "must be an object")
        return
    _check_protocol(errs, f"{field}.protocol", port.get("protocol"))
    if "port" in port:
        _check_port_number(errs, f"{field}.port", port["port"], named_ok=True)
    end = port.get("endPort")
    if end is not None:
        if not isinstance(port.get("port"), int):
            errs.invalid(f"{field}.endPort", end, "may not be specified when `port` is "
                         "non-numeric")
        elif not isinstance(end, int) or end < port["port"]:
            errs.invalid(f"{field}.endPort", end, "must be greater than or equal to `port`")


def _check_peer(errs: _Errors, field: str, peer: Any) -> None:
    if not isinstance(peer, dict) or not peer:
        errs.required(field)
        return
    block = peer.get("ipBlock")
    if block is not None:
        if set(peer) != {"ipBlock"}:
            errs.add(field, "FieldValueForbidden",
                     "Forbidden: may not specify both ipBlock and another peer")
        _check_ip_block(errs, f"{field}.ipBlock", block)
    _check_selector(errs, f"{field}.podSelector", peer.get("podSelector"))
    _check_selector(errs, f"{field}.namespaceSelector", peer.get("namespaceSelector"))


def _check_ip_block(errs: _Errors, field: str, block: Any) -> None:
    try:
        net = ipaddress.ip_network(str(block.get("cidr")), strict=False)
    except (ValueError, AttributeError):
        errs.invalid(f"{field}.cidr", block.get("cidr") if isinstance(block, dict) else block,
                     "must be a valid CIDR")
        return
    for k, cidr in enumerate(block.get("except") or []):
        try:
            sub = ipaddress.ip_network(str(cidr), strict=False)
        except ValueError:
            errs.invalid(f"{field}.except[{k}]", cidr, "must be a valid CIDR")
            continue
        # mypy cannot tie the two networks' types to the version check that precedes the call
        if sub.version != net.version or not sub.subnet_of(net):  # type: ignore[arg-type]
            errs.invalid(f"{field}.except[{k}]", cidr, "must be a strict subset of `cidr`")
