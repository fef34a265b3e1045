"""Results files that nothing planted at their path can hang, redirect or predict.

A FIFO planted where a results file goes used to hang ``netarena run --out DIR`` forever (and
a green server, SIGTERM ignored): opening a FIFO for writing blocks until someone reads. So:

- files are opened with ``O_NOFOLLOW`` (a symlink at the path is refused, not followed) and
  ``O_NONBLOCK`` (a FIFO fails or opens at once instead of blocking), then ``fstat`` must
  show a regular file before a byte is read or written (``UnsafeResultsFile`` otherwise);
- whole files (``summary.json``) are written to a fresh temporary file beside the target
  and renamed over it, so whatever was planted at the path is replaced, never opened;
- the server names per-request files with a digest keyed by a random key kept in the results
  directory (mode 0600), so nobody without that key can predict, let alone pre-create, the
  file a later request will use, while a restarted server still finds its own.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import io
import os
import secrets
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from netarena.common.core.errors import ConfigError

__all__ = ["UnsafeResultsFile", "open_regular", "read_regular", "write_atomic", "keyed_name"]

_KEY_FILE = ".netarena-results-key"
_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class UnsafeResultsFile(ConfigError):
    """A results path holds something other than a regular file (FIFO, symlink, device)."""


def _checked(fd: int, path: Path) -> int:
    """``fd`` if it is a regular file (made blocking again); closed and refused otherwise."""
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "FIFO" if stat.S_ISFIFO(mode) else "device" if stat.S_ISCHR(mode) else "special"
        raise UnsafeResultsFile(f"refusing results path {path}: a {kind} file, not a regular one")
    os.set_blocking(fd, True)
    return fd


def _open(path: Path, flags: int) -> int:
    try:
        fd = os.open(path, flags | _OPEN_FLAGS, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise UnsafeResultsFile(f"refusing results path {path}: a symlink") from exc
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads, opened for writing
            raise UnsafeResultsFile(f"refusing results path {path}: a FIFO") from exc
        raise
    return _checked(fd, path)


def open_regular(path: Path) -> io.TextIOWrapper:
    """``path`` opened for reading and appending (created if absent), as UTF-8 text.

    Raises:
        UnsafeResultsFile: Something other than a regular file is at ``path``.
    """
    fd = _open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
    return io.TextIOWrapper(
        io.FileIO(fd, "r+"), encoding="utf-8", errors="surrogateescape", newline=""
    )


def read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at ``path``, or ``None`` when nothing is there.

    Raises:
        UnsafeResultsFile: Something other than a regular file is at ``path``.
    """
    try:
        fd = _open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with io.FileIO(fd, "r") as stream:
        return stream.read()


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` to ``path`` through a fresh temporary file renamed over it.

    ``text`` may be an iterable of chunks (``json.JSONEncoder.iterencode``), written as
    they come, so a large document is never held whole.
    """
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with open(fd, "w", encoding="utf-8", newline="") as stream:
            if isinstance(text, str):
                stream.write(text)
            else:
                stream.writelines(text)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _directory_key(directory: Path) -> bytes:
    """The random key kept in ``directory`` (created on first use, readable by its owner only)."""
    path = directory / _KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
    except FileExistsError:
        key = read_regular(path)
        if not key or len(key) < 32:
            raise UnsafeResultsFile(f"refusing results key {path}: empty or truncated") from None
        return key
    key = secrets.token_bytes(32)
    with io.FileIO(_checked(fd, path), "w") as stream:
        stream.write(key)
    return key


def keyed_name(directory: Path, prefix: str, identity: str, suffix: str = ".jsonl") -> Path:
    """``directory/<prefix>-<keyed digest of identity><suffix>``: stable, but unpredictable.

    The same ``identity`` (a request) maps to the same file in the same directory, so a
    restarted server resumes it; without the directory's key no one can compute the name.
    """
    directory.mkdir(parents=True, exist_ok=True)
    digest = hmac.new(_directory_key(directory), identity.encode(), hashlib.sha256)
    return directory / f"{prefix}-{digest.hexdigest()[:32]}{suffix}"
