"""Query generation: deterministic anywhere, every operation and level, safe ground truth."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from netarena.common.core.errors import ConfigError
from netarena.malt import LABELS, MaltApp, base_topology
from netarena.malt.checks import DiffView, violations
from netarena.malt.operations import READ_OPS, WRITE_OPS
from netarena.malt.topology import TopologyParams

ALL = [(level, label) for level, labels in LABELS.items() for label in labels]


def _ops(op: dict) -> set[str]:
    found = {op["op"]}
    for key in ("do", "measure", "then", "otherwise"):
        for sub in op.get(key) if isinstance(op.get(key), list) else [op.get(key)]:
            if sub:
                found |= _ops(sub)
    return found


def test_same_query_in_another_process() -> None:
    code = (
        "from netarena.malt import MaltApp\n"
        "q = MaltApp({'prompt_style': 'fewshot_cot'}).generate(4242, 3, 'if-capacity')\n"
        "print(q.model_dump_json())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    here = MaltApp({"prompt_style": "fewshot_cot"}).generate(4242, 3, "if-capacity")
    assert json.loads(out) == json.loads(here.model_dump_json())


@pytest.mark.parametrize(("level", "label"), ALL)
def test_every_label_generates_safe_deterministic_truth(level: int, label: str) -> None:
    app = MaltApp()
    base = base_topology(TopologyParams())
    for seed in range(4):
        q = app.generate(seed, level, label)
        assert q == app.generate(seed, level, label)
        assert q.level == level and q.label == label and q.id.startswith(f"malt-L{level}-{label}-")
        assert violations(DiffView(base, q.truth["diff"])) == []
        ops = q.truth["ops"]
        assert len(ops) == (1 if level == 1 or label.startswith(("loop", "if")) else 2)
        for op, name in zip(ops, label.split("-"), strict=False):
            if len(ops) == 2:
                assert op["op"].startswith(name) or (
                    name == "capacity" and op["op"] == "capacity_table"
                )
        reads = any(_ops(op) & READ_OPS for op in ops[-1:])
        writes = any(_ops(op) & WRITE_OPS for op in ops)
        assert q.truth["answer"]["type"] in ("text", "list", "table", "graph")
        assert writes == bool(q.truth["diff"]["nodes"] or q.truth["diff"]["edges"]) or "if" in label
        assert reads or q.truth["answer"]["type"] == "graph"


def test_every_operation_and_answer_type_is_covered() -> None:
    app = MaltApp()
    ops, types = set(), set()
    for level, label in ALL:
        for seed in range(6):
            q = app.generate(seed, level, label)
            for op in q.truth["ops"]:
                ops |= _ops(op)
            types.add(q.truth["answer"]["type"])
    assert READ_OPS | WRITE_OPS | {"for_each", "if"} <= ops
    assert types == {"text", "list", "table", "graph"}


@pytest.mark.parametrize("label", ["if-capacity", "if-count"])
def test_if_queries_take_both_branches(label: str) -> None:
    app, outcomes = MaltApp(), set()
    for seed in range(30):
        q = app.generate(seed, 3, label)
        op = q.truth["ops"][0]
        base = base_topology(TopologyParams())
        from netarena.malt.operations import apply_op

        outcomes.add(apply_op(base.copy(), op["measure"])["data"] > op["threshold"])
    assert outcomes == {True, False}


def test_loops_touch_every_item_of_the_selected_set() -> None:
    app = MaltApp()
    base = base_topology(TopologyParams())
    for seed in range(10):
        loop = app.generate(seed, 3, "loop-update").truth["ops"][0]
        q = app.generate(seed, 3, "loop-update")
        old, new = loop["speed"]["bps"], loop["do"]["capacity_bps"]
        from netarena.malt.operations import loop_items

        items = loop_items(base, loop)
        changed = q.truth["diff"]["nodes"]
        assert items and set(changed) == set(items)
        assert all(base.nodes[p]["physical_capacity_bps"] == old for p in items)
        assert all(attrs["physical_capacity_bps"] == new for attrs in changed.values())


def test_prompt_styles() -> None:
    prompts = {
        s: MaltApp({"prompt_style": s}).generate(9, 2, "remove-rank").prompt
        for s in ("zeroshot_base", "fewshot_base", "zeroshot_cot", "fewshot_cot")
    }
    for style, text in prompts.items():
        assert "def process_graph(graph_data)" in text and "updated_graph" in text
        assert "RK_CONTAINS" in text and "Task:\n1. Remove" in text
        assert ("Worked examples" in text) == style.startswith("fewshot")
        assert ("Think step by step" in text) == style.endswith("cot")
    assert "Rank the" in prompts["zeroshot_base"]


def test_bad_labels_and_levels_are_rejected() -> None:
    with pytest.raises(ConfigError):
        MaltApp().generate(1, 1, "remove-rank")
    with pytest.raises(ConfigError):
        MaltApp().generate(1, 4)
    with pytest.raises(ConfigError):
        MaltApp({"superblocks": 0})


def test_scaled_topology_queries_carry_their_params() -> None:
    app = MaltApp(
        {
            "topology": "google-example",
            "superblocks": 2,
            "spineblocks": 1,
            "capacity_profile": "mixed",
            "topology_seed": 3,
        }
    )
    q = app.generate(5, 2, "update-rank")
    assert q.params["superblocks"] == 2 and q.id != MaltApp().generate(5, 2, "update-rank").id
    other = MaltApp({"topology_seed": 1}).generate(5, 2, "update-rank")
    assert (
        other.params == {"topology_seed": 1}
        and other.prompt != MaltApp().generate(5, 2, "update-rank").prompt
    )


@pytest.mark.parametrize(("level", "label"), ALL)
def test_the_prompt_states_exactly_the_operations_of_the_truth(level: int, label: str) -> None:
    """Reading the task back from the text gives the ground truth's operations, so the
    prompt is unambiguous and complete (and the reference solver needs nothing else)."""
    from netarena.malt.solver import parse_steps

    app = MaltApp()
    for seed in range(6):
        q = app.generate(1000 + seed, level, label)
        assert parse_steps(q.prompt) == q.truth["ops"]


@pytest.mark.parametrize("label", ["loop-update", "loop-add", "loop-remove", "list", "count"])
def test_selections_are_never_empty(label: str) -> None:
    """Two filters can select nothing; then "do nothing" or "answer 0" would be right."""
    from netarena.malt.operations import selection

    app, base = MaltApp(), base_topology(TopologyParams())
    level = 3 if label.startswith("loop") else 1
    for seed in range(60):
        op = app.generate(2000 + seed, level, label).truth["ops"][0]
        if op["op"] in ("list", "count", "for_each"):
            assert selection(base, op), op
