"""Command blocks as operators write them, parsed like bash parses (never executed)."""

from __future__ import annotations

import time

import pytest
import yaml

from netarena.common.core.errors import ForbiddenCommand, InvalidAction
from netarena.k8s.commandline import display, parse_script
from netarena.k8s.reply_commands import command_from_reply, parse_kubectl

NS = "default"
POLICY = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: x\n"

# The original NetArena few-shot answer's patch, verbatim in shape: a multi-line $'...'.
FEWSHOT_PATCH = """kubectl patch networkpolicy productcatalogservice -p $'
spec:
  ingress:
  - from:
    - podSelector:
        matchLabels:
          app: frontend
  ports:
    - port: 3550
      protocol: TCP
'"""


def test_multiline_ansi_c_patch_is_one_argument() -> None:
    cmd = parse_kubectl(FEWSHOT_PATCH, NS)
    patch = cmd.argv[cmd.argv.index("-p") + 1]
    assert patch.startswith("\nspec:\n  ingress:\n") and "app: frontend\n" in patch
    assert cmd.mutating and cmd.argv[-1] == "--namespace=default"
    assert "\n" not in cmd.text and cmd.text.startswith("kubectl patch networkpolicy")


def test_one_line_ansi_c_escapes() -> None:
    cmd = parse_kubectl(r"kubectl patch netpol x --type merge -p $'spec:\n  egress:\n  - {}\n'", NS)
    assert cmd.argv[6] == "spec:\n  egress:\n  - {}\n"
    assert parse_script(r"echo $'a\tb\x41\u00e9\101\'q'").commands[0].argv[1] == "a\tbAéA'q"


@pytest.mark.parametrize("text", [
    f"kubectl apply -f - <<EOF\n{POLICY}EOF",
    f"kubectl apply -f - <<'EOF'\n{POLICY}EOF\n",
    f"kubectl apply -f - <<\"YAML\"\n{POLICY}YAML",
    "kubectl apply -f - <<-EOF\n\tapiVersion: networking.k8s.io/v1\n\tkind: NetworkPolicy\n"
    "\tmetadata:\n\t  name: x\n\tEOF",
    f"cat <<EOF | kubectl apply -f -\n{POLICY}EOF",
    f"cat <<'EOF' | kubectl apply -f -\n{POLICY}EOF",
    f"kubectl apply -f - <<EOF\n{POLICY}",  # an unterminated body runs to the end, as bash does
])
def test_heredoc_apply_feeds_the_manifest(text: str) -> None:
    cmd = parse_kubectl(text, NS)
    assert cmd.verb == "apply" and cmd.stdin is not None
    docs = list(yaml.safe_load_all(cmd.stdin))  # kubectl gets the checked manifest as JSON
    assert [(d["kind"], d["metadata"]["name"]) for d in docs] == [("NetworkPolicy", "x")]
    assert "EOF" not in cmd.stdin


def test_backslash_continuations_and_comments() -> None:
    text = ("# look at one policy\nkubectl get networkpolicy \\\n    adservice \\\n"
            "    -o yaml   # as yaml\n")
    assert parse_kubectl(text, NS).argv == ("get", "networkpolicy", "adservice", "-o", "yaml",
                                            "--namespace=default")


def test_prompt_marks_quotes_and_fd_redirections() -> None:
    assert parse_kubectl("$ kubectl get pods 2>&1", NS).argv == ("get", "pods",
                                                                  "--namespace=default")
    assert parse_kubectl("kubectl get pods 2>/dev/null", NS).verb == "get"
    cmd = parse_kubectl('kubectl get netpol -o "jsonpath={.items[*].metadata.name}"', NS)
    assert cmd.argv[3] == "jsonpath={.items[*].metadata.name}"


def test_display_reads_back() -> None:
    argv = ["kubectl", "patch", "netpol", "x", "-p", "spec:\n  a: 'b'\n", "--type=merge"]
    assert parse_script(display(argv)).commands[0].argv == argv


