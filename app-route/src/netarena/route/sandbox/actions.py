"""Turning an agent's reply into a shell command for one machine.

The reply is ``{"machine": ..., "command": ...}``, bare, fenced or after reasoning. The
command is a shell command line: it runs as ``bash -c`` inside the machine's sandbox
(``sandbox.py``), which is what keeps the host safe, so nothing here parses shell syntax.
What remains is a short deny list for harm a sandbox cannot stop because the kernel does
it on the command's behalf:

* packet floods (``ping -f``, ``-l`` preload, intervals under 0.2 s) that do not end by
  their count (``-c N``, N at most ``FLOOD_MAX_COUNT``): they would run at tens of
  thousands of packets a second until the time limit, and use up the ICMP burst the
  switch fabric allows each node (``limits.py``), which the judge's probes share;
* the iptables targets ``IDLETIMER``, ``LED`` and ``AUDIT``, which make the kernel write
  host state (``/sys``, the audit log); spelled otherwise, they are found in the node's
  rules after the command (``rulesets.py``).

Those are attempted forbidden changes (``ForbiddenCommand``). A reply that cannot be read
or names no machine of the episode is only refused (``InvalidAction``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from netarena.common.core.commands import unprintable_character
from netarena.common.core.errors import ForbiddenCommand, InvalidAction
from netarena.common.core.replies import json_objects
from netarena.route.sandbox.limits import ICMP_BURST, ICMP_RATE_PER_S

__all__ = [
    "Action", "FLOOD_MAX_COUNT", "ForbiddenCommand", "parse_reply", "check_command",
    "MAX_COMMAND_CHARS",
]

MAX_COMMAND_CHARS = 4000
"""Longest command line accepted: route owns this limit (``core.commands`` holds none). A
route command is one shell line run by ``bash -c`` in the node's sandbox, so it may write a
small file with ``printf`` or batch a router's configuration as many ``vtysh -c`` arguments;
4,000 characters hold those, and the sandbox, not the length, is what keeps the host safe."""
_PING_MIN_INTERVAL_S = 0.2
FLOOD_MAX_COUNT = ICMP_RATE_PER_S // 2
"""Most packets a ping flood (``-f``, ``-l``, ``-i`` under 0.2 s) may send: its requests and
the replies together stay within one second of the fabric's ICMP rate, a quarter of its
burst, so the judge's next pingmesh round (about 1,400 packets through the router's busiest
port) still fits."""
_PING_VALUE_LETTERS = "ciIlmMpQsStTwWeF"
_HOST_WRITING_TARGETS = re.compile(r"(?:-j|--jump)\s*['\"]?(IDLETIMER|LED|AUDIT)\b")


@dataclass(frozen=True)
class Action:
    """A command for one machine of the episode."""

    machine: str
    """Node name (``r0``, ``h3``)."""
    command: str
    """The shell command line, as the agent wrote it."""


def resolve_machine(name: object, nodes: tuple[str, ...]) -> str:
    """Map the agent's machine name to a node of this episode.

    Accepts a Mininet-style per-episode prefix (``p29_r0``) for compatibility.

    Raises:
        InvalidAction: Not a string, or no such machine.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidAction('"machine" must be a non-empty string such as "r0" or "h1"')
    name = name.strip()
    if name not in nodes:
        name = re.sub(r"^[A-Za-z0-9]+_", "", name)
    if name not in nodes:
        raise InvalidAction(f"unknown machine {name!r}; machines are: {', '.join(nodes)}")
    return name


def parse_reply(reply: str, nodes: tuple[str, ...]) -> Action:
    """Find the ``{"machine", "command"}`` answer in ``reply`` and check it.

    The last object carrying both keys wins (answers usually follow the reasoning).

    Raises:
        InvalidAction: No answer found, unknown machine, or an unusable command.
        ForbiddenCommand: The command floods or makes the kernel write host files.
    """
    candidates = [o for o in json_objects(reply) if "machine" in o and "command" in o]
    if not candidates:
        raise InvalidAction(
            'no answer found: reply with one JSON object {"machine": "<node>", '
            '"command": "<command>"}'
        )
    answer = candidates[-1]
    machine = resolve_machine(answer["machine"], nodes)
    command = answer["command"]
    if not isinstance(command, str):
        raise InvalidAction('"command" must be a string')
    command = command.strip()
    check_command(command)
    return Action(machine, command)


