"""``netarena assess`` against a live green agent on loopback, as the AgentBeats gateway."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from netarena.a2a_llm import purple_app
from netarena.common.cli.root import cli
from netarena.common.reporting.results import load_results
from netarena.common.serving.assess import assess, write_assessment
from netarena.common.serving.server import green_app
from tests.a2a.servers import raw_server, serving
from tests.helpers.toy import ToyApp


@pytest.mark.parametrize("protocol", ["0.3", "1.0"])
async def test_assess_follows_an_evaluation_and_keeps_its_records(
        protocol: str, tmp_path: Path) -> None:
    progress: list[tuple[str, str]] = []
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        run = await assess(green, {"toy_operator": purple}, {"num_queries": 12, "seed": 3},
                           protocol=protocol,
                           on_status=lambda state, text: progress.append((state, text)))
    assert run.state == "completed", run.messages
    assert len(run.queries) == 12 and all(r["correct"] for r in run.queries)
    assert all(isinstance(r["level"], int) for r in run.queries)  # ints, either protocol
    assert run.summary is not None and run.summary.correctness.rate == 1.0
    assert progress[0][0] == "working" and "12 queries for toy_operator" in progress[0][1]
    assert any("query 12/12" in text for _, text in progress)
    assert progress[-1][0] == "completed" and "done: 12 queries" in progress[-1][1]
    written = write_assessment(run, tmp_path)
    assert [p.name for p in written] == ["results.jsonl", "summary.json", "agentbeats.json"]
    records = load_results([tmp_path])  # what netarena report reads
    assert len(records) == 12 and {r.query_id for r in records} == {
        r["query_id"] for r in run.queries}
    doc = json.loads((tmp_path / "agentbeats.json").read_text())
    assert doc["status"] == "completed" and doc["participants"] == {"toy_operator": purple}
    (received,) = [r for r in run.records if isinstance(r, dict) and r.get("kind") == "summary"]
    assert json.loads((tmp_path / "summary.json").read_text()) == received  # as sent


async def test_assess_cli_streams_progress_writes_files_and_fails_on_rejection(
        tmp_path: Path) -> None:
    async with (
        serving(lambda url: green_app(ToyApp, url)) as green,
        serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple,
    ):
        runner = CliRunner()
        ok = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", f"toy_operator={purple}",
            "--config", '{"num_queries": 6, "seed": 5, "max_turns": 10}',
            "--out", str(tmp_path / "run")])
        rejected = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", f"toy_operator={purple}",
            "--config", '{"num_queris": 6}'])
        malformed = await asyncio.to_thread(runner.invoke, cli, [
            "assess", green, "--participant", "toy_operator"])
    assert ok.exit_code == 0, ok.output
    assert "working: query 6/6" in ok.output and "correctness" in ok.output
    assert (tmp_path / "run" / "results.jsonl").read_text().count("\n") == 6
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["config"]["run"]["max_turns"] == 10 and summary["queries"] == 6
    assert rejected.exit_code == 1 and "rejected" in rejected.output
    assert "num_queris" in rejected.output
    assert malformed.exit_code == 2 and "ROLE=URL" in malformed.output


async def test_assess_reports_an_unreachable_green_agent() -> None:
    from netarena.common.core.errors import AgentError

    async with serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple:
        dead = purple.rsplit(":", 1)[0] + ":9/"  # discard port on loopback: refused
        with pytest.raises(AgentError, match="green agent at"):
            await assess(dead, {"toy_operator": purple}, {})


_SSE_HEAD = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
             b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n")


def _event(result: Any) -> bytes:
    return b"data: " + json.dumps({"jsonrpc": "2.0", "id": "x", "result": result}).encode() \
        + b"\n\n"


def _start(writer: asyncio.StreamWriter) -> None:
    """What a green agent sends first: the task, progress, one record of the Result."""
    writer.write(_SSE_HEAD + _event({"kind": "task", "id": "t", "contextId": "c",
                                     "status": {"state": "submitted"}}))
    writer.write(_event({"kind": "status-update", "taskId": "t", "contextId": "c",
                         "status": {"state": "working", "message": {
                             "kind": "message", "role": "agent", "messageId": "m",
                             "parts": [{"kind": "text", "text": "query 1/9"}]}}}))
    writer.write(_event({"kind": "artifact-update", "taskId": "t", "contextId": "c",
                         "artifact": {"artifactId": "first", "name": "Result", "parts": [
                             {"kind": "text", "text": json.dumps(_RECORD)}]}}))


_RECORD = {"kind": "query", "query_id": "q-before", "level": 1, "label": "x"}


_LONG = json.dumps("x" * 40_000)  # JSON (a string): kept as a record, as the gateway does
_DENSE = json.dumps([{}] * 13_000)  # 40 KB of JSON that parses into 13,000 objects


async def _endless_artifacts(writer: asyncio.StreamWriter, text: str, one_artifact: bool
                             ) -> None:
    for i in itertools.count():
        writer.write(_event({"kind": "artifact-update", "taskId": "t", "contextId": "c",
                             "append": True, "artifact": {
                                 "artifactId": "one" if one_artifact else f"a{i}",
                                 "parts": [{"kind": "text", "text": text}]}}))
        await writer.drain()


async def _endless_line(writer: asyncio.StreamWriter) -> None:
    writer.write(b"data: {\"jsonrpc\": \"2.0\", \"result\": \"")
    chunk = b"x" * 65536
    while True:
        writer.write(chunk)
        await writer.drain()


_HOSTILE: dict[str, tuple[Any, str]] = {
    "endless stream": (lambda w: _endless_artifacts(w, _LONG, False), "max_stream_bytes"),
    "endless artifact": (lambda w: _endless_artifacts(w, _LONG, True), "max_artifact_bytes"),
    "endless objects": (lambda w: _endless_artifacts(w, _DENSE, False), "max_parsed_bytes"),
    "endless line": (_endless_line, "max_event_bytes"),
    "non-object reply": (lambda w: _write(w, b"data: [1, 2, 3]\n\n"),
                         "a JSON-RPC reply is not an object"),
    "non-object result": (lambda w: _write(w, b'data: {"jsonrpc": "2.0", "result": 7}\n\n'),
                          "a JSON-RPC result is not an object"),
    "parts not a list": (lambda w: _write(w, _event({"kind": "artifact-update", "artifact": {
        "artifactId": "p", "parts": "nope"}})), "are not a list of objects"),
    "not JSON": (lambda w: _write(w, b"data: {nope\n\n"), "an event is not JSON"),
    "stream ends early": (lambda w: _write(w, b""), "before the task ended"),
}


async def _write(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    await writer.drain()


_PEAK_MEMORY = """
import atexit, os, sys
from netarena.common.cli.root import main

