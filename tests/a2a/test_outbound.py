"""The outbound policy for purple URLs: which addresses, and enforced at connect time."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import pytest

from netarena.a2a_llm import purple_app
from netarena.common.core.agents import Observation
from netarena.common.core.errors import AgentError
from netarena.common.serving.outbound import OutboundPolicy, OutboundRefused, same_origin
from netarena.common.serving.remote import RemoteAgent
from netarena.common.serving.special_addresses import SERVICE_ADDRESSES, SPECIAL_BLOCKS
from tests.a2a.servers import serving
from tests.helpers.toy import ToyApp

# One address in every refused block and every listed cloud service, each with the words
# its refusal must carry (the block or service it was refused as).
REFUSED = [
    # IANA IPv4 special-purpose blocks that are not globally reachable.
    ("0.0.0.0", "0.0.0.0/8"), ("0.1.2.3", "0.0.0.0/8"),
    ("100.64.0.1", "100.64.0.0/10"), ("100.127.255.254", "100.64.0.0/10"),
    ("169.254.7.7", "link-local"), ("192.0.0.1", "192.0.0.0/24"),
    ("192.0.0.8", "192.0.0.0/24"), ("192.0.0.170", "192.0.0.0/24"),
    ("192.0.2.1", "192.0.2.0/24"), ("192.88.99.1", "192.88.99.0/24"),
    ("198.18.0.1", "198.18.0.0/15"), ("198.19.255.1", "198.18.0.0/15"),
    ("198.51.100.7", "198.51.100.0/24"), ("203.0.113.9", "203.0.113.0/24"),
    ("224.0.0.1", "multicast"), ("239.255.255.250", "multicast"), ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    # IANA IPv6 special-purpose blocks that are not globally reachable.
    ("::", "unspecified"), ("::a9fe:a9fe", "IPv4-compatible"), ("::1.2.3.4", "::/96"),
    ("64:ff9b:1::1", "64:ff9b:1::/48"), ("100::1", "discard-only"),
    ("100:0:0:1::1", "dummy"), ("2001:2::1", "2001::/23"), ("2001:10::1", "2001::/23"),
    ("2001:db8::1", "documentation"), ("3fff::1", "documentation"), ("5f00::1", "SRv6"),
    ("fe80::1", "link-local"), ("fec0::1", "site-local"), ("ff02::1", "multicast"),
    # Cloud metadata and wire servers (some public or unique-local: no block covers them).
    ("169.254.169.254", "cloud metadata"), ("169.254.170.2", "cloud metadata"),
    ("169.254.169.253", "cloud metadata"), ("169.254.169.123", "cloud metadata"),
    ("169.254.0.23", "Tencent"), ("169.254.42.42", "Scaleway"),
    ("100.100.100.200", "Alibaba"), ("192.0.0.192", "Oracle"),
    ("168.63.129.16", "Azure WireServer"), ("fd00:ec2::254", "cloud metadata"),
    ("fd00:ec2::253", "cloud metadata"), ("fd00:ec2::123", "cloud metadata"),
    ("fd20:ce::254", "GCP"), ("fd00:c1::a9fe:a9fe", "Oracle"), ("fd00:42::42", "Scaleway"),
    # IPv4 inside IPv6 (mapped, 6to4, NAT64, Teredo) is judged by the IPv4 it carries.
    ("::ffff:169.254.169.254", "cloud metadata"), ("::ffff:168.63.129.16", "WireServer"),
    ("2002:a9fe:a9fe::", "cloud metadata"), ("64:ff9b::a9fe:a9fe", "cloud metadata"),
    ("64:ff9b::a83f:8110", "WireServer"), ("2002:a9fe:0101::1", "link-local"),
    ("2002:c000:00c0::1", "Oracle"), ("64:ff9b::6440:1", "100.64.0.0/10"),
    ("2002:c000:0201::", "192.0.2.0/24"),
    # Teredo: the client's IPv4, bit-inverted in the last 32 bits (169.254.169.254 here).
    ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    # Translated forms of loopback or private addresses lead elsewhere than they say.
    ("2002:7f00:1::", "non-global"), ("64:ff9b::a00:1", "non-global"),
]


@pytest.mark.parametrize(("address", "why"), REFUSED)
def test_refused_addresses(address: str, why: str) -> None:
    assert why in (OutboundPolicy().refusal("h", address) or "")


def test_every_refused_block_and_service_is_listed_above() -> None:
    """The table and this test cannot drift apart: each block and service has a case."""
    addresses = [ipaddress.ip_address(a) for a, _ in REFUSED]
    for block in SPECIAL_BLOCKS:
        assert any(a in block.network for a in addresses), block
    assert set(SERVICE_ADDRESSES) <= set(addresses)


def test_blocks_admitted_only_by_an_explicit_allowlist_entry_inside_them() -> None:
    tailnet = OutboundPolicy.parse("100.64.0.0/10")
    assert tailnet.refusal("x", "100.90.1.2") is None
    assert "Alibaba" in (tailnet.refusal("x", "100.100.100.200") or "")
    everything = OutboundPolicy.parse("0.0.0.0/0, ::/0")
    assert "100.64.0.0/10" in (everything.refusal("x", "100.90.1.2") or "")
    assert "link-local" in (OutboundPolicy.parse("169.254.0.0/16").refusal("x", "169.254.1.1")
                            or "")


@pytest.mark.parametrize("address", ["127.0.0.1", "::1", "10.1.2.3", "172.18.0.5",
                                     "192.168.1.20", "8.8.8.8", "fd12:3456::7",
                                     "::ffff:127.0.0.1", "::ffff:10.0.0.2", "2002:808:808::1",
                                     "64:ff9b::808:808", "2606:4700::1111"])
def test_default_policy_allows_loopback_private_and_public(address: str) -> None:
    assert OutboundPolicy().refusal("h", address) is None


def test_allowlist_of_networks_and_names() -> None:
    policy = OutboundPolicy.parse("10.20.0.0/16, agents.example.org, .example.net")
    assert policy.refusal("x", "10.20.3.4") is None
    assert policy.refusal("agents.example.org", "93.184.215.14") is None
    assert policy.refusal("a.b.example.net", "93.184.215.14") is None
    assert "192.0.2.0/24" in (policy.refusal("agents.example.org", "192.0.2.1") or "")
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
