"""Pin the public surface of the A2A and server modules."""

import netarena.a2a_llm as a2a_llm
from netarena.common.serving import (
    a2a,
    connections,
    limits,
    outbound,
    remote,
    request,
    requester,
    server,
    special_addresses,
    status,
    status_page,
    stream_bounds,
    web,
)


def test_public_names() -> None:
    assert sorted(a2a_llm.__all__) == sorted(
        ["LLMAgent", "PurpleExecutor", "STRATEGIES", "Strategy", "from_env", "purple_app"])
    assert remote.__all__ == ["RemoteAgent", "reply_text"]
    assert set(server.__all__) == {"GreenOptions", "GreenExecutor", "green_app",
                                   "netarena_version", "UNSCORED_FAIL_FRACTION"}
    assert set(request.__all__) == {"CORE_KEYS", "REFERENCE_KEYS", "IGNORED_KEYS", "TOOLING_KEYS",
                                    "EvalRequest", "ParsedRequest", "parse_request",
                                    "load_request", "check_role", "screen_roles"}
    assert set(connections.__all__) == {"ConnectionLedger", "FairProtocol", "fair_protocol",
                                        "client_key"}
    assert set(stream_bounds.__all__) == {"StreamLimits", "StreamOverflow", "BoundedTransport"}
    assert set(web.__all__) == {"WebOptions", "agent_web_app", "serve"}
    assert set(limits.__all__) == {"APP_CAPS", "ServerLimits", "check_app_caps"}
    assert set(outbound.__all__) == {"OutboundPolicy", "OutboundRefused", "GuardedBackend",
                                     "same_origin", "purple_client", "ReplyTooLarge",
                                     "BadEncoding", "MAX_REPLY_BYTES", "public_url",
                                     "public_text", "bare_url"}
    assert set(status.__all__) == {"Board", "Entry"}
    assert set(special_addresses.__all__) == {"SpecialBlock", "SPECIAL_BLOCKS",
                                              "SERVICE_ADDRESSES", "special_block",
                                              "service_address", "embedded_ipv4"}
    for module in (a2a_llm, a2a, remote, request, server, limits, outbound, requester, status,
                   status_page, web, special_addresses, connections, stream_bounds):
        assert all(hasattr(module, name) for name in module.__all__)
