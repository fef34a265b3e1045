"""Turning an agent's command line into an argv that is safe to run without a shell.

Apps add their own allowlists on top (which tools, verbs and flags); this module owns the
part every app shares: shlex parsing and refusing anything that only means something to
a shell (chaining, pipes, redirection, substitution, globbing of the host).
"""

from __future__ import annotations

import re
import shlex
import unicodedata

from netarena.common.core.errors import InvalidAction

__all__ = ["split_command", "unprintable_character", "MAX_COMMAND_CHARS"]

MAX_COMMAND_CHARS = 2000
"""Longest command line accepted."""

# Checked on the raw text, before shlex: these only matter to a shell, so there is no
# legitimate use for them in a single network-tool command.
_SHELL_SYNTAX = [
    (re.compile(r"[;&|]"), "command chaining or pipes (; & |)"),
    (re.compile(r"[<>]"), "redirection (< >)"),
    (re.compile(r"`|\$\("), "command substitution ($( ) or backticks)"),
    (re.compile(r"\$\{?[A-Za-z_]"), "variable expansion ($VAR)"),
    (re.compile(r"[\r\n]"), "more than one line"),
]


_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
"""Control, format (zero-width, bidi), surrogate, private and unassigned characters: they
hide what a command does from a reader, NUL makes ``exec`` raise, and a lone surrogate
cannot be encoded for ``exec`` at all."""


def unprintable_character(line: str) -> str | None:
    """The first unprintable character of ``line`` as ``U+XXXX``, or ``None``.

    Tabs and newlines are fine. Apps that take whole shell command lines refuse the rest
    too.
    """
    for ch in line:
        if ch not in "\t\r\n" and unicodedata.category(ch) in _UNPRINTABLE:
            return f"U+{ord(ch):04X}"
    return None


def split_command(line: str) -> list[str]:
    """Parse one command line into argv, refusing shell syntax.

    Args:
        line: The command as the agent wrote it.

    Returns:
        The argv list (never empty).

    Raises:
        InvalidAction: Empty, too long, unbalanced quotes, unprintable characters (NUL,
            surrogates, zero-width), or containing shell syntax.
    """
    line = line.strip()
    if not line:
        raise InvalidAction("empty command")
    if len(line) > MAX_COMMAND_CHARS:
        raise InvalidAction(f"command longer than {MAX_COMMAND_CHARS} characters")
    if bad := unprintable_character(line):
        raise InvalidAction(f"unprintable character {bad} in the command")
    for pattern, what in _SHELL_SYNTAX:
        if pattern.search(line):
            raise InvalidAction(f"shell syntax is not allowed: {what}; send one plain command")
    try:
        argv = shlex.split(line)
    except ValueError as exc:
        raise InvalidAction(f"cannot parse command: {exc}") from exc
    if not argv:
        raise InvalidAction("empty command")
    return argv
