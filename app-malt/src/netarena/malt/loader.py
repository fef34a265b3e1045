"""Load MALT models written in protobuf text format into the in-memory graph agents expect.

No ``.proto`` schema for MALT is public, so this is a small schema-less parser of the text
format: messages (``name { ... }`` or ``name: { ... }``, also with ``< >``), scalar fields
(strings, numbers, enum identifiers), ``#`` comments and optional ``,``/``;`` separators.
Repeated fields become lists. The graph shape (keyed by entity name, ``type`` a list of
kinds, ``*_attr`` fields flattened, edges carrying ``type``) is the one purple agents written
for the reference NetArena expect.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import networkx as nx

from netarena.common.core.errors import ConfigError

__all__ = ["parse_textproto", "graph_from_model", "load_textproto"]

_TOKEN = re.compile(
    r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<num>[-+]?(?:0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]?)(?![\w.])
  | (?P<ident>[A-Za-z_][\w.]*)
  | (?P<punct>[{}<>:,;\[\]])
    """,
    re.VERBOSE,
)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}
_CLOSE = {"{": "}", "<": ">"}


def _unquote(text: str) -> str:
    body = text[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _scalar(kind: str, text: str) -> Any:
    if kind == "str":
        return _unquote(text)
    if kind == "num":
        t = text.rstrip("fF") if not text.lower().startswith(("0x", "-0x", "+0x")) else text
        if re.fullmatch(r"[-+]?0[xX][0-9a-fA-F]+", t):
            return int(t, 16)
        if re.fullmatch(r"[-+]?\d+", t):
            return int(t)
        return float(t)
    if text in ("true", "True"):
        return True
    if text in ("false", "False"):
        return False
    return text  # an enum value such as EK_PORT


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        if match.start() != pos:
            break
        pos = match.end()
        kind = match.lastgroup or ""
        if kind != "ws":
            out.append((kind, match.group()))
    if pos != len(text):
        line = text.count("\n", 0, pos) + 1
        raise ConfigError(f"textproto: unexpected input at line {line}: {text[pos : pos + 30]!r}")
    return out


def parse_textproto(text: str) -> dict[str, list[Any]]:
    """Parse protobuf text format without a schema.

    Args:
        text: The document.

    Returns:
        Each field name mapped to the list of its values in order (every field is treated as
        repeated); nested messages are dicts of the same shape.

    Raises:
        ConfigError: The text is not valid protobuf text format.
    """
    toks = _tokens(text)
    stack: list[tuple[dict[str, list[Any]], str]] = [({}, "")]
    i, n = 0, len(toks)
    while i < n:
        kind, tok = toks[i]
        if kind == "punct" and tok in ",;":
            i += 1
            continue
        if kind == "punct" and tok in "}>":
            if len(stack) == 1 or _CLOSE[stack[-1][1]] != tok:
                raise ConfigError(f"textproto: unbalanced {tok!r}")
            stack.pop()
            i += 1
            continue
        if kind != "ident" or i + 1 >= n:
            raise ConfigError(f"textproto: expected a field name, got {tok!r}")
        name = tok
        i += 1
        if toks[i] == ("punct", ":"):
            i += 1
        if i >= n:
            raise ConfigError(f"textproto: field {name} has no value")
        vkind, vtok = toks[i]
        target = stack[-1][0].setdefault(name, [])
        if vkind == "punct" and vtok in "{<":
            child: dict[str, list[Any]] = {}
            target.append(child)
            stack.append((child, vtok))
        elif vkind == "punct" and vtok == "[":
            i += 1
            while toks[i] != ("punct", "]"):
                if toks[i] != ("punct", ","):
                    target.append(_scalar(*toks[i]))
                i += 1
        elif vkind in ("str", "num", "ident"):
            value = _scalar(vkind, vtok)
            while vkind == "str" and i + 1 < n and toks[i + 1][0] == "str":  # "a" "b" concat
                i += 1
                value += _unquote(toks[i][1])
            target.append(value)
        else:
            raise ConfigError(f"textproto: bad value {vtok!r} for field {name}")
        i += 1
    if len(stack) != 1:
        raise ConfigError("textproto: unterminated message")
    return stack[0][0]


def _plain(message: dict[str, list[Any]]) -> dict[str, Any]:
    """Collapse single-element lists so ``switch_loc {stage: 2}`` becomes ``{"stage": 2}``."""
    out: dict[str, Any] = {}
    for key, values in message.items():
        vals = [_plain(v) if isinstance(v, dict) else v for v in values]
        out[key] = vals[0] if len(vals) == 1 else vals
    return out


def graph_from_model(model: dict[str, list[Any]]) -> nx.DiGraph:
    """Build the agents' graph from a parsed MALT model.

    Entities with the same name merge into one node whose ``type`` lists their kinds in file
    order; each ``*_attr`` message is flattened into node attributes. Relationships become
    edges ``a -> z`` with ``type`` set to the relationship kind (a later relationship between
    the same pair overwrites the type, as networkx does).

    Raises:
        ConfigError: An entity or relationship lacks its id.
    """
    graph = nx.DiGraph()
    nodes = graph.nodes
    for entity in model.get("entity", []):
        try:
            ident = entity["id"][0]
            name, kind = ident["name"][0], ident["kind"][0]
        except (KeyError, IndexError) as exc:
            raise ConfigError(f"MALT entity without id.kind/id.name: {entity}") from exc
        if name in nodes:
            if kind not in nodes[name]["type"]:
                nodes[name]["type"].append(kind)
        else:
            graph.add_node(name, name=name, type=[kind])
        for key, values in entity.items():
            if key.endswith("_attr"):
                for value in values:
                    nodes[name].update(_plain(value))
    for rel in model.get("relationship", []):
        try:
            a, z, kind = rel["a"][0]["name"][0], rel["z"][0]["name"][0], rel["kind"][0]
        except (KeyError, IndexError) as exc:
            raise ConfigError(f"MALT relationship without a/z/kind: {rel}") from exc
        for end in (a, z):
            if end not in nodes:
                graph.add_node(end, name=end, type=[])
        graph.add_edge(a, z, type=kind)
    return graph


def load_textproto(path: str | Path) -> nx.DiGraph:
    """Load a MALT textproto file as the agents' graph.

    Raises:
        ConfigError: The file is missing or malformed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read MALT model {path}: {exc}") from exc
    return graph_from_model(parse_textproto(text))
