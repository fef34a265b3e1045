"""An agent's earlier commands and their outputs, as the observation's history shows them.

Stateless solvers (the reference, the baselines) read their own diagnostics back from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from netarena.common.core.reactive import HISTORY_CUT_NOTE
from netarena.route.sandbox.capped import CUT_NOTE_PREFIX

__all__ = ["Entry", "Move", "PagedRead", "each_once", "page_after", "paged_read", "read_history"]

_ENTRY = re.compile(r"^\[turn (\d+)\] (\S+) \$ (.*)$")


_EXIT = re.compile(r"^\[exit (-?\d+)\]$")
_CUT = (HISTORY_CUT_NOTE, CUT_NOTE_PREFIX)
"""How the history and the sandbox mark a cut output."""


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


def page_after(command: str, lines: int) -> str:
    """``command`` again, printing from its line ``lines + 1`` on: the next page of a read.

    Pages count lines, not characters: packet counters change width between two reads.
    """
    return f"{{ {command}; }} | tail -n +{lines + 1}"


@dataclass(frozen=True)
class PagedRead:
    """A read put back together from its pages (``paged_read``)."""

    output: str
    """Every whole line read so far."""
    next_page: Move | None
    """The command for the page still missing; ``None`` once the read is whole."""
    end: int
    """The index of the read's last page in the history."""


def paged_read(history: Sequence[Entry], first: Entry) -> PagedRead:
    """``first``'s read, with the pages after it on its machine, when the output cap cut it.

    A large router's whole reading runs past the cap (twelve subnets' filter rules alone
    do); each cut page loses its cut line, which the next page reads again.
    """
    kept: list[str] = []
    page = first
    while True:
        lines = page.output.splitlines()
        if not (lines and lines[-1].startswith(_CUT)):
            return PagedRead("\n".join(kept + lines), None, page.index)
        if len(lines) <= 2:  # one line longer than the cap: paging cannot get past it
            return PagedRead("\n".join(kept), None, page.index)
        kept += lines[:-2]  # the cut note, and the line it cut short
        command = page_after(first.command, len(kept))
        follow = next((e for e in history if e.index > page.index
                       and e.machine == first.machine and e.command == command), None)
        if follow is None:
            return PagedRead("\n".join(kept), (first.machine, command), page.index)
        page = follow
