"""Every prompt states the answer format its app parses (ABC O.h.1), in every prompt style.

Many purple agents are plain LLM relays with no system prompt, so the green side's prompt is
the only place the format can come from: MALT's ``process_graph(graph_data)`` returning a
typed answer, route's ``{"machine", "command"}`` JSON, k8s's one command between triple
backticks. Checked on every label of every level, in each of the four prompt styles.
"""

from __future__ import annotations

from typing import get_args

import pytest

from netarena.common.core.app import PromptStyle, app_names, load_app

FORMATS: dict[str, tuple[str, ...]] = {
    "malt": ("process_graph(graph_data)", '"type"', '"data"', '"updated_graph"'),
    "route": ('"machine"', '"command"'),
    "k8s": ("```",),
}
"""What each app's prompt must name for its reply parser to find an answer."""


@pytest.mark.parametrize("app_name", app_names())
def test_every_prompt_states_its_answer_format(app_name: str) -> None:
    assert app_name in FORMATS, f"add {app_name}'s answer format to FORMATS"
    for style in get_args(PromptStyle):
        app = load_app(app_name, {"prompt_style": style})
        for level, labels in app.labels.items():
            for label in labels:
                prompt = app.generate(7, level, label).prompt
                missing = [m for m in FORMATS[app_name] if m not in prompt]
                assert not missing, (style, level, label, missing)
