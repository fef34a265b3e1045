"""The original NetArena's task space as a selectable subset, and its request dialect."""

from __future__ import annotations

from collections import Counter

import pytest

from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.serving.request import EvalRequest, parse_request
from netarena.malt import LABEL_SETS, LABELS, MaltApp

ORIGINAL = {
    1: {"add", "rank", "remove", "list"},
    2: {"remove-list", "remove-rank", "remove-count"},
    3: {"add-list", "add-rank", "add-count"},
}
"""The labels of the original's benchmark file (``sampled_500_benchmark_malt.jsonl``)."""


def test_the_original_set_is_the_originals_labels_at_their_levels() -> None:
    assert set(LABEL_SETS["original"]) == set().union(*ORIGINAL.values())
    for level, labels in ORIGINAL.items():
        assert labels <= set(LABELS[level])


def test_labels_original_selects_them_and_respects_levels() -> None:
    app = MaltApp()
    queries = plan_queries(app, QueryPlan(num_queries=20, labels=("original",), seed=3))
    assert {(q.level, q.label) for q in queries} == {
        (lv, lb) for lv, labels in ORIGINAL.items() for lb in labels
    }
    two = plan_queries(app, QueryPlan(num_queries=14, levels=(1, 2), labels=("original",)))
    assert {q.label for q in two} == ORIGINAL[1] | ORIGINAL[2]


def test_an_unknown_or_misplaced_label_is_still_rejected() -> None:
    with pytest.raises(ConfigError, match="not in levels"):
        plan_queries(MaltApp(), QueryPlan(num_queries=2, levels=(1,), labels=("add-rank",)))


def test_the_original_dialect_runs_the_original_labels_per_label() -> None:
    """What the public leaderboard sends (brief §4) maps onto the original's task space."""
    request = EvalRequest(
        participants={"malt_operator": "http://127.0.0.1:9"},
        config={
            "prompt_type": "zeroshot_base",
            "complexity_level": ["level1", "level2"],
            "num_queries": 2,
            "output_dir": "x",
            "regenerate_query": True,
        },
    )
    parsed = parse_request(request, MaltApp, seed=5)
    queries = plan_queries(MaltApp(parsed.app_config), parsed.plan)
    assert Counter(q.label for q in queries) == {lb: 2 for lb in ORIGINAL[1] | ORIGINAL[2]}
    assert any("original" in note for note in parsed.notes)


def test_the_original_dialect_keeps_explicit_labels() -> None:
    request = EvalRequest(
        participants={"malt_operator": "http://127.0.0.1:9"},
        config={"complexity_level": ["level1"], "num_queries": 1, "labels": ["count"]},
    )
    parsed = parse_request(request, MaltApp, seed=5)
    assert [q.label for q in plan_queries(MaltApp(), parsed.plan)] == ["count"]
