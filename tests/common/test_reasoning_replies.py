"""Reasoning blocks are skipped before an answer is extracted, in every app (issue 19)."""

from __future__ import annotations

import time

import pytest

from netarena.common.core.replies import code_blocks, json_objects, strip_reasoning, tool_call_hint


@pytest.mark.parametrize(("open_", "close"), [
    ("<think>", "</think>"), ("<THINK>", "</THINK>"), ("<thinking>", "</thinking>"),
    ("<reasoning>", "</reasoning>"), ("[THINK]", "[/THINK]"), ("<seed:think>", "</seed:think>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>")])
def test_blocks_inside_reasoning_are_not_answers(open_: str, close: str) -> None:
    reply = (f"{open_}try ```\nkubectl delete netpol deny-all\n``` or "
             f'{{"machine": "h1", "command": "reboot"}}{close}\n'
             '```\nkubectl get netpol\n```\n{"machine": "r0", "command": "ip route"}')
    assert code_blocks(reply) == ["kubectl get netpol"]
    assert json_objects(reply) == [{"machine": "r0", "command": "ip route"}]


def test_orphan_close_and_unclosed_open() -> None:
    # a chat template put <think> in the prompt: only the close arrives
    assert strip_reasoning("plan: ```\nrm\n```</think>answer") == "answer"
    # cut off while thinking: nothing after the opener is an answer
    assert code_blocks("text <think>```\nkubectl delete ns x\n```") == []
    assert strip_reasoning("no markers at all") == "no markers at all"


def test_route_and_malt_parsers_skip_reasoning() -> None:
    from netarena.malt.episode import extract_code
    from netarena.route.sandbox.actions import parse_reply

    reply = ('<think>{"machine": "h1", "command": "ip link set eth0 down"}</think>'
             '{"machine": "r0", "command": "ip route"}')
    assert parse_reply(reply, ("h1", "r0")).machine == "r0"
    code = "def process_graph(g):\n    return {}\n"
    assert extract_code(f"<think>def process_graph(g): bad</think>\n{code}").strip() \
        == code.strip()


@pytest.mark.serial
def test_stripping_is_linear() -> None:
    text = "<think>" * 30_000 + "</think>" * 20_000
    started = time.perf_counter()
    strip_reasoning(text)
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("reply", [
    "", "<think>only thoughts</think>", '{"tool_calls": [{"id": "1"}]}',
    '<tool_call>{"name": "shell"}</tool_call>', '{"name": "kubectl", "arguments": {}}'])
def test_empty_and_tool_call_replies_get_a_hint(reply: str) -> None:
    hint = tool_call_hint(reply, "kubectl get pods")
    assert hint is not None and "Reply with one command in a code block" in hint
    assert "kubectl get pods" in hint


@pytest.mark.parametrize("reply", [
    "```\nkubectl get pods\n```", '{"machine": "r0", "command": "ip a"}',
    "kubectl get pods"])
def test_ordinary_replies_get_no_hint(reply: str) -> None:
    assert tool_call_hint(reply, "x") is None
