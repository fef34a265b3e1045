"""A manifest an agent pipes to kubectl (``apply -f -``), read the way the allowlist judges it.

YAML anchors and aliases are refused and nesting is bounded, so what the allowlist reads is
what kubectl receives: ``canonical_manifest`` hands kubectl the JSON that was judged.
"""

from __future__ import annotations

import json

import yaml

from netarena.common.core.errors import InvalidAction

__all__ = ["MAX_FLOW_DEPTH", "canonical_manifest", "flow_depth", "manifest_docs"]


class _ManifestLoader(yaml.SafeLoader):
    """YAML as kubectl reads it into JSON: timestamps stay strings."""


_ManifestLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}

MAX_FLOW_DEPTH = 64
"""Deepest ``[``/``{`` nesting a manifest may have: PyYAML reads flow nesting in time
quadratic in its depth (20,000 levels took 40 s of the evaluator's CPU per turn)."""


def flow_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest in ``text``, quoted scalars aside."""
    depth = deepest = 0
    quote = ""
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif quote:
            escaped = ch == "\\" and quote == '"'
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _load_manifest(stdin: str | None) -> list[object]:
    """The documents of a ``-f -`` manifest (anchors, aliases, deep nesting refused)."""
    if stdin is None:
        raise InvalidAction("`-f -` needs the manifest: a here-document (<<EOF) or a ```yaml "
                            "block in the same reply")
    if flow_depth(stdin) > MAX_FLOW_DEPTH:
        raise InvalidAction(f"the manifest nests more than {MAX_FLOW_DEPTH} levels deep")
    try:
        if any(isinstance(e, yaml.AliasEvent) for e in yaml.parse(stdin, _ManifestLoader)):
            raise InvalidAction("YAML anchors and aliases are not supported in manifests here; "
                                "write each value out")
        return [d for d in yaml.load_all(stdin, _ManifestLoader) if d is not None]  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise InvalidAction(f"the manifest does not parse as YAML: {exc}") from exc


def canonical_manifest(stdin: str) -> str:
    """The manifest as the JSON documents this module checked, one per line."""
    try:
        return "".join(json.dumps(d, allow_nan=False) + "\n" for d in _load_manifest(stdin))
    except (TypeError, ValueError) as exc:
        raise InvalidAction(f"the manifest holds a value JSON cannot carry: {exc}") from exc


def manifest_docs(stdin: str | None) -> list[dict[str, object]]:
    """The objects of a piped manifest, the items of a ``List`` flattened.

    Raises:
        InvalidAction: The manifest does not parse, holds no object or something else.
    """
    docs = _load_manifest(stdin)
    flat: list[dict[str, object]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            raise InvalidAction("the manifest must hold Kubernetes objects")
        items = doc.get("items") if str(doc.get("kind", "")).endswith("List") else None
        flat.extend(i for i in items if isinstance(i, dict)) if isinstance(items, list) \
            else flat.append(doc)
    if not flat:
        raise InvalidAction("the manifest holds no object")
    return flat
