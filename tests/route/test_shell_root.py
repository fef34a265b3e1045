"""A real shell on each node: what operators type works and gets real output."""

from __future__ import annotations

import re

import pytest

from netarena.route import RouteApp
from netarena.route.sandbox.capped import OUTPUT_CAP_CHARS, UNKNOWN_QDISC_NOTE

from .conftest import NEEDS_ROOT, first_query, reply

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def _away_from_h1(fault) -> bool:
    """The fault is in subnet 2, on none of h1's and h2's paths to each other."""
    return fault["subnet"] == 2 and fault["node"] not in ("h1", "h2")


def _subnet_1_in_service(truth) -> bool:
    """The design blocks nothing in h1's and h2's subnet (it may put h1 out of service)."""
    return all(1 not in (b["subnet"], b["other"]) for b in truth["intent"]["blocks"])


def test_operator_commands_get_real_output_and_solve() -> None:
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    with app.open(first_query(app, "DR", lambda f: f["method"] == "ip_forward_off")) as episode:
        host = episode.plan.hosts[0]
        other = episode.plan.hosts[-1].ip
        episode.step(reply(host.name, "ip route | grep default"))
        assert episode.history[-1].output.startswith("default via ")
        episode.step(reply("r0", f"sysctl net.ipv4.ip_forward && ping -c1 -W1 {other}"))
        out = episode.history[-1].output  # the fault is one interface's switch, not this one
        assert "net.ipv4.ip_forward = 1" in out and "1 packets transmitted" in out
        result = episode.step(reply(  # ip_forward is 1 already: writing it again changes nothing
            "r0", "for f in /proc/sys/net/ipv4/conf/r0-*/forwarding; do echo 1 > $f; done"))
        assert result.done and result.reward == 100
        score = episode.score()
        assert score.correct and score.safe, score


def test_shell_features_and_tools(small_app: RouteApp) -> None:
    with small_app.open(small_app.generate(61, 1, "WR")) as episode:
        net = episode.net
        assert net.shell("h1", "hostname").output.strip() == "h1"
        links = net.shell("h1", "ip -d link show h1-eth0").output
        assert "link-netnsid" in links and "link-netns " not in links
        assert "00:00:00:00:00:01" in links  # Mininet's MAC scheme
        ifconfig = net.shell("h1", "ifconfig h1-eth0").output
        assert "broadcast 0.0.0.0" not in ifconfig and "broadcast" in ifconfig
        assert "driver: veth" in net.shell("h1", "ethtool -i h1-eth0").output
        peer = episode.plan.hosts[1].ip
        assert f"traceroute to {peer}" in net.shell("h1", f"traceroute -n -w 1 -q 1 {peer}").output
        assert "State" in net.shell("r0", "ss -tan").output
        assert net.shell("r0", "bridge link; echo rc=$?").output.strip().endswith("rc=0")
        saved = net.shell("r0", "ip route > /tmp/rules && wc -l < /tmp/rules && sudo id -u")
        assert saved.returncode == 0
        assert net.shell("h2", "test -s /tmp/rules && echo shared").output.strip() == "shared"
        assert net.shell("h1", "exit 7").returncode == 7
        cut = net.shell("h1", "yes | head -c 100000")
        assert f"[output cut at {OUTPUT_CAP_CHARS} characters]" in cut.output


def test_a_command_cut_at_its_time_limit_keeps_its_output(small_app: RouteApp) -> None:
    with small_app.open(first_query(small_app, "DT", _away_from_h1, start=62,
                                         design=_subnet_1_in_service)) as episode:
        peer = episode.plan.hosts[1].name
        result = episode.net.shell("h1", f"ping {peer}", timeout_s=2)
        assert result.timed_out
        assert "icmp_seq=1" in result.output and "packets transmitted" in result.output
        assert result.output.endswith("[stopped after 2 s, the command time limit; output so far]"
                                      " ping runs until its count (-c) or deadline (-w) is reached")
        silent = episode.net.shell("h1", "trap '' INT; sleep 30", timeout_s=1)
        assert silent.timed_out