def peak():  # VmHWM: this process's own peak (ru_maxrss also counts the parent it forked from)
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmHWM:"))
    with open(os.environ["NETARENA_PEAK_FILE"], "w") as out:
        out.write(str(kib))

atexit.register(peak)
main()
"""
"""``netarena`` (the console script's ``main``), reporting its peak memory at exit."""


def _assess_process(green: str, out: Path) -> tuple[int, float, str]:
    """Run ``netarena assess`` as a process: its exit code, peak memory (MB) and stderr."""
    peak = out / "peak-kib.txt"
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK_MEMORY, "assess", green, "--participant",
         "toy_operator=http://127.0.0.1:9/", "--out", str(out), "--idle-timeout", "20"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
        env={**os.environ, "COLUMNS": "400", "NETARENA_PEAK_FILE": str(peak)})
    return proc.returncode, int(peak.read_text()) / 1024, proc.stderr


_MUST_SHOW = ("endless stream", "endless line", "non-object reply")
"""The issue's three cases stay in the fast tier; the others (each a process, 2-3 s) are slow."""



def _attacking(attack: Callable[[asyncio.StreamWriter], Awaitable[None]]
               ) -> Callable[[dict, asyncio.StreamWriter], Awaitable[None]]:
    """A green agent's POST handler that starts an SSE reply, then runs ``attack``."""

    async def on_post(rpc: dict, writer: asyncio.StreamWriter) -> None:
        _start(writer)
        try:
            await attack(writer)
        except ConnectionError:
            pass

    return on_post

@pytest.mark.parametrize("case", [
    pytest.param(case, marks=() if case in _MUST_SHOW else pytest.mark.slow) for case in _HOSTILE])
async def test_assess_against_a_hostile_green_agent_exits_2_in_bounded_memory(
        case: str, tmp_path: Path) -> None:
    """A real ``netarena assess`` process against a green agent that streams for ever,
    sends one endless line or a reply that is not what the protocol says: a clear error,
    exit 2, at most 100 MB of memory, and what arrived before saved in --out."""
    attack, problem = _HOSTILE[case]

    async with raw_server(_attacking(attack)) as green:
        code, peak_mb, stderr = await asyncio.to_thread(_assess_process, green, tmp_path)
    assert code == 2, stderr
    assert problem in stderr and "Traceback" not in stderr, stderr
    assert peak_mb <= 100, f"{peak_mb:.0f} MB"
    saved = json.loads((tmp_path / "agentbeats.json").read_text())
    assert saved["status"] == "working" and problem in saved["error"]
    assert saved["results"][0] == _RECORD  # what arrived before the error


@pytest.mark.parametrize("case", ["endless stream", "endless line", "non-object reply"])
async def test_the_1x_client_path_is_bounded_and_checked_too(case: str) -> None:
    """Through a2a-sdk 1.x (``--protocol 1.0``) the same answers end with ``BrokenReply``."""
    from netarena.common.core.errors import BrokenReply
    from netarena.common.serving.assess import Assessment

    attack, _ = _HOSTILE[case]

    async with raw_server(_attacking(attack)) as green:
        with pytest.raises(BrokenReply, match="the green agent at") as caught:
            await assess(green, {"toy_operator": "http://127.0.0.1:9/"}, protocol="1.0")
    assert isinstance(caught.value.partial, Assessment)
    assert caught.value.partial.error == str(caught.value)
