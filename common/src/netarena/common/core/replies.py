"""Tolerant extraction of answers from agent replies.

Agents wrap answers in code fences, put reasoning before them, or send bare text. These
helpers find the answer in all of those shapes; each app decides what a valid answer is.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["code_blocks", "last_code_block", "json_objects", "strip_reasoning", "tool_call_hint",
           "MAX_REPLY_CHARS"]

MAX_REPLY_CHARS = 200_000
"""Replies longer than this are cut before parsing (a 1 MB garbage reply costs one turn)."""
_MAX_JSON_FAILURES = 2_000
"""Failed decode attempts per reply: each costs up to O(reply) (error positions), so a
reply of 200k lone ``{`` would otherwise take seconds; real replies have a handful."""

_LANG = re.compile(r"[ \t]*([A-Za-z0-9_+-]*)")
_REASONING = (("<think>", "</think>"), ("<thinking>", "</thinking>"),
              ("<reasoning>", "</reasoning>"), ("<reflection>", "</reflection>"),
              ("<seed:think>", "</seed:think>"), ("[THINK]", "[/THINK]"),
              ("<|begin_of_thought|>", "<|end_of_thought|>"),
              ("<|channel|>analysis<|message|>", "<|end|>"))
"""Opening and closing markers of the reasoning blocks models emit before their answer
(DeepSeek-R1, Qwen3, QwQ: ``<think>``; Magistral: ``[THINK]``; Seed: ``<seed:think>``;
gpt-oss harmony: the ``analysis`` channel)."""
_TOOL_CALL_MARKERS = ("<tool_call>", "<|tool_call", "<function=", "<|python_tag|>",
                      "[TOOL_CALLS]", "<|channel|>commentary to=")
_TOOL_CALL_KEYS = ("tool_calls", "function_call", "tool_use")
_TOOL_CALL_HINT = ("your reply held no answer text{what}: this evaluator reads plain text and "
                  "calls no tools. Reply with one command in a code block, e.g.\n```\n"
                  "{example}\n```")
"""What an empty or tool-call reply is told (``what`` and ``example`` filled in)."""


def strip_reasoning(text: str) -> str:
    """``text`` without its reasoning blocks (``<think>…</think>`` and the like).

    A command written while thinking is not the answer. A closing marker without its
    opener (chat templates put ``<think>`` in the prompt) drops everything before it; an
    opener never closed (the reply was cut while thinking) drops everything after it.
    Markers are matched case-insensitively, in linear time.
    """
    text = text[:MAX_REPLY_CHARS]
    lower = text.lower()
    if not any(close.lower() in lower or open_.lower() in lower for open_, close in _REASONING):
        return text
    for open_, close in _REASONING:
        o, c = open_.lower(), close.lower()
        out, pos = [], 0
        first_open = lower.find(o)
        last_close = lower.rfind(c)
        if last_close != -1 and (first_open == -1 or first_open > last_close):
            pos = last_close + len(c)  # an orphan close: the opener was in the template
        while (start := lower.find(o, pos)) != -1:
            out.append(text[pos:start])
            end = lower.find(c, start + len(o))
            if end == -1:
                pos = len(text)
                break
            pos = end + len(c)
        out.append(text[pos:])
        text = "".join(out)
        lower = text.lower()
    return text


def tool_call_hint(text: str, example: str) -> str | None:
    """The message for a reply that is empty or a tool call, else ``None``.

    Agents built on function calling answer with ``tool_calls`` and no content: the A2A
    text is then empty (or a JSON data part, or the model's tool-call markup). Telling
    them so beats "no command found".

    Args:
        text: The reply.
        example: A command of the app, shown in the message.
    """
    stripped = strip_reasoning(text).strip()
    if not stripped:
        what = " (it was empty" + (": only reasoning" if text.strip() else "") + \
            "; a tool call arrives as empty text)"
        return _TOOL_CALL_HINT.format(what=what, example=example)
    if "```" in stripped:
        return None
    lower = stripped.lower()
    marked = any(m.lower() in lower for m in _TOOL_CALL_MARKERS)
    objects = json_objects(stripped) if stripped.startswith(("{", "[")) else []
    called = any(k in o for o in objects for k in _TOOL_CALL_KEYS) or any(
        "name" in o and isinstance(o.get("arguments", o.get("parameters")), (dict, str))
        for o in objects)
    if marked or called:
        return _TOOL_CALL_HINT.format(what=" (it is a tool call)", example=example)
    return None


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
    """Bodies of the fenced code blocks in ``text``, in order (reasoning blocks skipped).

    Args:
        text: The reply.
        languages: Keep only blocks tagged with one of these (untagged blocks always kept).
    """
    text = strip_reasoning(text)
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
    """Every JSON object that can be decoded from ``text``, fenced or bare, in order.

    Reasoning blocks (``strip_reasoning``) are skipped.
    """
    text = strip_reasoning(text)
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
