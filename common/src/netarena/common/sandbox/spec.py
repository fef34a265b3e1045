"""What a sandbox pool runs and within which limits: the spec, the limits and a run's result."""

from __future__ import annotations

import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SAFE_STDLIB", "SandboxLimits", "SandboxResult", "SandboxSpec"]

#: Standard-library modules agent code may import (preloaded before confinement).
SAFE_STDLIB = (
    "math",
    "cmath",
    "statistics",
    "collections",
    "itertools",
    "functools",
    "operator",
    "heapq",
    "bisect",
    "copy",
    "re",
    "json",
    "string",
    "random",
    "decimal",
    "fractions",
    "typing",
    "dataclasses",
    "enum",
    "numbers",
    "datetime",
    "abc",
    "types",
    "textwrap",
    "pprint",
    "array",
    "time",
    "contextlib",
    "warnings",
    "traceback",
    "encodings.idna",
)


class SandboxLimits(BaseModel):
    """Per-answer resource limits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: float = Field(5.0, gt=0)
    """Wall-clock limit of one run, seconds."""
    cpu_s: int = Field(5, ge=1)
    """CPU-time limit (``RLIMIT_CPU`` soft; the hard limit is one second more)."""
    memory_bytes: int = Field(1_536 * 1024 * 1024, ge=256 * 1024 * 1024)
    """Address-space limit (``RLIMIT_AS``), bytes."""
    open_files: int = Field(32, ge=8)
    """``RLIMIT_NOFILE``."""
    max_output_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    """Largest answer accepted from a run, bytes. The evaluator stops reading (and the child
    dies on its next write) past it, so a larger answer never reaches a parser."""


class SandboxSpec(BaseModel):
    """What the warm workers hold: a setup program, its payload and the import allowlist.

    ``setup_source`` must define ``setup(payload: bytes) -> state`` (run once per worker,
    before confinement) and ``run(state, request: bytes) -> bytes`` (run in each confined
    child). It may import only the standard library and ``preload`` modules.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    setup_source: str
    payload: bytes = b""
    preload: tuple[str, ...] = ()
    """Third-party modules to import in the worker (e.g. ``networkx``)."""
    allowed_imports: tuple[str, ...] = SAFE_STDLIB
    """Top-level module names agent code may import (they must be preloaded to work)."""
    audit_hook: bool = True
    """Arm the audit hook (clear messages for refused files, sockets, imports). Switch it off
    only to test that the kernel layers hold on their own."""

    def key(self) -> str:
        """A digest identifying this spec, for sharing pools."""
        digest = hashlib.sha256(self.setup_source.encode() + b"\0" + self.payload)
        digest.update(json.dumps([self.preload, self.allowed_imports, self.audit_hook]).encode())
        return digest.hexdigest()[:16]


class SandboxResult(BaseModel):
    """One run's output and how it ended."""

    model_config = ConfigDict(frozen=True)

    output: bytes
    """What ``run`` returned (JSON by convention), at most ``max_output_bytes``."""
    run_s: float
    """Fork-to-exit time of the child, seconds."""