def check_command(command: str) -> None:
    """Refuse unusable commands and the few harms the sandbox cannot stop.

    Raises:
        InvalidAction: Empty, too long, or with an unprintable character (NUL, a lone
            surrogate, zero-width or bidi controls hide what it does or cannot run).
        ForbiddenCommand: A packet flood, or an iptables target that writes host files.
    """
    if not command:
        raise InvalidAction("empty command")
    if len(command) > MAX_COMMAND_CHARS:
        raise InvalidAction(f"command longer than {MAX_COMMAND_CHARS} characters")
    if bad := unprintable_character(command):
        raise InvalidAction(f"unprintable character {bad} in the command")
    if _HOST_WRITING_TARGETS.search(command):
        raise ForbiddenCommand(
            "the IDLETIMER, LED and AUDIT targets make the kernel write host state; "
            "they are not allowed"
        )
    for words in _commands(command):
        for index, word in enumerate(words):  # also behind sudo, timeout, xargs...
            if word.rsplit("/", 1)[-1] == "ping":
                _check_ping(words[index + 1 :])


def _commands(command: str) -> list[list[str]]:
    """The simple commands of a command line, split on ``;``, ``&&``, ``||``, ``|``."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        tokens = list(lexer)
    except ValueError:
        return [command.split()]
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set(";&|"):
            commands.append([])
        else:
            commands[-1].append(token)
    return commands


def _flags(token: str) -> str:
    """The option letters getopt reads from ``token`` (``-nc3`` is ``-n -c 3``)."""
    if not token.startswith("-") or token.startswith("--") or token == "-":
        return ""
    letters = ""
    for ch in token[1:]:
        letters += ch
        if ch in _PING_VALUE_LETTERS:
            break
    return letters


def _number(text: str) -> float | None:
    """``text`` as ping's strtod reads it (``0x0`` is hexadecimal zero), or ``None``."""
    for parse in (float, float.fromhex):
        try:
            return parse(text)
        except ValueError:
            continue
    return None


def _check_ping(args: list[str]) -> None:
    """Refuse a ping flood that does not end by its count (``FLOOD_MAX_COUNT``).

    A root user floods a real box with ``ping -f -c 100``, and here the switch fabric's ICMP
    limit (``limits.ICMP_RATE_PER_S`` a second per node, after a burst) bounds any flood,
    so a flood of at most ``FLOOD_MAX_COUNT`` packets runs as on a real box, its replies
    within the burst. One without a count, or a longer one, would run until the time limit
    at tens of thousands of packets a second, eating the burst the judge's probes share.
    """
    flood, count = "", None
    for i, token in enumerate(args):
        flags = _flags(token)
        if "f" in flags:
            flood = "ping -f"
        for letter in ("c", "i", "l"):
            if not flags.endswith(letter):
                continue
            value = token[1 + len(flags) :] or (args[i + 1] if i + 1 < len(args) else "")
            number = _number(value)
            if number is None:
                continue
            if letter == "c":
                count = number
            elif letter == "l" and number >= 1:
                flood = flood or "ping -l (preload)"
            elif letter == "i" and number < _PING_MIN_INTERVAL_S:
                flood = flood or f"a ping interval under {_PING_MIN_INTERVAL_S} s"
    if flood and not (count is not None and 1 <= count <= FLOOD_MAX_COUNT):
        raise ForbiddenCommand(
            f"{flood} floods the network unless it ends by its count: add -c N with N at "
            f"most {FLOOD_MAX_COUNT} (e.g. `ping -f -c 100 HOST`); the switch fabric passes "
            f"{ICMP_RATE_PER_S} ICMP packets a second per node after a burst of {ICMP_BURST}"
        )
