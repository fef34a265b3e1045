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

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def code_blocks(text: str, languages: tuple[str, ...] = ()) -> list[str]:
    """Bodies of the fenced code blocks in ``text``, in order.

    Args:
        text: The reply.
        languages: Keep only blocks tagged with one of these (untagged blocks always kept).
    """
    text = text[:MAX_REPLY_CHARS]
    blocks = []
    for match in _FENCE.finditer(text):
        lang = match.group(1).lower()
        if not languages or not lang or lang in languages:
            blocks.append(match.group(2).strip("\n"))
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
    pos = 0
    while (start := text.find("{", pos)) != -1:
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
        pos = end
    return found
