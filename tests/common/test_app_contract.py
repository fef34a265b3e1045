from __future__ import annotations

import pytest

import netarena.common as common
from netarena.common.core.app import load_app
from netarena.common.core.errors import ConfigError, EpisodeClosed
from netarena.common.core.replies import code_blocks, json_objects, last_code_block
from tests.helpers.toy import ToyApp


def test_public_api_is_pinned() -> None:
    assert sorted(common.__all__) == [
        "Agent",
        "AgentError",
        "AgentTimeout",
        "App",
        "AppConfig",
        "Command",
        "ConfigError",
        "EmulatorError",
        "Episode",
        "EpisodeClosed",
        "ForbiddenCommand",
        "InvalidAction",
        "LiteLLMAgent",
        "NetArenaError",
        "NullAgent",
        "Observation",
        "Query",
        "QueryPlan",
        "QueryResult",
        "ReactiveEpisode",
        "RewardConfig",
        "RunConfig",
        "RunSummary",
        "Runner",
        "SandboxError",
        "SandboxTimeout",
        "Score",
        "StepResult",
        "app_names",
        "load_app",
        "make_agent",
        "overlap",
        "plan_queries",
        "read_results",
        "summarize",
        "wald",
        "wilson",
    ]


def test_episode_lifecycle() -> None:
    app = ToyApp()
    ep = app.open(app.generate(1, 1))
    ep.close()
    ep.close()
    assert ep.closes == 1
    with pytest.raises(EpisodeClosed):
        ep.step("add 1")


def test_config_and_labels_are_validated() -> None:
    with pytest.raises(ConfigError, match="max_targt"):
        ToyApp({"max_targt": 3})
    with pytest.raises(ConfigError, match="level-1 label"):
        ToyApp().generate(1, 1, "huge")
    with pytest.raises(ConfigError, match="unknown app"):
        load_app("nope")


def test_reply_parsing_is_tolerant() -> None:
    reply = "Let me think.\n```python\ndef process_graph(g):\n    return 1\n```\nDone."
    assert last_code_block(reply, ("python", "py")).startswith("def process_graph")
    assert code_blocks("```kubectl get pods```") == ["kubectl get pods"]
    assert json_objects('I will run {"machine": "r0", "command": "ip a"} now {bad') == [
        {"machine": "r0", "command": "ip a"}
    ]
    assert json_objects('```json\n{"a": {"b": 1}}\n```') == [{"a": {"b": 1}}]
