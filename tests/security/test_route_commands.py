"""Attacks by route agents' ``{"machine", "command"}`` replies (brief §9).

The allowlist tests need nothing; the root tests run the allowed-but-risky commands in a
real episode and check that nothing reaches the host (links, routes, firewall, sysctls,
files) and that traffic to outside addresses never leaves the episode's namespaces.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from netarena.common.errors import ForbiddenCommand, InvalidAction
from netarena.route import RouteApp
from netarena.route.actions import parse_reply

from ..route.conftest import NEEDS_ROOT

NODES = ["h1", "h2", "r0"]
PREFIX = "nrabcde"

# Each of these escapes the node, reads or writes host files, runs programs, or floods.
# "(was allowed)" marks the ones the allowlist let through before this hardening; several
# were verified on the real tools (iptables-save --fi=FILE wrote a host file as root;
# arp -nf /etc/shadow read it).
FORBIDDEN = [
    "ip netns exec nrzzzzz_h1 ip a",
    "ip -n nrzzzzz_h1 a",
    "ip -netns nrzzzzz_h1 a",
    "ip --netns nrzzzzz_h1 a",
    "ip -ne nrzzzzz_h1 a",
    "ip -nets nrzzzzz_h1 a",  # (was allowed; ip itself refuses it) any -n... option
    "ip -nXYZ a",
    "ip -b /etc/passwd",
    "ip -batch /etc/passwd",
    "ip -force -batch /etc/passwd",
    "ip -all netns exec id",
    "ip link set r0-eth1 netns 1",
    "ip link set r0-eth1 netns 4242",
    "ip link add x type veth peer name y netns 1",
    "ip link add x type veth peer name y link-netnsid 0",
    "ip vrf exec default id",
    "ip vr e default id",
    "tc -b /etc/passwd",
    "tc -batch /etc/passwd",
    "tc -n nrzzzzz_h1 qdisc show",
    "tc -cf /etc/shadow qdisc show",  # (was allowed) reads a class-name file
    "tc -conf /etc/shadow qdisc show",  # (was allowed)
    "tc filter add dev r0-eth1 bpf obj /tmp/x.o",
    "iptables-restore",
    "iptables --modprobe=/bin/sh -L",
    "iptables --mo=/bin/sh -L",  # (was allowed) getopt abbreviation
    "iptables --modp /bin/sh -L",  # (was allowed)
    "iptables -nM/bin/sh -L",  # (was allowed) getopt cluster
    "iptables -M /bin/sh -L",
    "iptables -m bpf --bytecode 1 -j DROP",
    "iptables-save -f /tmp/pwned",
    "iptables-save --fi=/tmp/pwned",  # (was allowed) wrote the file as root
    "iptables-save --file=/tmp/pwned",
    "iptables-save -cf/tmp/pwned",  # (was allowed) wrote the file as root
    "iptables-save -M /bin/sh",
    "iptables-save --mo=/bin/sh",  # (was allowed)
    "sysctl -p /etc/sysctl.conf",
    "sysctl -p",
    "sysctl --system",
    "sysctl --load=/etc/sysctl.conf",
    "sysctl kernel.hostname",
    "sysctl -w kernel.panic=1",
    "sysctl -w vm.overcommit_memory=1",
    "sysctl -w net.ipv4/../../kernel/panic=1",
    "sysctl -w net.ipv4.ip_forward=1 kernel.panic=1",
    "arp -f /etc/ethers",
    "arp -nf /etc/shadow",  # (was allowed) read the file
    "arp -vf /etc/shadow",  # (was allowed)
    "arp --fi /etc/passwd",  # (was allowed)
    "ping -f 192.168.1.1",
    "ping -nf 192.168.1.1",
    "ping -A 192.168.1.1",  # (was allowed) adaptive: as fast as replies come
    "ping -l 65536 192.168.1.1",  # (was allowed) preload burst
    "ping -i 0 192.168.1.1",  # (was allowed) root may ping with no interval
    "ping -i0.001 192.168.1.1",  # (was allowed)
    "ping -c 5 -i 0.01 192.168.1.1",  # (was allowed)
    "/sbin/ip a",
    "/usr/sbin/iptables -L",
    "./ip a",
    "nsenter -t 1 -n ip a",
    "sudo -u nobody ip a",
    "\uff49\uff50 a",  # (was refused only as an unknown tool) full-width "ip"
    "ip \u2212n nrzzzzz_h1 a",  # (was allowed, harmless) minus-sign look-alike
    "ip addr show dev r0\u2010eth1",  # (was allowed, harmless) hyphen look-alike
    "ip -- -n nrzzzzz_h1 a",
    "ip route; id",
    "ip route && id",
    "ip route | id",
    "ip route > /tmp/pwned",
    "ip route $(id)",
    "ip route `id`",
    "ip route ${HOME}",
]


@pytest.mark.parametrize("command", FORBIDDEN)
def test_forbidden_commands(command: str) -> None:
    with pytest.raises(ForbiddenCommand):
        parse_reply(json.dumps({"machine": "r0", "command": command}), NODES, PREFIX)


@pytest.mark.parametrize(
    "machine",
    ["nrzzzzz_r0", "nrzzzzz_h1", "../nrzzzzz_r0", "r0/../h1", "net", "nrabcde_net", "host", ""],
)
def test_machines_outside_the_episode(machine: str) -> None:
    with pytest.raises(InvalidAction):
        parse_reply(json.dumps({"machine": machine, "command": "ip a"}), NODES, PREFIX)


@pytest.mark.parametrize(
    "command", ["ethtool -E r0-eth1 magic 0 offset 0 value 0", "ethtool -f r0-eth1 fw.bin"]
)
def test_ethtool_writes_are_refused(command: str) -> None:
    """Refused as writes, or as a missing tool where ethtool is not installed."""
    with pytest.raises(InvalidAction):
        parse_reply(json.dumps({"machine": "r0", "command": command}), NODES, PREFIX)


@pytest.mark.parametrize(
    "command",
    ["ip\x00 a", "ip a\ud800", "ip\u200b a", "ip a\x1b[2J"],
    ids=["nul", "surrogate", "zero-width", "escape"],
)
def test_unprintable_commands_are_invalid(command: str) -> None:
    """NUL made exec raise ValueError out of the episode before the fix."""
    with pytest.raises(InvalidAction):
        parse_reply(json.dumps({"machine": "r0", "command": command}), NODES, PREFIX)


@pytest.mark.parametrize(
    "command",
    [
        "iptables-save",
        "iptables-save -c -t nat",
        "iptables-save --table=filter",
        "iptables -t nat -A POSTROUTING -jMASQUERADE",
        "iptables -A FORWARD -m state --state NEW -j ACCEPT",
        "arp -n",
        "arp -s 192.168.1.5 00:11:22:33:44:55",
        "ping -c 3 -i 0.2 192.168.1.1",
        "ping -c1 -W1 192.168.1.1",
        "ping -b -c 1 192.168.1.255",
        "tc qdisc show",
        "sysctl -w net.ipv4.conf.all.forwarding=1",
    ],
)
def test_ordinary_commands_still_pass(command: str) -> None:
    parse_reply(json.dumps({"machine": "r0", "command": command}), NODES, PREFIX)


def _host_state() -> dict[str, str]:
    def run(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout

    sysctls = ("net/ipv4/ip_forward", "net/ipv4/conf/all/rp_filter", "kernel/hostname")
    return {
        "links": run("ip", "-o", "link", "show"),
        "addrs": run("ip", "-o", "addr", "show"),
        "routes": run("ip", "route", "show", "table", "all"),
        "rules": run("ip", "rule"),
        "iptables": "\n".join(
            ln for ln in run("iptables-save").splitlines() if not ln.startswith("#")
        ),
        "sysctl": " ".join(Path("/proc/sys", k).read_text() for k in sysctls),
        "tmp": " ".join(sorted(p.name for p in Path("/tmp").glob("pwned*"))),
    }


def _host_ips() -> list[str]:
    out = subprocess.run(
        ["ip", "-o", "-4", "addr", "show", "scope", "global"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return [line.split()[3].split("/")[0] for line in out.splitlines()]


@pytest.mark.root
@NEEDS_ROOT
def test_risky_allowed_commands_stay_in_the_episode() -> None:
    """Broadcast pings, pings to the host and outside, new links and routes, long and
    chatty commands: they run, are bounded, and the host is unchanged afterwards."""
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 1, "command_timeout_s": 1.0})
    before = _host_state()
    targets = [*_host_ips(), "8.8.8.8", "10.255.255.1"]  # 127.0.0.1 is the node's own
    commands = [
        ("r0", "ip link add pwn0 type veth peer name pwn1"),
        ("r0", "ip link set pwn0 up"),
        ("r0", "ip route add default dev pwn0"),
        ("r0", "ip link add br9 type bridge"),
        ("r0", "sysctl -w net.ipv4.ip_forward=0"),
        ("r0", "iptables -P FORWARD DROP"),
        ("h1", "ping -b -c 2 -i 0.2 -W 1 192.168.1.255"),
        ("h1", "ip monitor all"),
        ("r0", "sysctl -a"),
    ]
    commands += [("h1", f"ping -c 1 -W 1 {ip}") for ip in targets]
    with app.open(app.generate(5, 1, "DT")) as episode:
        for machine, command in commands:
            step = episode.step(json.dumps({"machine": machine, "command": command}))
            assert step.valid, (command, step.observation)
            output = episode.history[-1].output
            assert len(output) < 9000, command  # capped
            if command.startswith("ping -c 1"):
                assert " 0% packet loss" not in output, (command, output)
        assert "timed out" in episode.history[7].output  # ip monitor was stopped
    assert _host_state() == before
