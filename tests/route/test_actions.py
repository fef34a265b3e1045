"""Reply parsing (no emulator needed); the deny list is in tests/security."""

from __future__ import annotations

import pytest

from netarena.common.core.errors import InvalidAction
from netarena.route.sandbox.actions import parse_reply

from .conftest import reply

NODES = ("h1", "h2", "h10", "r0")


@pytest.mark.parametrize(
    "text",
    [
        reply("r0", "ip route"),
        "```json\n" + reply("r0", "ip route") + "\n```",
        "The router lacks a route, so I check it.\n" + reply("r0", "ip route"),
        reply("p29_r0", "ip route"),  # the reference's per-episode node prefix
        reply(" r0 ", "  ip route\n"),
        reply("h1", "ip a") + "\nActually:\n" + reply("r0", "ip route"),
    ],
)
def test_answer_shapes_parse(text: str) -> None:
    action = parse_reply(text, NODES)
    assert (action.machine, action.command) == ("r0", "ip route")


def test_machine_names_are_exact() -> None:
    assert parse_reply(reply("h10", "ip a"), NODES).machine == "h10"
    with pytest.raises(InvalidAction, match="machines are: h1, h2, h10, r0"):
        parse_reply(reply("h3", "ip a"), NODES)
