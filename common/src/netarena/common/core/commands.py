"""The check shared by the apps that run agents' commands: no unprintable characters.

How a command is read is the app's: route runs a whole shell command line inside the node's
sandbox (``netarena.route.sandbox.actions``), k8s reads a command block the way bash parses it and
runs none of it (``netarena.k8s.commandline``), MALT takes Python code. Each app owns its
length limit beside its reader, with the reason for its size; what they share is refusing
characters that hide what a command does.
"""

from __future__ import annotations

import unicodedata

__all__ = ["unprintable_character"]

_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
"""Control, format (zero-width, bidi), surrogate, private and unassigned characters: they
hide what a command does from a reader, NUL makes ``exec`` raise, and a lone surrogate
cannot be encoded for ``exec`` at all."""


def unprintable_character(line: str) -> str | None:
    """The first unprintable character of ``line`` as ``U+XXXX``, or ``None``.

    Tabs and line ends are fine (command blocks and here-documents span lines).
    """
    for ch in line:
        if ch not in "\t\r\n" and unicodedata.category(ch) in _UNPRINTABLE:
            return f"U+{ord(ch):04X}"
    return None
