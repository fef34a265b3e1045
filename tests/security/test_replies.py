"""Hostile replies against the shared parsers: huge, deeply nested, pathological, unprintable."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from netarena.common.core.errors import InvalidAction
from netarena.common.core.replies import code_blocks, json_objects, last_code_block

# The fence regex the parser used to have: quadratic on a long unclosed fence.
_OLD_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)

PATHOLOGICAL = {
    "unclosed-fence-letters": "```" + "a" * 1_000_000,
    "unclosed-fence-spaces": "```" + " " * 1_000_000,
    "fence-openers": "```" * 300_000,
    "json-braces": "{" * 1_000_000,
    "json-deep-objects": '{"a":' * 200_000,
    "json-deep-lists": '{"a":' + "[" * 1_000_000,
    "json-huge-int": '{"a": ' + "9" * 1_000_000 + "}",
    "fifty-megabytes": "x" * 50_000_000,
}


@pytest.mark.serial
@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_replies_parse_fast(name: str) -> None:
    """Before the fix a 200k unclosed fence took 25 s and deep JSON raised RecursionError."""
    text = PATHOLOGICAL[name]
    started = time.perf_counter()
    assert code_blocks(text) == [] or name == "fence-openers"
    assert json_objects(text) == []
    assert time.perf_counter() - started < 2.0


def test_answers_after_garbage_are_still_found() -> None:
    answer = '{"machine": "r0", "command": "ip route"}'
    assert json_objects("{" * 1500 + " " + answer) == [{"machine": "r0", "command": "ip route"}]
    assert json_objects('{"a":' * 1000 + "\n" + answer)[-1]["machine"] == "r0"
    assert last_code_block("a" * 150_000 + "\n```python\nx = 1\n```") == "x = 1"


def test_fence_scan_matches_the_old_regex_on_ordinary_replies() -> None:
    import random

    rng = random.Random(7)
    alphabet = ["`", "```", "\n", "a", " ", "py", "python", "\t", "x y", "yaml"]
    for _ in range(5000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        old = [m.group(2).strip("\n") for m in _OLD_FENCE.finditer(text)]
        if old:
            assert code_blocks(text) == old, text


def _route_command(line: str) -> None:
    from netarena.route.sandbox.actions import check_command

    check_command(line)


def _k8s_command(line: str) -> None:
    from netarena.k8s.commandline import parse_script

    parse_script(line)


READERS = [pytest.param(_route_command, id="route"), pytest.param(_k8s_command, id="k8s")]
"""The apps' command readers: each refuses unprintable text (``core.commands``) and applies
its own length limit."""


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(
    "line",
    ["ip\x00 route", "ip route\ud800", "ip\u200b route", "ip route \u202e", "ip\x1b[2J route"],
    ids=["nul", "lone-surrogate", "zero-width", "bidi-override", "escape-sequence"],
)
def test_unprintable_commands_are_refused(line: str, read: Callable[[str], None]) -> None:
    with pytest.raises(InvalidAction, match="unprintable character"):
        read(line)


@pytest.mark.parametrize("read", READERS)
def test_megabyte_commands_are_refused(read: Callable[[str], None]) -> None:
    with pytest.raises(InvalidAction, match="longer than"):
        read("ip " + "a" * 1_000_000)


def test_each_app_owns_its_command_limit() -> None:
    from netarena.k8s.commandline import MAX_SCRIPT_CHARS
    from netarena.route.sandbox.actions import MAX_COMMAND_CHARS

    _route_command("echo " + "a" * (MAX_COMMAND_CHARS - 5))
    with pytest.raises(InvalidAction, match=f"longer than {MAX_COMMAND_CHARS}"):
        _route_command("echo " + "a" * (MAX_COMMAND_CHARS - 4))
    _k8s_command("kubectl get pods -l a=" + "b" * (MAX_SCRIPT_CHARS - 22))
    with pytest.raises(InvalidAction, match=f"longer than {MAX_SCRIPT_CHARS}"):
        _k8s_command("kubectl get pods -l a=" + "b" * (MAX_SCRIPT_CHARS - 21))
