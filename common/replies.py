"""Tolerant extraction of answers from agent replies.

Agents wrap answers in code fences, put reasoning before them, or send bare text. These
helpers find the answer in all of those shapes; each app decides what a valid answer is.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["code_blocks", "last_code_block", "json_objects", "MAX_REPLY_CHARS"]

MAX_REPLY_CHARS = 200_000
"""Replies longer than this are cut before parsing (a 1 MB garbage reply costs one turn)."""
_MAX_JSON_FAILURES = 2_000
"""Failed decode attempts per reply: each costs up to O(reply) (error positions), so a
reply of 200k lone ``{`` would otherwise take seconds; real replies have a handful."""

_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")


def _fenced(text: str) -> list[tuple[str, str]]:
    r"""``(language, body)`` of each fenced block, scanning once (linear time).

    Equivalent to matching ``` ```lang...\n(.*?)``` ``` repeatedly, but a regex with a
    greedy info string backtracks quadratically on a long unclosed fence (200k characters
    took 25 s), so the fences are found with ``str.find``.
    """
    found, pos = [], 0
    while (start := text.find("```", pos)) != -1:
        line_end = text.find("\n", start + 3)
        if line_end == -1:
            break
        close = text.find("```", line_end + 1)
        if close == -1:
            break
        lang = _LANG.match(text, start + 3, line_end)
        found.append((lang.group(1) if lang else "", text[line_end + 1 : close]))
        pos = close + 3
    return found


def code_blocks(text: str, languages: tuple[str, ...] = ()) -> list[str]:
    """Bodies of the fenced code blocks in ``text``, in order.

    Args:
        text: The reply.
        languages: Keep only blocks tagged with one of these (untagged blocks always kept).
    """
    text = text[:MAX_REPLY_CHARS]
    blocks = []
    for tag, body in _fenced(text):
        lang = tag.lower()
        if not languages or not lang or lang in languages:
            blocks.append(body.strip("\n"))
    if not blocks and text.count("```") == 2:  # a one-line fence: ```kubectl get pods```
        inner = text.split("```")[1].strip()
        if inner:
            blocks.append(inner)
    return blocks


def last_code_block(text: str, languages: tuple[str, ...] = ()) -> str | None:
    """The last fenced block (answers usually follow the reasoning), or ``None``."""
    blocks = code_blocks(text, languages)
    return blocks[-1] if blocks else None


def json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that can be decoded from ``text``, fenced or bare, in order."""
    text = text[:MAX_REPLY_CHARS]
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    pos, failures = 0, 0
    while (start := text.find("{", pos)) != -1 and failures < _MAX_JSON_FAILURES:
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):  # bad JSON, huge ints, deep nesting
            failures += 1
            pos = start + 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
        pos = end
    return found
