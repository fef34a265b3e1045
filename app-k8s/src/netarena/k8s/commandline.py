"""Commands as operators write them, read without a shell.

Operators paste multi-line commands: ``kubectl apply -f - <<EOF`` with the manifest
below, backslash continuations, ``$'…'`` quoting (the original NetArena few-shot's
multi-line ``-p $'…'`` patches), ``cat <<EOF | kubectl apply -f -``. This module reads a
command block the way bash would *parse* it (quotes, ANSI-C escapes, continuations,
comments, here-documents, here-strings) and nothing more: no expansion, no execution.
What only a shell could do is refused with the reason:

* command substitution (``$(…)``, backticks) and redirection from or to a host file
  run programs or touch files on the evaluator: ``ForbiddenCommand``;
* variable expansion, pipes into filters, chaining several commands: ``InvalidAction``
  (nothing ran; the agent is told to send one plain command).

The result is a list of ``SimpleCommand`` (argv, stdin from a here-document) joined by
the operators between them; ``actions`` decides which of them may run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from netarena.common.core.commands import unprintable_character
from netarena.common.core.errors import ForbiddenCommand, InvalidAction

__all__ = ["SimpleCommand", "Script", "parse_script", "display"]

MAX_SCRIPT_CHARS = 60_000
"""Longest command block read: k8s owns this limit (``core.commands`` holds none). A block can
carry a here-document manifest of every NetworkPolicy of the application, which fits easily;
a reply is cut at ``core.replies.MAX_REPLY_CHARS`` before it is read at all."""
_OPERATORS = ("<<<", "<<-", "&&", "||", ">>", ">&", "<&", "<<", "|", "&", ";", "<", ">",
              "(", ")", "\n")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[{][A-Za-z_@*#?0-9]|[@*#?$!0-9-]")
_ANSI = {"a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b", "f": "\f", "n": "\n", "r": "\r",
         "t": "\t", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


@dataclass
class SimpleCommand:
    """One command of a block: its words and where its standard input comes from."""

    argv: list[str] = field(default_factory=list)
    """The words after quote removal."""
    stdin: str | None = None
    """Text of a here-document or here-string, if any."""
    redirects: list[str] = field(default_factory=list)
    """Other redirections as written (``> out.txt``, ``2>&1``): never performed."""


@dataclass
class Script:
    """A parsed command block: simple commands and the operators that join them."""

    commands: list[SimpleCommand]
    """In order; empty commands (blank or comment lines) are dropped."""
    joins: list[str]
    """The operator after each command but the last (``|``, ``&&``, ``;``, newline...)."""


class _Lexer:
    """Splits a block into words and operators, the way bash tokenises it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.tokens: list[tuple[str, str]] = []  # ("word"|"op"|"body", value)
        self._pending: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)

    def run(self) -> list[tuple[str, str]]:
        while self.i < len(self.text):
            ch = self.text[self.i]
            if ch in " \t":
                self.i += 1
            elif ch == "\\" and self.text.startswith("\\\n", self.i):
                self.i += 2
            elif ch == "#":
                end = self.text.find("\n", self.i)
                self.i = len(self.text) if end < 0 else end
            elif op := self._operator():
                self.i += len(op)
                self.tokens.append(("op", op))
                if op == "\n" and self._pending:
                    self._bodies()
                elif op in ("<<", "<<-"):
                    self._delimiter(strip_tabs=op == "<<-")
            else:
                self.tokens.append(("word", self._word()))
        if self._pending:
            self._bodies()
        return self.tokens

    def _operator(self) -> str | None:
        return next((op for op in _OPERATORS if self.text.startswith(op, self.i)), None)

    def _word(self) -> str:
        out: list[str] = []
        text = self.text
        while self.i < len(text):
            ch = text[self.i]
            if ch in " \t" or self._operator():
                break
            if ch == "\\":
                if text.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                out.append(text[self.i + 1:self.i + 2])
                self.i += 2
            elif ch == "'":
                end = text.find("'", self.i + 1)
                if end < 0:
                    raise InvalidAction("cannot parse command: a ' quote is not closed")
                out.append(text[self.i + 1:end])
                self.i = end + 1
            elif text.startswith("$'", self.i):
                out.append(self._ansi_c())
            elif ch == '"':
                out.append(self._double())
            elif ch == "`" or text.startswith("$(", self.i):
                raise ForbiddenCommand("command substitution ($(...) or backticks) would run "
                                       "a program on the evaluator; send one plain command")
            elif ch == "$" and _NAME.match(text, self.i + 1):
                raise InvalidAction("shell variables are not expanded here; write the value")
            else:
                out.append(ch)
                self.i += 1
        return "".join(out)

    def _ansi_c(self) -> str:
        text, i, out = self.text, self.i + 2, []
        while i < len(text) and text[i] != "'":
            if text[i] != "\\" or i + 1 >= len(text):
                out.append(text[i])
                i += 1
                continue
            nxt = text[i + 1]
            if nxt in _ANSI:
                out.append(_ANSI[nxt])
                i += 2
            elif nxt in "xuU":
                size = {"x": 2, "u": 4, "U": 8}[nxt]
                digits = re.match(f"[0-9A-Fa-f]{{1,{size}}}", text[i + 2:])
                if not digits:
                    out.append("\\" + nxt)
                    i += 2
                    continue
                out.append(chr(int(digits.group(), 16)))
                i += 2 + len(digits.group())
            elif nxt in "01234567":
                digits = re.match(r"[0-7]{1,3}", text[i + 1:])
                assert digits is not None
                out.append(chr(int(digits.group(), 8)))
                i += 1 + len(digits.group())
            else:
                out.append("\\" + nxt)
                i += 2
        if i >= len(text):
            raise InvalidAction("cannot parse command: a $' quote is not closed")
        self.i = i + 1
        return "".join(out)

    def _double(self) -> str:
        text, i, out = self.text, self.i + 1, []
        while i < len(text) and text[i] != '"':
            ch = text[i]
            if ch == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
                if text[i + 1] != "\n":
                    out.append(text[i + 1])
                i += 2
                continue
            if ch == "`" or text.startswith("$(", i):
                raise ForbiddenCommand("command substitution ($(...) or backticks) would run "
                                       "a program on the evaluator; send one plain command")
            if ch == "$" and _NAME.match(text, i + 1):
                raise InvalidAction("shell variables are not expanded here; write the value")
            out.append(ch)
            i += 1
        if i >= len(text):
            raise InvalidAction('cannot parse command: a " quote is not closed')
        self.i = i + 1
        return "".join(out)

    def _delimiter(self, strip_tabs: bool) -> None:
        while self.i < len(self.text) and self.text[self.i] in " \t":
            self.i += 1
        raw_start = self.i
        word = self._word()
        if not word:
            raise InvalidAction("cannot parse command: << needs a delimiter word (<<EOF)")
        quoted = any(q in self.text[raw_start:self.i] for q in "'\"\\")
        self.tokens.append(("delim", word))
        self._pending.append((word, strip_tabs, quoted))

    def _bodies(self) -> None:
        for word, strip_tabs, quoted in self._pending:
            lines = []
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                line = self.text[self.i:] if end < 0 else self.text[self.i:end]
                self.i = len(self.text) if end < 0 else end + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line.strip() == word:
                    break
                lines.append(line)
            body = "".join(ln + "\n" for ln in lines)
            if not quoted and ("`" in body or "$(" in body):
                raise ForbiddenCommand("command substitution in a here-document would run a "
                                       "program on the evaluator; quote the delimiter (<<'EOF')")
            self.tokens.append(("body", body))
        self._pending = []


