"""Every write an agent attempted, refused and failed ones included (no free guesses)."""

from __future__ import annotations

import shlex

from netarena.common.core.errors import InvalidAction
from netarena.common.core.replies import code_blocks
from netarena.k8s.actions import WRITE_VERBS, resource_targets
from netarena.k8s.kubectl_args import (
    parse_args,
    resource_kind,
)
from netarena.k8s.manifest_input import manifest_docs

__all__ = ["ALL", "WriteLedger"]


ALL = "*"
"""A read of every object of a kind (``kubectl get networkpolicy``)."""


class WriteLedger:
    """Every write the agent attempted, and which ones went to objects it never read.

    A write attempt is any command whose verb changes objects (``WRITE_VERBS``), whether
    it ran, failed (a JSON-patch ``test``, a conflict), was a dry run or was refused by
    the allowlist. It is *blind* when it targets an object the agent had not read (by
    name, or by listing its kind) earlier in the episode.
    """

    def __init__(self) -> None:
        self.reads: set[tuple[str | None, str]] = set()
        self.attempts = 0
        self.blind = 0

    def record(self, argv: list[str], stdin: str | None = None) -> None:
        """Account for one command (``kubectl`` first, or the words after it)."""
        words = argv[1:] if argv[:1] == ["kubectl"] else argv
        try:
            p = parse_args(words)
        except InvalidAction:
            return
        if not p.positional:
            return
        verb, rest = p.positional[0], p.positional[1:]
        if verb in ("get", "describe"):
            for kind, name in resource_targets(verb, rest):
                self.reads.add((kind, name or ALL))
            return
        if verb not in WRITE_VERBS:
            return
        self.attempts += 1
        from_file = p.values("-f", "--filename")
        targets: list[tuple[str | None, str | None]] = (
            [] if from_file else resource_targets(verb, rest))
        if stdin is not None and "-" in from_file:
            try:
                docs = manifest_docs(stdin)
            except InvalidAction:
                docs = []
            for doc in docs:
                meta = doc.get("metadata")
                name = meta.get("name") if isinstance(meta, dict) else None
                targets.append((resource_kind(str(doc.get("kind", "")).lower() + "s")
                                or str(doc.get("kind")), str(name)))
        if any(not self._was_read(kind, name) for kind, name in targets) or not targets:
            self.blind += 1

    def _was_read(self, kind: str | None, name: str | None) -> bool:
        return (kind, ALL) in self.reads or (name is not None and (kind, name) in self.reads)

    def record_reply(self, reply: str) -> None:
        """Account for a refused reply: its first code block, read without a shell."""
        blocks = code_blocks(reply)
        text = (blocks[0] if blocks else reply).replace("\\\n", " ")
        try:
            words = shlex.split(text.splitlines()[0] if text else "")
        except ValueError:
            words = text.split()
        if words[:1] == ["kubectl"]:
            self.record(words)