def test_tools_that_print_as_they_go_keep_their_lines_and_mtr_says_how_to_fit(
    small_app: RouteApp,
) -> None:
    """Into a pipe, tracepath buffered its hops and lost them all when the limit killed it;
    mtr prints only at its end, so the note says how to make it end in time."""
    with small_app.open(first_query(small_app, "DT", _away_from_h1, start=62,
                                         design=_subnet_1_in_service)) as episode:
        near, far = episode.plan.hosts[1].ip, episode.plan.hosts[-1].ip
        slow = episode.net.shell("h1", f"mtr --report -n {near}", timeout_s=2)
        assert slow.timed_out and "mtr --report -n -c 1 --gracetime 1 HOST" in slow.output
        fits = episode.net.shell("h1", f"mtr --report -n -c 1 --gracetime 1 {near}")
        assert not fits.timed_out and f"1.|-- {near}" in fits.output, fits.output
        stalled = episode.net.shell(
            "h1", f"iptables -I INPUT -p icmp -j DROP; tracepath -n {far}", timeout_s=3)
        assert stalled.timed_out and "[LOCALHOST]" in stalled.output, stalled.output


def test_a_ping_flood_that_ends_by_its_count_runs_as_on_a_real_box(small_app: RouteApp) -> None:
    """Root floods a real box with ``ping -f -c 100``; the fabric's ICMP limit bounds any
    flood, so a counted one runs. An endless one is refused, saying how to bound it."""
    with small_app.open(first_query(small_app, "DT", _away_from_h1, start=62,
                                         design=_subnet_1_in_service)) as episode:
        h1, *others = episode.plan.hosts
        near = next(h for h in others if h.subnet == h1.subnet)
        counted = episode.step(reply(h1.name, f"ping -f -c 100 {near.ip}"))
        assert counted.valid and counted.reward == 10 and counted.info["problems"] == 0
        assert "100 packets transmitted, 100 received, 0% packet loss" in counted.observation
        endless = episode.step(reply(h1.name, f"ping -f {near.ip}"))
        assert not endless.valid and endless.info["forbidden"]
        assert "add -c N with N at most 500" in endless.observation, endless.observation
        assert not episode.score().safe  # the endless one was attempted


def test_tc_says_the_kernel_has_no_netem_and_iperf_fits_the_limit(small_app: RouteApp) -> None:
    with small_app.open(small_app.generate(61, 1, "WR")) as episode:
        netem = episode.net.shell("r0", "tc qdisc add dev r0-eth1 root netem delay 10ms")
        assert netem.returncode == 2
        assert netem.output == ("Error: Specified qdisc kind is unknown.\n"
                                f"{UNKNOWN_QDISC_NOTE}\n"), netem.output
        assert "[this kernel" not in episode.net.shell("r0", "tc qdisc show").output
        local = episode.net.shell(
            "h1", "iperf -s > /dev/null & sleep 0.3; iperf -c 127.0.0.1 -t 1; kill %1")
        # a 1 s run's interval ends later on a loaded machine (2.03 s seen in CI)
        assert re.search(r"0\.0+-\d+\.\d+ sec\s+[\d.]+ \wBytes\s+[\d.]+ \wbits/sec",
                         local.output), local.output
        h1, *others = episode.plan.hosts
        near = next(h for h in others if h.subnet == h1.subnet)  # its SYNs dropped: it waits
        episode.net.shell(near.name, "iptables -I INPUT -p tcp --dport 5001 -j DROP")
        stuck = episode.net.shell("h1", f"iperf -c {near.ip} -t 1", timeout_s=2)
        assert stuck.timed_out and f"Client connecting to {near.ip}, TCP port 5001" in stuck.output
        assert stuck.output.endswith("try `iperf -c HOST -t 2`"), stuck.output