def _check_redirect(op: str, target: str) -> None:
    """Refuse a redirection: fd duplication and /dev/null are harmless, files are not."""
    if op in (">&", "<&") or target == "/dev/null":
        return
    raise ForbiddenCommand(f"redirection {op} {target} would read or write a file on the "
                           "evaluator; send the command alone, its output is shown to you")


def _assemble(tokens: list[tuple[str, str]]) -> Script:
    commands: list[SimpleCommand] = []
    joins: list[str] = []
    current = SimpleCommand()
    pending_doc: list[SimpleCommand] = []  # commands whose here-doc body comes later
    i = 0
    while i < len(tokens):
        kind, value = tokens[i]
        if kind == "word":
            current.argv.append(value)
        elif kind == "delim":
            pending_doc.append(current)
        elif kind == "body":
            pending_doc.pop(0).stdin = value
        elif value == "<<<":
            if i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
                raise InvalidAction("cannot parse command: <<< needs a word")
            current.stdin = tokens[i + 1][1] + "\n"
            i += 1
        elif value in ("<<", "<<-"):
            pass  # the delimiter token follows
        elif value in ("<", ">", ">>", ">&", "<&"):
            target = tokens[i + 1][1] if i + 1 < len(tokens) and tokens[i + 1][0] == "word" else ""
            if current.argv and current.argv[-1].isdigit():
                current.argv.pop()  # the file descriptor of 2>&1, 2>/dev/null
            _check_redirect(value, target)
            current.redirects.append(value + target)
            i += 1
        elif value in ("(", ")"):
            raise InvalidAction("subshells are not supported; send one plain command")
        else:
            if current.argv or current.stdin is not None:
                commands.append(current)
                joins.append(value)
            current = SimpleCommand()
        i += 1
    if current.argv or current.stdin is not None:
        commands.append(current)
    if pending_doc:
        raise InvalidAction("cannot parse command: a here-document has no body")
    while joins and joins[-1] in ("\n", ";"):
        joins.pop()
    return Script(commands, joins[: max(len(commands) - 1, 0)])


def parse_script(text: str) -> Script:
    """Parse a command block (one or several lines) into simple commands.

    A leading ``$ `` prompt on a line is dropped, as operators paste it.

    Raises:
        ForbiddenCommand: Command substitution or file redirection.
        InvalidAction: Unbalanced quotes, variables, subshells, an empty block.
    """
    if len(text) > MAX_SCRIPT_CHARS:
        raise InvalidAction(f"command block longer than {MAX_SCRIPT_CHARS} characters")
    if bad := unprintable_character(text):
        raise InvalidAction(f"unprintable character {bad} in the command")
    text = re.sub(r"(?m)^[ \t]*\$ (?=\S)", "", text.replace("\r\n", "\n"))
    script = _assemble(_Lexer(text).run())
    if not script.commands:
        raise InvalidAction("empty command")
    if any("\x00" in word for cmd in script.commands for word in cmd.argv):
        raise InvalidAction("a NUL character cannot be passed to a command")
    return script


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./{}\[\]*-]+", word):
        return word
    if "\n" in word or "\t" in word:
        escaped = word.replace("\\", "\\\\").replace("'", "\\'")
        return "$'" + escaped.replace("\n", "\\n").replace("\t", "\\t") + "'"
    return "'" + word.replace("'", "'\"'\"'") + "'"


def display(argv: list[str]) -> str:
    """One line that reads back as ``argv`` (multi-line values shown as ``$'…'``)."""
    return " ".join(_quote(w) for w in argv)
