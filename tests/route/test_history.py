"""Reading an agent's own earlier commands back from the history, across cut outputs."""

from __future__ import annotations

from netarena.common.core.reactive import Turn
from netarena.route.base.history import page_after, paged_read, read_history

READ = "cat /etc/rules"
LINES = [f"rule {i} " + "x" * 40 for i in range(600)]


def _history(*turns: Turn) -> str:
    return "## History of your commands\n" + "\n\n".join(t.render(8000) for t in turns)


def _run(number: int, command: str, skip: int = 0) -> Turn:
    """``command``'s output as a 8000-character sandbox would cut it."""
    text = "\n".join(LINES[skip:])
    cut = text[:8000] + "\n[output cut at 8000 characters]" if len(text) > 8000 else text
    return Turn(number, command, "r0", cut, 0)


def test_a_cut_read_asks_for_its_next_page_then_comes_back_whole() -> None:
    turns = [_run(1, READ)]
    while (read := paged_read(entries := read_history(_history(*turns)), entries[0])).next_page:
        machine, command = read.next_page
        assert machine == "r0" and command.startswith("{ " + READ + "; } | tail -n +")
        skip = int(command.rsplit("+", 1)[1]) - 1
        turns.append(_run(len(turns) + 1, command, skip))
    assert read.output.splitlines() == LINES  # every line once: none lost, none doubled
    assert len(turns) == 4 and read.end == 3  # 29 kB in pages of 8000 characters


def test_a_whole_read_needs_no_page_and_later_turns_are_not_pages() -> None:
    short = Turn(1, READ, "r0", "\n".join(LINES[:3]), 0)
    other = Turn(2, page_after(READ, 99), "r0", "unrelated", 0)
    entries = read_history(_history(short, other))
    read = paged_read(entries, entries[0])
    assert read.next_page is None and read.end == 0
    assert read.output.splitlines() == LINES[:3]
