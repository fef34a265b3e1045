"""The outbound policy for purple URLs: which addresses, and enforced at connect time."""

from __future__ import annotations

import asyncio
import socket

import pytest

from netarena.a2a_llm import purple_app
from netarena.common.agents import Observation
from netarena.common.errors import AgentError
from netarena.common.outbound import OutboundPolicy, OutboundRefused, same_origin
from netarena.common.remote import RemoteAgent
from tests.a2a.servers import serving
from tests.helpers.toy import ToyApp


@pytest.mark.parametrize(("address", "why"), [
    ("169.254.169.254", "cloud metadata"), ("169.254.170.2", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"), ("fd00:ec2::254", "cloud metadata"),
    ("::ffff:169.254.169.254", "cloud metadata"), ("169.254.7.7", "link-local"),
    ("fe80::1", "link-local"), ("224.0.0.1", "not a unicast"), ("0.0.0.0", "not a unicast"),
    ("240.0.0.1", "not a unicast"),
])
def test_refused_addresses(address: str, why: str) -> None:
    assert why in (OutboundPolicy().refusal("h", address) or "")


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "172.18.0.5",
                                     "192.168.1.20", "8.8.8.8"])
def test_default_policy_allows_loopback_private_and_public(address: str) -> None:
    assert OutboundPolicy().refusal("h", address) is None


def test_allowlist_of_networks_and_names() -> None:
    policy = OutboundPolicy.parse("10.20.0.0/16, agents.example.org, .example.net")
    assert policy.refusal("x", "10.20.3.4") is None
    assert policy.refusal("agents.example.org", "192.0.2.1") is None
    assert policy.refusal("a.b.example.net", "192.0.2.1") is None
    assert "allowlist" in (policy.refusal("x", "127.0.0.1") or "")
    assert "metadata" in (policy.refusal("agents.example.org", "169.254.169.254") or "")
    assert same_origin("http://A:80/x", "http://a/y") and not same_origin("http://a", "https://a")


async def test_dns_rebinding_is_caught_where_the_connection_is_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The name resolves to an allowed address for the early check, then to another one:
    the connection is refused, because the backend checks what it actually connects to.
    (Both answers are loopback, so a failing guard sends nothing off this machine.)"""
    answers = ["127.0.0.1", "127.0.0.2"]
    real = asyncio.get_running_loop().getaddrinfo

    async def rebinding(host, port, *args, **kwargs):
        if host == "purple.test":
            address = answers.pop(0) if len(answers) > 1 else answers[0]
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port))]
        return await real(host, port, *args, **kwargs)

    async with serving(lambda url: purple_app(ToyApp().reference_agent(), url)) as purple:
        port = int(purple.rsplit(":", 1)[1].strip("/"))
        policy = OutboundPolicy.parse("127.0.0.1/32")
        monkeypatch.setattr(asyncio.get_running_loop(), "getaddrinfo", rebinding)
        await policy.check_url(f"http://purple.test:{port}/")  # the early check passes
        agent = RemoteAgent(f"http://purple.test:{port}/", timeout_s=5, policy=policy)
        with pytest.raises(AgentError, match=r"purple.test \(127.0.0.2\) is not in this "
                                             r"server's purple allowlist"):
            await agent.act(Observation("reach 2 value=0", "c", 0))
        await agent.aclose()
    with pytest.raises(OutboundRefused):
        await OutboundPolicy().check_url("http://[fe80::1]:80/")
