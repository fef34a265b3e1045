"""The judge cannot be fooled: fakes that make pings answer without repairing score <= 1/12.

Each fake was a way to get "correct" from the previous prober (the DNAT fake scored 11/12
correct there). Now a pair counts only when a secret sent from the source arrives in the
destination's namespace and a second secret born there comes back.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from netarena.route import RouteApp, pingmesh
from netarena.route.emulator.intent import intended_pairs
from netarena.route.judge.measure import ProbeTiming, measure
from netarena.route.linux.namespaces import enter

from .agents import FAKES
from .conftest import NEEDS_ROOT, first_query, play_script, reply, router_forward_drop

pytestmark = [pytest.mark.root, NEEDS_ROOT]

APP = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
QUERIES = [APP.generate(700 + i, 1 + i % 3) for i in range(12)]


def _correct_count(script) -> int:
    def one(query) -> bool:
        with APP.open(query) as episode:
            play_script(episode, script, max_turns=5)
            return episode.score().correct

    with ThreadPoolExecutor(4) as pool:
        return sum(pool.map(one, QUERIES))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FAKES))
def test_fake_repairs_score_at_most_one_in_twelve(name: str) -> None:
    assert _correct_count(FAKES[name]) <= 1


def test_fakes_really_make_the_kernel_answer(small_app: RouteApp) -> None:
    """The fakes are real: with them in place, a plain ``ping`` to a broken host answers."""
    query = small_app.generate(5, 1, "DI")
    with small_app.open(query) as episode:
        lost = sorted(episode.want - episode.matrix.ok)
        src, dst = lost[0]
        target = episode.plan.address(dst)
        before = episode.net.shell(src, f"ping -c1 -W1 {target}").returncode
        play_script(episode, FAKES["dnat-to-localhost"], max_turns=len(episode.plan.nodes))
        after = episode.net.shell(src, f"ping -c1 -W1 {target}")
        assert before != 0 and after.returncode == 0, after.output
        assert not episode.score().correct


def test_healthy_networks_match_their_intent() -> None:
    """Every kind of intent (management, protected hosts, restricted subnet) as built."""
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    seen: set[str] = set()
    for seed in range(40):
        query = app.generate(seed, 1)
        intent = query.truth["intent"]
        kinds = {k for k in ("management", "restricted") if intent[k]} | (
            {"protected"} if intent["protected"] else set()
        )
        if kinds <= seen:
            continue
        seen |= kinds
        from netarena.route.emulator.network import Network
        from netarena.route.emulator.topology import topology_of
        from netarena.route.emulator.undisclosed import Undisclosed

        plan, intent_, topo = topology_of(query)
        local = Undisclosed.from_dict(query.truth.get("undisclosed"))  # enforces the blocks
        with Network(plan, intent_, topo(), local=local) as net:
            want = intended_pairs(plan, intent_)
            assert measure(net, ProbeTiming(), want).ok == want
            assert pingmesh(net, expect=want).ok == want
        if seen == {"management", "restricted", "protected"}:
            break
    assert seen == {"management", "restricted", "protected"}


# Accept ICMP whose payload is not ping's (after its 16-byte timestamp, bytes 0x10, 0x11...).
UNLIKE_PING = (
    'iptables -A FORWARD -p icmp -m u32 ! --u32 "0>>22&0x3C@24=0x10111213" -j ACCEPT'
)


def test_a_rule_that_tells_probes_from_pings_repairs_nothing(small_app: RouteApp) -> None:
    """The judge's packets look like ``ping``'s: a rule cannot open the path for it alone."""
    query = first_query(small_app, "DR", router_forward_drop)
    with small_app.open(query) as episode:
        assert episode.faults[0]["method"] == "forward_policy_drop"
        src, dst = sorted(episode.want - episode.matrix.ok)[0]
        episode.step(reply("r0", UNLIKE_PING))
        assert episode.history[-1].exit_code == 0, episode.history[-1].output
        ping = episode.net.shell(src, f"ping -c1 -W1 {episode.plan.address(dst)}")
        assert ping.returncode != 0
        assert not episode.score().correct


def _echo_requests(data: list[bytes], source: str) -> list[bytes]:
    return [p for p in data if p[20] == 8 and socket.inet_ntoa(p[12:16]) == source]


def test_probe_requests_are_shaped_like_ping(small_app: RouteApp) -> None:
    """Same size, header fields and payload layout (timestamp, then 0x10, 0x11, ...)."""
    with small_app.open(small_app.generate(23, 1, "DI")) as episode:
        net, (src, dst) = episode.net, sorted(episode.matrix.ok)[0]
        routed = "r0" not in (src, dst) and net.plan.host(src).subnet != net.plan.host(dst).subnet
        with enter(net.netns(dst)):
            sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        with sock:
            sock.setblocking(False)
            pingmesh(net, expect=episode.matrix.ok)
            assert net.shell(src, f"ping -c1 -W1 {net.plan.address(dst)}").returncode == 0
            data = []
            while True:
                try:
                    data.append(sock.recv(2048))
                except BlockingIOError:
                    break
        probes = _echo_requests(data, net.plan.address(src))
        assert len(probes) >= 2
        real, judged = probes[-1], probes[0]
        for packet in (real, judged):
            assert len(packet) == 84 and packet[1] == 0  # TOS
            assert packet[8] == 64 - routed  # TTL: ping's, less one if the router forwarded it
            assert packet[6] & 0x40  # don't fragment, as ping sends
            assert packet[44:84] == bytes(range(0x10, 0x38))
            seconds, micros = int.from_bytes(packet[28:36], "little"), packet[36:44]
            assert abs(seconds - time.time()) < 30
            assert int.from_bytes(micros, "little") < 1_000_000


# Accept a source only while it sends faster than 2 packets/s: the judge probes in bursts,
# an operator's single ping does not.
BURSTS_ONLY = (
    "iptables -A FORWARD -m hashlimit --hashlimit-above 2/sec --hashlimit-burst 1 "
    "--hashlimit-mode srcip --hashlimit-name judge -j ACCEPT"
)
CLOCK_WINDOW = (
    'iptables -A FORWARD -m time --datestart "$(date -u -d @$(($(date +%s) - 60)) +%FT%T)" '
    '--datestop "$(date -u -d @$(($(date +%s) + 900)) +%FT%T)" -j ACCEPT'
)


@pytest.mark.parametrize("fake", [BURSTS_ONLY, CLOCK_WINDOW])
def test_a_path_open_only_by_rate_or_clock_is_not_repaired(small_app: RouteApp, fake: str) -> None:
    query = first_query(small_app, "DR", router_forward_drop)
    with small_app.open(query) as episode:
        assert [(f["method"], f["node"]) for f in episode.faults] == [("forward_policy_drop", "r0")]
        step = episode.step(reply("r0", fake))
        assert episode.history[-1].exit_code == 0, episode.history[-1].output
        assert not step.done and "time or traffic history" in step.observation
        if fake == CLOCK_WINDOW:  # the window is open: every intended pair answers now
            assert episode.matrix.ok == episode.want
        score = episode.score()
        assert not score.correct and score.safe


def test_rate_limited_logging_does_not_block_a_repair(small_app: RouteApp) -> None:
    query = first_query(small_app, "DR", router_forward_drop)
    with small_app.open(query) as episode:
        assert [(f["method"], f["node"]) for f in episode.faults] == [("forward_policy_drop", "r0")]
        episode.step(reply("r0", "iptables -I FORWARD -m limit --limit 5/min -j LOG"))
        assert episode.step(reply("r0", "iptables -P FORWARD ACCEPT")).done
        assert episode.score().correct
