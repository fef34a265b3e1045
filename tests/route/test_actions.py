"""Reply parsing and the command allowlist (no emulator needed)."""

from __future__ import annotations

import json

import pytest

from netarena.common.errors import ForbiddenCommand, InvalidAction
from netarena.route.actions import parse_reply

NODES = ["h1", "h2", "r0"]
PREFIX = "nrabcde"


def reply(machine: str, command: str) -> str:
    return json.dumps({"machine": machine, "command": command})


@pytest.mark.parametrize(
    "text",
    [
        reply("r0", "ip route"),
        "```json\n" + reply("r0", "ip route") + "\n```",
        "The router lacks a route, so I check it.\n" + reply("r0", "ip route"),
        reply("nrabcde_r0", "ip route"),
        reply("r0", "sudo ip route"),
    ],
)
def test_answer_shapes_parse(text: str) -> None:
    action = parse_reply(text, NODES, PREFIX)
    assert action.machine == "r0"
    assert action.argv == ("ip", "route")


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /",
        "sh -c 'ip link set r0-eth1 down'",
        "bash",
        "ip route; reboot",
        "; reboot",
        "ip netns exec nrzzzzz_h1 ip addr",
        "ip -n nrzzzzz_h1 addr",
        "ip --netns nrzzzzz_h1 addr",
        "ip -ne nrzzzzz_h1 addr",
        "ip net exec x ip addr",
        "ip link set r0-eth1 netns 1",
        "ip vrf exec default cat /etc/shadow",
        "ip -batch /etc/passwd",
        "ip -b /tmp/x",
        "nsenter -t 1 -n ip addr",
        "ip addr > /tmp/out",
        "ip addr < /etc/passwd",
        "ip addr show $(cat /etc/hostname)",
        "ip addr show `id`",
        "ip addr | tee /tmp/x",
        "iptables-save -f /etc/passwd",
        "iptables --modprobe=/tmp/evil -L",
        "sysctl -w kernel.panic=1",
        "sysctl -p /etc/sysctl.conf",
        "sysctl -w net.ipv4/../../kernel/panic=1",
        "tc -batch /etc/passwd",
        "tc exec bpf graft x",
        "ping -f 192.168.1.1",
        "arp -f /etc/ethers",
        "cat /etc/shadow",
        "/usr/sbin/ip addr",
    ],
)
def test_hostile_commands_are_forbidden(command: str) -> None:
    with pytest.raises(ForbiddenCommand):
        parse_reply(reply("r0", command), NODES, PREFIX)


def test_another_episodes_machine_is_forbidden() -> None:
    with pytest.raises(ForbiddenCommand, match="another episode"):
        parse_reply(reply("nrzzzzz_h1", "ip addr"), NODES, PREFIX)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ip route",
        "{}",
        '{"machine": "r9", "command": "ip route"}',
        '{"machine": 3, "command": "ip a"}',
        '{"machine": "r0", "command": ["ip"]}',
        '{"machine": "r0", "command": "ip \'route"}',
    ],
)
def test_invalid_replies(text: str) -> None:
    with pytest.raises(InvalidAction):
        parse_reply(text, NODES, PREFIX)


@pytest.mark.parametrize(
    "command",
    [
        "ip -br addr",
        "ip -4 -s link show",
        "iptables -D FORWARD -s 192.168.1.0/24 -j DROP",
        "iptables -L -n -v",
        "sysctl -w net.ipv4.ip_forward=1",
        "sysctl -a",
        "tc qdisc del dev r0-eth1 root",
        "ping -c 1 -W 1 192.168.1.100",
        "route -n",
        "arp -n",
        "ifconfig r0-eth1 up",
    ],
)
def test_ordinary_network_commands_pass(command: str) -> None:
    action = parse_reply(reply("r0", command), NODES, PREFIX)
    assert " ".join(action.argv) == command
