"""Warnings about the host shown once per terminal session, not once per command.

A script that runs ``netarena`` ten times (``scripts/demo.sh``) would otherwise print the
same note about this machine ten times. A note is new to a session (``os.getsid``, told
apart from a later session with a reused id by its leader's start time) until
``first_in_session`` has seen it; later commands of that session log it at INFO (``-v``
shows it). Seen notes are kept in a per-user directory (``$XDG_RUNTIME_DIR`` or the
temporary directory, mode 0700); where that cannot be used, every note counts as new.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path

__all__ = ["first_in_session", "log_once_per_session"]


def _session_key() -> str | None:
    """``<sid>-<leader start time>``, or ``None`` when the session cannot be named."""
    try:
        sid = os.getsid(0)
        with open(f"/proc/{sid}/stat", encoding="ascii") as stat:
            started = stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None
    return f"{sid}-{started}"


def _store() -> Path | None:
    """The per-user directory of seen notes (created private), or ``None``."""
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"netarena-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError:
        return None
    if folder.is_symlink() or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None  # not ours alone: do not trust or write it
    return folder


def _prune(folder: Path) -> None:
    """Forget sessions whose leader is gone."""
    for path in folder.glob("session-*"):
        sid = path.name.removeprefix("session-").split("-", 1)[0]
        if sid.isdigit() and not Path(f"/proc/{sid}").exists():
            path.unlink(missing_ok=True)


def first_in_session(note: str) -> bool:
    """Whether this terminal session has not been shown ``note`` yet (then remember it)."""
    key, folder = _session_key(), _store()
    if key is None or folder is None:
        return True
    digest = hashlib.sha256(note.encode()).hexdigest()[:16]
    path = folder / f"session-{key}"
    try:
        if digest in path.read_text(encoding="ascii").split():
            return False
    except (OSError, UnicodeDecodeError):
        _prune(folder)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a", encoding="ascii") as seen:
            seen.write(digest + "\n")
    except OSError:
        pass
    return True


def log_once_per_session(logger: logging.Logger, note: str) -> None:
    """Log ``note`` as a warning the first time in this session, at INFO afterwards."""
    logger.log(logging.WARNING if first_in_session(note) else logging.INFO, "%s", note)
