"""From an agent's reply to one checked kubectl command.

The first command block of a reply is run, as in the original benchmark: a heredoc or a
``cat``/``echo`` pipe feeds its manifest to ``-f -``; anything but one kubectl command is an
invalid action, and every word is checked by the allowlist (``actions.check_kubectl``).
"""

from __future__ import annotations

import yaml

from netarena.common.core.errors import ForbiddenCommand, InvalidAction
from netarena.common.core.replies import code_blocks, strip_reasoning, tool_call_hint
from netarena.k8s.actions import KubectlCommand, check_kubectl
from netarena.k8s.commandline import Script, SimpleCommand, display, parse_script
from netarena.k8s.manifest_input import MAX_FLOW_DEPTH, flow_depth

__all__ = ["command_from_reply", "parse_kubectl"]


_FEEDERS = ("cat", "echo")


def _single(script: Script) -> SimpleCommand:
    """The one kubectl command of a script (a ``cat <<EOF | kubectl ...`` feed included)."""
    cmds, joins = script.commands, script.joins
    if len(cmds) == 2 and joins == ["|"] and cmds[0].argv[:1] and cmds[0].argv[0] in _FEEDERS:
        feeder, kubectl = cmds
        text = feeder.stdin if feeder.argv[0] == "cat" and len(feeder.argv) == 1 else (
            " ".join(feeder.argv[1:]) + "\n" if feeder.argv[0] == "echo" else None)
        if text is not None and kubectl.argv[:1] == ["kubectl"]:
            return SimpleCommand(kubectl.argv, text, kubectl.redirects)
    if len(cmds) == 1:
        return cmds[0]
    shown = "; ".join(display(c.argv) for c in cmds[:3])
    if "|" in joins:
        raise InvalidAction(f"pipes are not supported ({shown}): send the kubectl command "
                            "alone and filter with -o jsonpath, -l or --field-selector")
    raise InvalidAction(f"send exactly one command per turn; this block has {len(cmds)}: "
                        f"{shown}")


def _forbidden_only(cmd: SimpleCommand, namespace: str, manifest: str | None) -> None:
    """Raise ``ForbiddenCommand`` if ``cmd`` attempts one; ignore lesser refusals."""
    try:
        check_kubectl(cmd.argv, namespace, cmd.stdin or manifest)
    except ForbiddenCommand:
        raise
    except InvalidAction:
        return


def _command_of(script: Script, namespace: str, manifest: str | None) -> KubectlCommand:
    if len(script.commands) > 1:  # an attempted forbidden change anywhere counts
        for cmd in script.commands:
            if cmd.argv[:1] == ["kubectl"]:
                _forbidden_only(cmd, namespace, manifest)
    single = _single(script)
    stdin = single.stdin if single.stdin is not None else manifest
    return check_kubectl(single.argv, namespace, stdin)


def parse_kubectl(text: str, namespace: str, stdin: str | None = None) -> KubectlCommand:
    """Validate one command as written (it may span lines) and force it into ``namespace``.

    Args:
        text: The command block (here-documents, continuations and ``$'…'`` allowed).
        namespace: The episode's namespace.
        stdin: Manifest for ``-f -`` when the command has no here-document.

    Raises:
        ForbiddenCommand: An attempted forbidden change (unsafe).
        InvalidAction: Refused for another reason (costs the turn only).
    """
    return _command_of(parse_script(text), namespace, stdin)


def _holds_a_command(block: str) -> bool:
    """Whether a block has a line that is not blank or a comment (notes are skipped)."""
    return any(ln.strip() and not ln.lstrip().startswith("#") for ln in block.splitlines())


def _is_manifest(block: str) -> bool:
    first = next((ln.strip() for ln in block.splitlines()
                  if ln.strip() and not ln.lstrip().startswith("#")), "")
    if first.startswith(("apiVersion:", "kind:", "---", "{", "metadata:", "spec:")):
        return True
    if flow_depth(block) > MAX_FLOW_DEPTH:
        return False
    try:
        doc = next(iter(yaml.safe_load_all(block)), None)
    except yaml.YAMLError:
        return False
    return isinstance(doc, dict) and "kind" in doc


def command_from_reply(reply: str, namespace: str) -> KubectlCommand:
    """The command a reply asks to run (see ``_command_from_reply``).

    Raises:
        ForbiddenCommand: The command attempts a forbidden change.
        InvalidAction: No command, or a refused one (a manifest nested so deep that the
            YAML reader's recursion gives up is refused too, not an episode crash).
    """
    try:
        return _command_from_reply(reply, namespace)
    except RecursionError:
        raise InvalidAction("the reply nests too deeply to read (a manifest thousands of "
                            "levels deep)", action=" ".join(reply.split())[:200]) from None


def _command_from_reply(reply: str, namespace: str) -> KubectlCommand:
    """The command a reply asks to run: its FIRST code block holding a command.

    Reasoning blocks (``<think>…</think>``) are skipped first: a command written while
    thinking is not the answer. An empty or tool-call reply is told how to answer.

    Blocks that are manifests are skipped (the first of them is the stdin of ``-f -``
    when the command carries no here-document). A reply without fences may give the
    command on a line of its own starting with ``kubectl``.

    Raises:
        ForbiddenCommand: The command attempts a forbidden change.
        InvalidAction: No command, or a refused one; ``action`` holds the command text.
    """
    hint = tool_call_hint(reply, "kubectl get networkpolicies")
    if hint is not None:
        raise InvalidAction(hint)
    reply = strip_reasoning(reply)
    blocks = code_blocks(reply)
    manifests = [b for b in blocks if _is_manifest(b)]
    commands = [b for b in blocks if not _is_manifest(b) and _holds_a_command(b)]
    if commands:
        block = commands[0]
    else:
        lines = reply.splitlines()
        start = next((i for i, ln in enumerate(lines)
                      if ln.strip().removeprefix("$ ").startswith("kubectl ")), None)
        if start is None:
            raise InvalidAction("no command found: reply with one kubectl command between "
                                "triple backticks")
        end = start + 1
        while lines[end - 1].rstrip().endswith("\\") and end < len(lines):
            end += 1
        block = "\n".join(lines[start:end])
    try:
        return parse_kubectl(block, namespace, manifests[0] if manifests else None)
    except InvalidAction as exc:
        exc.action = " ".join(block.split())[:200]
        raise
