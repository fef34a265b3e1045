"""An agent's earlier commands and their outputs, as the observation's history shows them.

Stateless solvers (the reference, the baselines) read their own diagnostics back from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Entry", "Move", "each_once", "read_history"]

_ENTRY = re.compile(r"^\[turn (\d+)\] (\S+) \$ (.*)$")


_EXIT = re.compile(r"^\[exit (-?\d+)\]$")


@dataclass(frozen=True)
class Entry:
    """One earlier turn: its position, the machine, the command and what it printed."""

    index: int
    machine: str
    command: str
    output: str


def read_history(text: str) -> list[Entry]:
    """The turns an observation's history shows, oldest first (as ``Turn.render`` writes them)."""
    section = text.split("## History of your commands", 1)[-1]
    entries: list[Entry] = []
    current: tuple[str, str] | None = None
    lines: list[str] = []
    for line in section.splitlines():
        if m := _ENTRY.match(line):
            current, lines = (m.group(2), m.group(3)), []
        elif current is not None and _EXIT.match(line):
            entries.append(Entry(len(entries), current[0], current[1], "\n".join(lines)))
            current = None
        elif current is not None:
            lines.append(line)
    return entries


Move = tuple[str, str]
"""``(machine, command)``."""


def each_once(text: str, command: str, machines: Sequence[str]) -> Move | None:
    """``command`` on the first of ``machines`` the history shows no run of it on."""
    done = {e.machine for e in read_history(text) if e.command == command}
    return next(((m, command) for m in machines if m not in done), None)
