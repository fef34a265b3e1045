"""Misbehaving purple agents (real tiny HTTP servers on loopback) cost only their query."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest
from a2a.types import TaskState

from netarena.common.core.agents import Observation
from netarena.common.core.app import Episode
from netarena.common.core.replies import last_code_block
from netarena.common.core.types import Query, StepResult
from netarena.common.serving.server import green_app
from tests.a2a.conftest import evaluate
from tests.a2a.servers import http_response, message_result, prompt_of, raw_server, serving
from tests.helpers.toy import ReferenceToyAgent, ToyApp, ToyEpisode


class FencedToyEpisode(ToyEpisode):
    """Parses like real apps do: the last fenced block, else the bare reply."""

    def _step(self, action: str) -> StepResult:
        return super()._step(last_code_block(action) or action)


class FencedToyApp(ToyApp):
    def open(self, query: Query) -> Episode:
        return FencedToyEpisode(query)


async def _good(prompt: str) -> str:
    return await ReferenceToyAgent().act(Observation(prompt, "c", 0))


def _odd_target(prompt: str) -> bool:
    return int(re.search(r"reach (\d+)", prompt).group(1)) % 2 == 1


def misbehaving(kind: str):
    """A purple agent that answers well for even targets and misbehaves for odd ones."""

    async def on_post(rpc: dict[str, Any], writer: asyncio.StreamWriter) -> None:
        prompt = prompt_of(rpc)
        if not _odd_target(prompt):
            writer.write(http_response(200, message_result(rpc["id"], await _good(prompt))))
        elif kind == "sleep":
            await asyncio.sleep(8)
        elif kind == "http500":
            writer.write(http_response(500, b"internal server error"))
        elif kind == "drop":
            writer.transport.abort()
        elif kind == "garbage":
            writer.write(http_response(200, bytes(range(256)) * 4096, "application/json"))
        elif kind == "huge":
            writer.write(http_response(200, message_result(rpc["id"], "x" * 1_000_000)))
        elif kind == "fenced":
            answer = await _good(prompt)
            text = f"Let me think. The value must grow.\nSo:\n```text\n{answer}\n```\nDone."
            writer.write(http_response(200, message_result(rpc["id"], text)))

    return on_post


CASES = {
    "sleep": r"agent: no answer within 2s",
    "http500": r"^agent: HTTP 500 from http://127\.0\.0\.1:\d+/$",
    "drop": r"^agent: http://127\.0\.0\.1:\d+/ dropped the connection",
    "garbage": r"^agent: unparseable reply from http://127\.0\.0\.1:\d+/ \(not JSON",
    "huge": None,  # a valid reply of 1 MB: cut, rejected as an action, no transport error
}


@pytest.mark.serial
@pytest.mark.parametrize("kind", list(CASES))
async def test_bad_purple_costs_only_its_queries(kind: str) -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        raw_server(misbehaving(kind)) as purple,
    ):
        out = await evaluate(green, {"participants": {"agent": purple}, "config": {
            "num_queries": 8, "seed": 11, "max_turns": 3, "levels": [1],
            "concurrency": 4, "biggest": 3,
            # short only where the timeout is the point (a sleeping agent): on a loaded
            # machine an answer, a dropped connection or a 1 MB reply can take seconds
            "turn_timeout_s": 2.0 if kind == "sleep" else 10.0}})
    assert out.state == TaskState.TASK_STATE_COMPLETED, out.statuses
    assert len(out.queries) == 8
    good = [q for q in out.queries if q["correct"]]
    bad = [q for q in out.queries if not q["correct"]]
    assert good and bad, "seed must give both odd and even targets"
    assert all(q["error"] is None for q in good)
    if CASES[kind] is None:
        assert all(q["error"] is None and q["turns"] == 3 for q in bad)
    else:
        for q in bad:
            assert re.search(CASES[kind], q["error"]), q["error"]
        assert out.summary["errors"] == len(bad)


async def test_fenced_and_reasoning_answers_are_accepted() -> None:
    async with (
        serving(lambda url: green_app(FencedToyApp, url)) as green,
        raw_server(misbehaving("fenced")) as purple,
    ):
        out = await evaluate(green, {"participants": {"agent": purple},
                                     "config": {"num_queries": 8, "seed": 11, "levels": [1],
                                                "biggest": 3}})
    assert out.state == TaskState.TASK_STATE_COMPLETED
    assert out.summary["correctness"]["rate"] == 1.0
    assert out.summary["errors"] == 0
