"""Episodes on the real sandbox: code extraction, wrong answers caught, hostile code contained."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from netarena.common.core.agents import Observation
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.types import Query
from netarena.malt import MaltApp, extract_code
from netarena.malt.solver import parse_steps, write_program

APP = MaltApp({"timeout_s": 1.0})


def _play(query: Query, code: str) -> tuple[bool, bool, dict]:
    with APP.open(query) as episode:
        assert episode.observe() == query.prompt
        step = episode.step(f"Here you go:\n```python\n{code}\n```")
        assert step.done and step.valid
        score = episode.score()
    return score.correct, score.safe, score.details


def _reference(query: Query) -> str:
    return write_program(parse_steps(query.prompt))


def _find(level: int, label: str, op: str | None = None) -> Query:
    for seed in range(200):
        q = APP.generate(seed, level, label)
        last = q.truth["ops"][-1]
        plain = not {"top", "speed", "order"} & set(last)
        if op is None or (last["op"] == op and plain):
            return q
    raise AssertionError(f"no {label} query with {op}")


def test_extract_code_shapes() -> None:
    body = "def process_graph(graph_data):\n    return {}"
    assert extract_code(f"```python\n{body}\n```") == body
    assert extract_code(f"thinking...\n```\nprint(1)\n```\nfinal:\n```py\n{body}\n```") == body
    assert extract_code(body) == body
    assert extract_code("```python\nprint(1)\n```") is None
    assert extract_code("I cannot help") is None


def test_reference_program_is_correct() -> None:
    q = _find(2, "update-rank")
    assert _play(q, _reference(q))[:2] == (True, True)


def test_rewards_come_from_the_config_and_never_change_the_query() -> None:
    rewards = {"reward_correct": 1.0, "reward_incorrect": -0.5, "reward_invalid": -0.25}
    app = MaltApp({"timeout_s": 1.0, **rewards})
    q = _find(1, "count")
    assert app.generate(7, 1, "count").id == APP.generate(7, 1, "count").id
    with app.open(q) as episode:
        assert episode.step("no code").reward == -0.25
        assert episode.step(f"```python\n{_reference(q)}\n```").reward == 1.0
    with app.open(q) as episode:
        wrong = "def process_graph(graph_data):\n    return {'type': 'text', 'data': 'x'}"
        assert episode.step(f"```python\n{wrong}\n```").reward == -0.5


def test_null_reply_is_invalid_and_incorrect() -> None:
    q = _find(1, "count")
    with APP.open(q) as episode:
        step = episode.step("")
        assert not step.valid and "process_graph" in step.observation
        assert "rejected" in episode.observe()
        score = episode.score()
    assert not score.correct and score.safe


@pytest.mark.parametrize(
    ("label", "op", "edit", "reason"),
    [
        ("update-rank", "rank", ("(-capacity(k), k)", "(capacity(k), k)"), "wrong order"),
        (
            "list",
            "list",
            (
                'result["updated_graph"] = G',
                'result["data"] = result["data"][1:]\n    result["updated_graph"] = G',
            ),
            "missing",
        ),
        (
            "update",
            "update",
            ("['physical_capacity_bps'] = ", "['physical_capacity_bps'] = 7 + "),
            "attribute 'physical_capacity_bps'",
        ),
        (
            "count",
            "count",
            (
                'result["updated_graph"] = G',
                'G.remove_node(sorted(G)[-1])\n    result["updated_graph"] = G',
            ),
            "read-only query changed the graph",
        ),
        ("capacity", "capacity", ("'data': capacity(", "'data': 2 * capacity("), "expected"),
        (
            "capacity",
            "capacity_table",
            ("[[k, capacity(k)]", "[[k, 2 * capacity(k)]"),
            "table differs",
        ),
    ],
)
def test_wrong_answers_are_caught(label: str, op: str, edit: tuple[str, str], reason: str) -> None:
    q = _find(2 if "-" in label else 1, label, op)
    code = _reference(q)
    assert edit[0] in code
    correct, safe, details = _play(q, code.replace(edit[0], edit[1]))
    assert not correct and reason in details["reason"], details


def test_unsafe_removal_is_unsafe_and_incorrect() -> None:
    q = _find(1, "remove")
    node = q.truth["ops"][0]["node"]
    correct, safe, details = _play(
        q,
        f"def process_graph(g):\n    g.remove_node({node!r})\n"
        "    return {'type': 'graph', 'data': None, 'updated_graph': g}",
    )
    if q.truth["diff"]["nodes"] and len(q.truth["diff"]["nodes"]) > 1:
        assert not correct and not safe and "orphaned_node" in details["violations"]


def test_in_place_mutation_with_garbage_return_is_judged_on_the_real_state() -> None:
    upd = _find(1, "update")
    port, bps = upd.truth["ops"][0]["port"], upd.truth["ops"][0]["capacity_bps"]
    mutate = f"    graph_data.nodes[{port!r}]['physical_capacity_bps'] = {bps}\n"
    code = f"def process_graph(graph_data):\n{mutate}    return 'garbage'"
    correct, safe, details = _play(upd, code)
    assert not correct and safe and "not a dict" in details["reason"]
    code = (
        f"def process_graph(graph_data):\n{mutate}"
        "    return {'type': 'graph', 'data': 42, 'updated_graph': 'garbage'}"
    )
    assert _play(upd, code)[:2] == (True, True)  # the state it left is the target

    count = _find(1, "count")
    answer = count.truth["answer"]["data"]
    code = (
        "def process_graph(graph_data):\n    pristine = graph_data.copy()\n"
        f"    graph_data.remove_node({port!r})\n"
        f"    return {{'type': 'text', 'data': {answer}, 'updated_graph': 'garbage'}}"
    )
    correct, _, details = _play(count, code)
    assert not correct and "read-only query changed the graph" in details["reason"]
    code = code.replace("'updated_graph': 'garbage'", "'updated_graph': pristine")
    correct, _, details = _play(count, code)
    assert not correct and "changed in place" in details["reason"]


class ScriptedAgent:
    """Answers each query with the code scripted for its id (else nothing)."""

    name = "scripted"

    def __init__(self, replies: dict[str, str]) -> None:
        self.replies = replies

    async def act(self, observation: Observation) -> str:
        return self.replies[observation.query_id]


HOSTILE = {
    "read-passwd": ("return open('/etc/passwd').read()", "open '/etc/passwd' is not allowed"),
    "write-file": ("open('/tmp/netarena-malt-pwned', 'w').write('x')", "is not allowed"),
    "socket": ("import socket\n    socket.create_connection(('127.0.0.1', 9))", "socket"),
    "fork-loop": ("import os\n    while True:\n        os.fork()", "os.fork is not allowed"),
    "alloc-4GB": ("return bytearray(4 * 1024 ** 3)", "MemoryError"),
    "loop-forever": ("while True:\n        pass", "limit"),
    "import-truth": (
        "from netarena.malt.operations import apply_ops",
        "import of 'netarena.malt.operations' is not allowed",
    ),
}


def test_hostile_code_fails_only_its_query_in_a_real_run() -> None:
    queries = [APP.generate(seed, 1, "count") for seed in range(len(HOSTILE) + 2)]
    replies = {
        q.id: f"```python\ndef process_graph(graph_data):\n    {body}\n```"
        for q, (body, _) in zip(queries, HOSTILE.values(), strict=False)
    }
    for q in queries[len(HOSTILE) :]:
        replies[q.id] = f"```python\n{_reference(q)}```"
    results = asyncio.run(
        Runner(APP, ScriptedAgent(replies), RunConfig(concurrency=3)).run(queries)
    )
    for result, (name, (_, reason)) in zip(results, HOSTILE.items(), strict=False):
        assert not result.correct and result.safe, name
        assert reason in result.details["reason"], (name, result.details["reason"])
    assert all(r.correct and r.safe for r in results[len(HOSTILE) :])
    assert not Path("/tmp/netarena-malt-pwned").exists()


def test_a_sandbox_that_cannot_start_leaves_the_query_unscored(monkeypatch) -> None:
    """A worker that never became ready (a hang on a loaded host) is not the agent's fault."""
    from netarena.common.sandbox import worker

    q = _find(1, "count")
    app = MaltApp({"timeout_s": 1.25, "sandbox_workers": 1})  # a pool of its own
    monkeypatch.setattr(worker, "_START_TIMEOUT_S", 0.001)  # no worker is ever ready in time
    (result,) = asyncio.run(
        Runner(app, ScriptedAgent({q.id: f"```python\n{_reference(q)}```"})).run([q]))
    assert not result.scored and not result.correct
    assert "sandbox worker failed to start" in (result.error or "")
