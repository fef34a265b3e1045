"""String label and field selectors, as kubectl sends them in query parameters.

``app=frontend,tier!=db,env in (a,b),!canary,release`` for labels;
``metadata.name=x,status.phase!=Failed`` for fields (any dotted path of the object).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from netarena.k8s.apiserver.kinds import BadRequest

__all__ = ["label_matcher", "field_matcher"]

_SET_RE = re.compile(r"^\s*(!?)([A-Za-z0-9_./-]+)\s+(in|notin)\s*\(([^)]*)\)\s*$")
_EQ_RE = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
_EXISTS_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")

Matcher = Callable[[Mapping[str, str]], bool]


def _split_terms(text: str) -> list[str]:
    terms: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    terms.append("".join(cur))
    return [t for t in terms if t.strip()]


def _term(term: str) -> Matcher:
    m = _SET_RE.match(term)
    if m and not m.group(1):
        key, op = m.group(2), m.group(3)
        values = {v.strip() for v in m.group(4).split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    m = _EQ_RE.match(term)
    if m:
        key, op, value = m.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    m = _EXISTS_RE.match(term)
    if m:
        neg, key = m.groups()
        if neg:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise BadRequest(f"unable to parse requirement: {term.strip()!r}")


def label_matcher(selector: str | None) -> Matcher:
    """Compile a label selector string into a predicate on a labels mapping.

    Raises:
        BadRequest: The selector does not parse (the API answers 400).
    """
    if not selector or not selector.strip():
        return lambda labels: True
    terms = [_term(t) for t in _split_terms(selector)]
    return lambda labels: all(t(labels) for t in terms)


def _lookup(obj: Mapping[str, Any], path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        cur = cur.get(part) if isinstance(cur, Mapping) else None
    return "" if cur is None else str(cur)


def field_matcher(selector: str | None) -> Callable[[Mapping[str, Any]], bool]:
    """Compile a field selector (``a.b=v``, ``a.b==v``, ``a.b!=v``) into an object predicate.

    Raises:
        BadRequest: A term is not an (in)equality.
    """
    if not selector or not selector.strip():
        return lambda obj: True
    checks: list[tuple[str, bool, str]] = []
    for term in _split_terms(selector):
        m = _EQ_RE.match(term)
        if not m:
            raise BadRequest(f"invalid field selector: {term.strip()!r}")
        key, op, value = m.groups()
        checks.append((key, op != "!=", value))
    return lambda obj: all((_lookup(obj, k) == v) == eq for k, eq, v in checks)
