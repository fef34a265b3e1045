"""The judge fails closed, and an episode cannot load the host: objects, memory, floods."""

from __future__ import annotations

import re
import subprocess
import time

import pytest

from netarena.route import RouteApp
from netarena.route.emulator import rulesets
from netarena.route.linux.cgroups import COMMANDS, MAX_TASKS, MEMORY_BYTES, hierarchy
from netarena.route.sandbox import limits
from netarena.route.sandbox.limits import OBJECT_BUDGET, count_node

from .conftest import NEEDS_ROOT, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


@pytest.mark.parametrize(
    ("setting", "value", "reason"),
    [("LISTING_TIMEOUT_S", 0.0, "did not finish within 0 s"),
     ("LISTING_MAX_BYTES", 50, "printed more than 50 bytes")],
)
def test_an_unreadable_listing_makes_the_step_invalid_and_unsafe(
    small_app: RouteApp, monkeypatch: pytest.MonkeyPatch, setting: str, value: float, reason: str
) -> None:
    """A listing that times out or is cut is never read as "no rules"."""
    with small_app.open(small_app.generate(71, 1, "DR")) as episode:
        assert episode.step(reply("h1", "ip addr")).valid  # readable: a valid, safe step
        assert episode.ledger.safe
        with monkeypatch.context() as patch:
            patch.setattr(rulesets, setting, value)
            result = episode.step(reply("h1", "ip route"))
        assert not result.valid
        assert "the judge cannot read the state" in result.observation
        assert f"h1: its packet filters cannot be read: `nft -j list ruleset` {reason}" in (
            result.observation
        )
        assert episode.unreadable["h1"] and not episode._solved(episode.state)
        assert episode.step(reply("h1", "ip addr")).valid  # readable again
        assert not episode.unreadable["h1"]
        assert not episode.score().safe


def test_the_guard_counts_elements_tc_objects_conntrack_and_addresses(
    small_app: RouteApp,
) -> None:
    with small_app.open(small_app.generate(72, 1, "RI")) as episode:
        netns = episode.net.netns("h2")
        before = count_node(netns)
        setup = (
            "nft add table inet t && nft add set inet t s '{ type ipv4_addr; }' && "
            "nft add element inet t s '{ 10.9.0.1, 10.9.0.2, 10.9.0.3 }' && "
            "nft add map inet t m '{ type inet_service : ipv4_addr; }' && "
            "nft add element inet t m '{ 80 : 10.9.0.1, 81 : 10.9.0.2 }' && "
            "nft add chain inet t c '{ type filter hook output priority 0; }' && "
            "nft add rule inet t c ct state new ip daddr '{ 10.8.0.1, 10.8.0.2 }' accept && "
            "tc qdisc add dev h2-eth0 root handle 1: htb && "
            "tc class add dev h2-eth0 parent 1: classid 1:1 htb rate 1mbit && "
            "tc class add dev h2-eth0 parent 1: classid 1:2 htb rate 1mbit && "
            "tc qdisc add dev h2-eth0 clsact && "
            "ip addr add 10.7.0.1/32 dev lo && ip addr add 10.7.0.2/32 dev lo && "
            "ping -c 3 -i 0.2 -W 1 127.0.0.1 > /dev/null; echo done"
        )
        result = episode.net.shell("h2", setup, timeout_s=10)
        assert result.output.strip().endswith("done"), result.output
        after = count_node(netns)
        # 3 + 2 elements and the rule's anonymous set of 2
        assert after["set elements"] - before["set elements"] == 7
        assert after["filter rules"] - before["filter rules"] == 1
        # table, chain, set, map and the anonymous set
        assert after["filter objects"] - before["filter objects"] == 5
        # htb replaces the default qdisc, clsact is one more; 2 classes
        assert after["tc objects"] - before["tc objects"] == 1 + 2
        assert after["addresses"] - before["addresses"] == 2
        assert after["conntrack entries"] >= 1  # the pings, tracked by the rule's ct
        match = "protocol ip u32 match ip dst 10.6.0.1 flowid 1:1"
        filters = [f"dev h2-eth0 parent {p} {match}" for p in ("1:", "1:1", "1:2")]
        filters.append(f"dev h2-eth0 ingress {match}")
        for where in filters:  # a filter under the qdisc, under each class, at ingress
            tc = count_node(netns)["tc objects"]
            added = episode.net.shell("h2", f"tc filter add {where} && echo added")
            assert added.output.strip().endswith("added"), added.output
            assert count_node(netns)["tc objects"] > tc, where


