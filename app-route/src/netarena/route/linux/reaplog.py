"""A journal of the networks a cleanup removed for want of a live owner.

A network that vanishes under a running episode is then explained by the episode's error
(``namespaces.enter`` quotes it), not guessed at. It lives beside the owner files, in
``/run``: a reboot clears both.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

__all__ = ["note_reap", "reap_note"]

_NAME = "reaped.log"


def note_reap(owner_dir: Path, prefix: str, why: str) -> None:
    """Append who removes ``prefix``'s network, why, and what its owner file said."""
    try:
        owner = (owner_dir / f"{prefix}.pid").read_text().strip() or "empty"
    except OSError as exc:
        owner = f"unreadable ({exc.strerror})"
    with contextlib.suppress(OSError), open(owner_dir / _NAME, "a") as journal:
        journal.write(f"{time.time():.0f} {prefix} by pid {os.getpid()}: {why}; "
                      f"owner file: {owner}\n")


def reap_note(owner_dir: Path, prefix: str) -> str:
    """`` (reaped: <the journal's last line about prefix>)``; empty when no cleanup took it."""
    with contextlib.suppress(OSError):
        journal = (owner_dir / _NAME).read_text().splitlines()
        if lines := [line for line in journal if f" {prefix} " in line]:
            return f" (reaped: {lines[-1]})"
    return ""