@pytest.mark.parametrize(("text", "forbidden"), [
    ("kubectl get pods $(id)", True),
    ("kubectl get pods \"$(id)\"", True),
    ("kubectl apply -f - <<EOF\nname: $(id)\nEOF", True),
    ("kubectl get pods > out.txt", True),
    ("kubectl apply -f - < /etc/passwd", True),
    ("kubectl get pods $NS", False),
    ("kubectl get 'pods", False),
    ("kubectl get pods (x)", False),
])
def test_shell_only_constructs(text: str, forbidden: bool) -> None:
    with pytest.raises(InvalidAction) as info:
        parse_kubectl(text, NS)
    assert isinstance(info.value, ForbiddenCommand) == forbidden


def test_quoted_heredoc_keeps_dollars_literal() -> None:
    cmd = parse_kubectl("kubectl apply -f - <<'EOF'\n" + POLICY + "  labels: {a: $(x)}\nEOF", NS)
    assert cmd.stdin is not None and "$(x)" in cmd.stdin


def test_the_first_command_block_runs() -> None:
    reply = ("I'll check the policy first.\n```\nkubectl get netpol adservice -o yaml\n```\n"
             "then maybe\n```\nkubectl delete netpol adservice\n```")
    assert command_from_reply(reply, NS).verb == "get"


def test_a_block_of_notes_holds_no_command() -> None:
    """Only comments: the next block's command runs (it was refused as "empty command")."""
    reply = ("```\n# plan: read the policy, then fix the port\n```\n"
             "```\nkubectl get netpol adservice -o yaml\n```")
    assert command_from_reply(reply, NS).verb == "get"


@pytest.mark.parametrize("line", ["kubectl create --edit -f -", "kubectl apply edit-last-applied "
                                  "netpol x"])
def test_editors_are_refused_as_interactive(line: str) -> None:
    with pytest.raises(InvalidAction, match="interactive") as info:
        command_from_reply(f"```\n{line}\n```\n```yaml\n{POLICY}\n```", NS)
    assert not isinstance(info.value, ForbiddenCommand)


def test_a_yaml_block_followed_by_apply() -> None:
    reply = f"Here is the fix:\n```yaml\n{POLICY}spec:\n  podSelector: {{}}\n```\n" \
            "```bash\nkubectl apply -f -\n```"
    cmd = command_from_reply(reply, NS)
    assert cmd.verb == "apply" and cmd.stdin is not None and "podSelector" in cmd.stdin


def test_bare_replies_and_their_continuations() -> None:
    reply = "Run this:\nkubectl get networkpolicy \\\n  -o wide\nThat shows them."
    assert command_from_reply(reply, NS).argv[:3] == ("get", "networkpolicy", "-o")
    with pytest.raises(InvalidAction, match="no command found"):
        command_from_reply("I am not sure.", NS)


def test_refusals_carry_the_command_for_the_history() -> None:
    with pytest.raises(ForbiddenCommand) as info:
        command_from_reply("```\nkubectl delete deploy frontend\n```", NS)
    assert info.value.action == "kubectl delete deploy frontend"


_DEEP = "kind: NetworkPolicy\nmetadata: {name: x}\nspec: " + "[" * 20000 + "]" * 20000 + "\n"


@pytest.mark.serial
@pytest.mark.parametrize("reply", [
    f"```\nkubectl apply -f - <<'EOF'\n{_DEEP}EOF\n```",
    f"```yaml\n{_DEEP}```\n```\nkubectl apply -f -\n```",
], ids=["heredoc", "yaml-block"])
def test_a_manifest_nested_too_deep_is_refused_not_a_crash(reply: str) -> None:
    """PyYAML spent ~40 s of the evaluator's CPU (quadratic in the depth), then gave up
    with RecursionError: the query crashed, unscored. Now a quick, plain refusal."""
    start = time.monotonic()
    with pytest.raises(InvalidAction, match="nests") as info:
        command_from_reply(reply, NS)
    assert not isinstance(info.value, ForbiddenCommand)
    assert time.monotonic() - start < 5


def test_plain_commands_split_into_their_words() -> None:
    (command,) = parse_script("  kubectl patch np x -p '{\"spec\": {}}' ").commands
    assert command.argv == ["kubectl", "patch", "np", "x", "-p", '{"spec": {}}']
