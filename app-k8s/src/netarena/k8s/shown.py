"""What a command's output showed the agent: the objects whose whole spec it printed.

"Look before you change" needs to know which objects an agent has actually seen. A read
shows an object when its output holds the object's spec: ``get -o yaml|json`` (a list or
one object, also ``get --raw`` JSON), ``describe`` (its ``Name:``/``Namespace:`` blocks),
or a jsonpath, go-template or custom-columns output that prints the object's whole
``.spec`` as kubectl renders it (compact JSON, sorted keys). A read that printed nothing
of it (an empty list, a table, ``-o name``, another namespace, a jsonpath of labels or of
nothing) shows nothing, whatever it asked for.

Objects are keyed ``(kind, namespace, name)`` with ``kind`` the plural resource name
(``networkpolicies``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import yaml

from netarena.k8s.kubectl_args import ParsedArgs, resource_kind

__all__ = ["Key", "Lister", "shown_objects", "spec_text"]

Key = tuple[str, str, str]
"""``(kind, namespace, name)`` of one object (``kind``: plural resource name)."""
Lister = Callable[[str, str | None], list[dict[str, Any]]]
"""``(kind, namespace or None for every namespace) -> objects``: the cluster now."""
_NAME = re.compile(r"^Name:\s+(\S+)\s*$", re.MULTILINE)
_NAMESPACE = re.compile(r"^Namespace:\s+(\S+)\s*$")
_TEMPLATES = ("jsonpath", "jsonpath-as-json", "go-template", "custom-columns", "template")


def spec_text(obj: dict[str, Any]) -> str:
    """An object's ``.spec`` as kubectl's jsonpath prints it (compact JSON, keys sorted)."""
    return json.dumps(obj.get("spec"), separators=(",", ":"), sort_keys=True)


def _kind_of(obj: dict[str, Any], list_kind: str | None) -> str | None:
    kind = obj.get("kind") or (list_kind[:-4] if list_kind and list_kind.endswith("List")
                               else None)
    return resource_kind(str(kind).lower()) if kind else None


def _documents(text: str, fmt: str) -> list[Any]:
    try:
        if fmt == "json":
            return [json.loads(text)]
        return list(yaml.safe_load_all(text))
    except (ValueError, yaml.YAMLError):
        return []


def _printed(text: str, fmt: str, default_ns: str) -> Iterator[Key]:
    """Objects with a spec in a JSON or YAML output (lists expanded)."""
    for doc in _documents(text, fmt):
        if not isinstance(doc, dict):
            continue
        items = doc.get("items")
        objects = items if isinstance(items, list) else [doc]
        for obj in objects:
            if not isinstance(obj, dict) or not isinstance(obj.get("spec"), dict):
                continue
            meta: dict[str, Any] = obj["metadata"] if isinstance(obj.get("metadata"),
                                                                  dict) else {}
            kind = _kind_of(obj, str(doc.get("kind") or ""))
            if kind and meta.get("name"):
                yield kind, str(meta.get("namespace") or default_ns), str(meta["name"])


def _kinds(words: list[str]) -> list[str]:
    """Resource kinds a read names (``netpol,pods``, ``netpol/x``)."""
    out: list[str] = []
    for w in words:
        for part in w.split("/", 1)[0].split(","):
            kind = resource_kind(part)
            if kind is not None and kind not in out:
                out.append(kind)
        if "/" not in w:
            break
    return out


def _described(text: str, kinds: list[str], default_ns: str,
               lister: Lister | None) -> Iterator[Key]:
    """``describe`` blocks: each ``Name:`` line and the ``Namespace:`` line after it."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _NAME.match(line)
        if not m:
            continue
        ns = default_ns
        for nxt in lines[i + 1:i + 3]:
            found = _NAMESPACE.match(nxt)
            if found:
                ns = found.group(1)
        for kind in kinds:
            if len(kinds) == 1 or lister is None or any(
                    (o.get("metadata") or {}).get("name") == m.group(1)
                    for o in lister(kind, ns)):
                yield kind, ns, m.group(1)


def _templated(text: str, kinds: list[str], namespace: str | None,
               lister: Lister | None) -> Iterator[Key]:
    """Objects whose whole spec a jsonpath or template output printed."""
    if lister is None or not text.strip():
        return
    for kind in kinds:
        for obj in lister(kind, namespace):
            meta = obj.get("metadata") or {}
            if obj.get("spec") and spec_text(obj) in text:
                yield kind, str(meta.get("namespace") or namespace), str(meta.get("name"))


def _output_format(p: ParsedArgs) -> str:
    values = [v for v in p.values("-o", "--output") if v]
    return values[-1].split("=", 1)[0].lower() if values else ""


def shown_objects(p: ParsedArgs, stdout: str, namespace: str,
                  lister: Lister | None = None) -> set[Key]:
    """The objects one command's output showed (see the module docstring).

    Args:
        p: The command's parsed words (verb first).
        stdout: What it printed on standard output.
        namespace: The namespace kubectl used when none was given.
        lister: The cluster's objects now, to recognise specs a template printed.
    """
    if not p.positional or not stdout.strip():
        return set()
    verb, words = p.positional[0], p.positional[1:]
    ns_values = [v for v in p.values("-n", "--namespace") if v]
    default_ns = ns_values[-1] if ns_values else namespace
    every = p.has("-A", "--all-namespaces")
    fmt = _output_format(p)
    if fmt in ("yaml", "json") or (verb == "get" and p.values("--raw")):
        return set(_printed(stdout, "json" if fmt == "json" or p.values("--raw") else "yaml",
                            default_ns))
    if verb == "describe":
        return set(_described(stdout, _kinds(words), default_ns, lister))
    if verb == "get" and fmt in _TEMPLATES:
        return set(_templated(stdout, _kinds(words), None if every else default_ns, lister))
    return set()

