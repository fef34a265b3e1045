"""Pin the public surface of the A2A modules."""

import netarena.a2a_llm as a2a_llm
from netarena.common import a2a, remote, request, server


def test_public_names() -> None:
    assert sorted(a2a_llm.__all__) == sorted(
        ["LLMAgent", "PurpleExecutor", "STRATEGIES", "Strategy", "from_env", "purple_app"])
    assert remote.__all__ == ["RemoteAgent", "reply_text"]
    assert server.__all__ == ["GreenExecutor", "green_app", "query_record"]
    assert set(request.__all__) == {"CORE_KEYS", "REFERENCE_KEYS", "IGNORED_KEYS", "EvalRequest",
                                    "ParsedRequest", "parse_request", "load_request"}
    for module in (a2a_llm, a2a, remote, request, server):
        assert all(hasattr(module, name) for name in module.__all__)
