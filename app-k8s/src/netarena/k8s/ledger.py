"""Every write an agent attempted, and which ones went to objects it had not looked at.

Look before you change: on a production cluster a change goes to an object whose current
state the operator has just looked at. A write attempt (any command whose verb changes
objects, ``WRITE_VERBS``: it ran, failed (a JSON-patch ``test``, a conflict), was a dry run
or was refused by the allowlist) is *blind* when it targets an existing object whose spec
this episode has not shown the agent: by a read whose output held it (``shown``: ``get -o
yaml|json``, ``describe``, a jsonpath printing ``.spec``), or by the agent's own earlier
successful write to that object. Guards do not help: a ``test`` op is a guess at a value
the agent never saw. A read that showed nothing (an empty list, another namespace, a
jsonpath that printed nothing) shows nothing. Creating an object that does not exist yet
is not blind (there was nothing to look at); a write by label selector or ``--all`` is
blind unless every object of that kind in the namespace was shown.
"""

from __future__ import annotations

import shlex
from typing import Any

from netarena.common.core.errors import InvalidAction
from netarena.common.core.replies import code_blocks
from netarena.k8s.actions import WRITE_VERBS, resource_targets
from netarena.k8s.kubectl_args import ParsedArgs, parse_args, resource_kind
from netarena.k8s.manifest_input import manifest_docs
from netarena.k8s.shown import Key, Lister, shown_objects

__all__ = ["WriteLedger"]


class WriteLedger:
    """Write attempts, blind ones among them, and what the agent has been shown.

    Args:
        namespace: The task's namespace (kubectl's default for the agent).
        lister: The cluster's objects now, ``(kind, namespace) -> objects`` (existence of
            a write's targets, objects a template output printed). ``None``: every target
            is taken to exist and templates show nothing.
    """

    def __init__(self, namespace: str = "default", lister: Lister | None = None) -> None:
        self.namespace = namespace
        self._lister = lister
        self.shown: set[Key] = set()
        """Objects whose spec the agent has seen (or written itself)."""
        self.attempts = 0
        self.blind = 0
        self._pending: list[Key] = []

    def _words(self, argv: list[str]) -> ParsedArgs | None:
        words = argv[1:] if argv[:1] == ["kubectl"] else argv
        try:
            p = parse_args(words)
        except InvalidAction:
            return None
        return p if p.positional else None

    def _ns(self, p: ParsedArgs) -> str:
        values = [v for v in p.values("-n", "--namespace") if v]
        return values[-1] if values else self.namespace

    def _names(self, kind: str, namespace: str) -> list[str] | None:
        if self._lister is None:
            return None
        return [str((o.get("metadata") or {}).get("name"))
                for o in self._lister(kind, namespace)]

    def _targets(self, p: ParsedArgs, stdin: str | None) -> list[Key] | None:
        """Existing objects the write goes to; ``None`` when it cannot be told."""
        verb, rest = p.positional[0], p.positional[1:]
        ns = self._ns(p)
        out: list[Key] = []
        if p.values("-f", "--filename"):
            try:
                docs = manifest_docs(stdin) if stdin is not None else []
            except InvalidAction:
                return None
            for doc in docs:
                found = doc.get("metadata")
                meta: dict[str, Any] = found if isinstance(found, dict) else {}
                kind = resource_kind(str(doc.get("kind", "")).lower())
                if kind is None or not meta.get("name"):
                    return None
                out.append((kind, str(meta.get("namespace") or ns), str(meta["name"])))
            return out or None
        for kind, name in resource_targets(verb, rest):
            if kind is None:
                return None
            if name is not None and not p.values("-l", "--selector"):
                out.append((kind, ns, name))
                continue
            names = self._names(kind, ns)  # by selector or --all: every object of the kind
            if names is None:
                return None
            out += [(kind, ns, n) for n in names]
        return out or None

    def record(self, argv: list[str], stdin: str | None = None) -> None:
        """Account for one command before it runs (``kubectl`` first, or the words after it)."""
        self._pending = []
        p = self._words(argv)
        if p is None or p.positional[0] not in WRITE_VERBS:
            return
        self.attempts += 1
        targets = self._targets(p, stdin)
        if targets is None:
            self.blind += 1
            return
        existing = [t for t in targets if self._exists(t)]
        if any(t not in self.shown for t in existing):
            self.blind += 1
        self._pending = targets

    def _exists(self, key: Key) -> bool:
        names = self._names(key[0], key[1])
        return names is None or key[2] in names

    def observe(self, argv: list[str], stdout: str, exit_code: int) -> None:
        """Account for what a command that ran printed (and, for a write, what it wrote)."""
        p = self._words(argv)
        if p is None:
            return
        dry = [v for v in p.values("--dry-run")]
        if exit_code == 0 and p.positional[0] in WRITE_VERBS and (not dry or dry[-1] == "none"):
            self.shown.update(self._pending)
        self._pending = []
        self.shown |= shown_objects(p, stdout, self._ns(p), self._lister)

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
        self._pending = []