@pytest.mark.serial
def test_300k_set_elements_are_stopped_and_the_network_torn_down(small_app: RouteApp) -> None:
    """Batches of 10,000 elements (300,000 in all): stopped past the budget, never listed."""
    batch = (
        "python3 -c 'import sys; i=int(sys.argv[1]); print(\"add element ip t s {\" + "
        "\",\".join(f\"10.{i}.{j >> 8}.{j & 255}\" for j in range(10000)) + \"}\")' $i"
    )
    command = (
        "nft add table ip t; nft add set ip t s '{ type ipv4_addr; }'; "
        f"for i in $(seq 1 30); do {batch} | nft -f - || break; done; echo finished"
    )
    with small_app.open(small_app.generate(73, 1, "DT")) as episode:
        started = time.monotonic()
        result = episode.step(reply("h1", command))
        elapsed = time.monotonic() - started
        turn = episode.history[-1]
        budget = OBJECT_BUDGET["set elements"]
        assert f"set elements (at most {budget})" in turn.output, turn.output
        assert "[stopped:" in turn.output and "finished" not in turn.output
        assert result.done and "the network was torn down" in result.observation
        assert elapsed < 30, elapsed  # the 300k listing alone used to take more than 10 s
        assert not episode.score().safe


@pytest.mark.skipif(hierarchy().version is None, reason="no memory control group here")
def test_the_memory_cgroup_caps_a_2gb_allocation(small_app: RouteApp) -> None:
    """Ten processes of 200 MB each, every one within its own address-space limit."""
    hog = "python3 -c 'b = bytearray(200_000_000); import time; time.sleep(2); print(\"held\")'"
    command = f"for i in $(seq 10); do {hog} & done; wait; echo all-ended"
    with small_app.open(small_app.generate(74, 1, "DI")) as episode:
        alone = episode.net.shell("h1", hog, timeout_s=20)
        assert alone.output == "held\n", alone.output  # one fits its own limits
        # reclaim before the kill takes 4-20 s alone and longer under load: time is not the point
        result = episode.net.shell("h1", command, timeout_s=120)
        assert "all-ended" in result.output, result.output
        held = result.output.count("held\n")
        assert held <= MEMORY_BYTES // 200_000_000, result.output
        assert "Killed" in result.output and "MemoryError" not in result.output
        peak = episode.net.sandbox.group.peak_memory_bytes()
        assert peak is not None and 2 * 200_000_000 <= peak <= MEMORY_BYTES


@pytest.mark.skipif(hierarchy().version is None, reason="no pids control group here")
def test_a_finished_command_leaves_nothing_charged_to_the_episodes_process_limit(
    small_app: RouteApp,
) -> None:
    """Zombies count against a pids limit. With bwrap's own reaper as PID 1 of a node's
    namespace, each command left that reaper to the host's init; where init reaps late
    (this machine's), 64 commands filled the episode's limit and every later one failed
    with "fork: Resource temporarily unavailable"."""
    with small_app.open(small_app.generate(76, 1, "WR")) as episode:
        group = episode.net.sandbox.group
        for _ in range(MAX_TASKS + 6):
            result = episode.net.shell("h1", "true")
            assert result.returncode == 0, result.output
        charged = [
            int(path.read_text()) for d in group.dirs
            if (path := d / COMMANDS / "pids.current").exists()
        ]
        assert charged == [0], charged


def test_what_a_command_detaches_ends_with_it(small_app: RouteApp) -> None:
    """The command is PID 1 of the node's PID namespace (``--as-pid-1``): whatever it leaves
    behind, detached or not, and even after killing PID 1, is killed when it ends."""
    detached = ["setsid nohup sleep 4242 >/dev/null 2>&1 &", "(sleep 4243 &); disown -a",
                "kill -9 1; sleep 4244 &"]
    with small_app.open(small_app.generate(77, 1, "WR")) as episode:
        for command in detached:
            assert episode.net.shell("h1", command).returncode == 0
        left = subprocess.run(["pgrep", "-f", "sleep 424[234]"], capture_output=True, text=True)
        assert left.stdout == "", left.stdout


def test_a_ping_flood_is_rate_limited(small_app: RouteApp, monkeypatch: pytest.MonkeyPatch) -> None:
    """``ping -f`` spelled so the deny list misses it: the fabric still drops the excess."""
    monkeypatch.setattr(limits, "ICMP_RATE_PER_S", 100)
    monkeypatch.setattr(limits, "ICMP_BURST", 100)
    with small_app.open(small_app.generate(75, 1, "WR")) as episode:
        peer = next(h for h in episode.plan.hosts if h.subnet == episode.plan.hosts[0].subnet)
        other = [h for h in episode.plan.hosts if h.subnet == peer.subnet][1]
        result = episode.net.shell(peer.name, f"P=ping; $P -q -f -w 2 {other.ip}", timeout_s=5)
        found = re.search(r"(\d+) packets transmitted, (\d+) received", result.output)
        assert found, result.output
        sent, received = int(found.group(1)), int(found.group(2))
        # at most the burst plus 2 s at the rate (echo requests and replies both count)
        assert sent > received and received <= 100 + 2 * 100 + 20, result.output
        own = episode.net.shell(peer.name, "P=ping; $P -q -f -w 2 127.0.0.1", timeout_s=5)
        found = re.search(r"(\d+) packets transmitted, (\d+) received", own.output)
        assert found and int(found.group(2)) > 1000, own.output  # unlimited: the loopback
