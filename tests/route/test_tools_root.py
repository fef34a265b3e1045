"""The tools an engineer types work in node shells, and nothing gives the emulator away."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from netarena.route import RouteApp
from netarena.route.linux.namespaces import PREFIX_RE
from netarena.route.static.episode import RouteEpisode

from .conftest import NEEDS_ROOT, first_query

pytestmark = [pytest.mark.root, NEEDS_ROOT]


@pytest.fixture(scope="module")
def episode() -> Iterator[RouteEpisode]:
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    with app.open(app.generate(61, 1, "WR")) as opened:
        yield opened


def _run(episode: RouteEpisode, command: str, node: str = "h1") -> str:
    result = episode.net.shell(node, command, timeout_s=8)
    assert "command not found" not in result.output and result.returncode != 127, result.output
    return result.output


def _gateway(episode: RouteEpisode) -> str:
    return episode.plan.subnet(episode.plan.hosts[0].subnet).gateway


def _neighbour(episode: RouteEpisode) -> str:
    """A host on h1's own switch: reached over layer 2 whatever the router's fault (a wrong
    route on r0 with the network's rp_filter can leave h1 unable even to ARP the gateway)."""
    h1, *others = episode.plan.hosts
    return next(h.ip for h in others if h.subnet == h1.subnet)


def test_tcpdump_captures(episode: RouteEpisode) -> None:
    ping = f"(sleep 0.5; ping -c 3 -i 0.2 {_neighbour(episode)} > /dev/null) &"
    out = _run(episode, f"{ping} tcpdump -n -c 2 -i h1-eth0 icmp")
    assert "listening on h1-eth0" in out and "2 packets captured" in out, out
    assert "ICMP echo request" in out


def test_tracepath_traces(episode: RouteEpisode) -> None:
    peer = episode.plan.hosts[1].ip
    assert "reached" in _run(episode, f"tracepath -n -m 3 {peer}")


def test_mtr_reports(episode: RouteEpisode) -> None:
    peer = episode.plan.hosts[1].ip
    out = _run(episode, f"mtr -n -r -c 1 {peer}")
    assert "HOST: h1" in out and peer in out, out


def test_arping_gets_a_neighbours_mac(episode: RouteEpisode) -> None:
    out = _run(episode, f"arping -c 1 -w 2 {_neighbour(episode)}")
    assert "1 packets received" in out, out


def test_conntrack_lists_the_nodes_connections(episode: RouteEpisode) -> None:
    out = _run(episode, f"ping -c 1 -W 1 {_neighbour(episode)} > /dev/null; conntrack -L -p icmp")
    assert "flow entries have been shown" in out, out


@pytest.mark.parametrize(
    "command", ["dig +time=1 +tries=1 @{server} h2", "nslookup -timeout=1 -retry=0 h2 {server}"]
)
def test_dns_tools_query(episode: RouteEpisode, command: str) -> None:
    """No name server runs on the network: the tools still ask and say so."""
    out = _run(episode, command.format(server=_gateway(episode)))
    assert "no servers could be reached" in out and "communications error" in out, out


def test_ip_shows_no_internal_namespace_names(episode: RouteEpisode) -> None:
    shown = _run(episode, "ip addr; ip -d link; ip netns list")
    assert "link-netnsid 0" in shown and "link-netns " not in shown
    node = episode.net.mininet.nameToNode["h1"]  # the shell `netarena route shell` types into
    mininet = node.cmd("ip addr; ip -d link; ip netns list; ls /run/netarena-route")
    assert "link-netnsid 0" in mininet and "link-netns " not in mininet, mininet
    for word in re.findall(r"nr[0-9a-z]{5}_\w+", shown + mininet):
        assert not PREFIX_RE.match(word), word


def test_injected_addresses_look_typed() -> None:
    """A wrong address put in by a fault has a broadcast address, as every address does whose
    prefix has one (a /31 or /32, as the design's VIPs are, has none)."""
    app = RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
    query = first_query(app, "RI", lambda f: f["method"] in ("wrong_ip", "duplicate_ip"))
    with app.open(query) as opened:
        node = opened.faults[0]["node"]
        lines = _run(opened, "ip -4 addr show scope global", node).splitlines()
        inet = [line for line in lines if line.strip().startswith("inet ")]
        lengths = [int(line.split()[1].partition("/")[2]) for line in inet]
        assert inet and all(" brd " in line for line, n in zip(inet, lengths, strict=True)
                            if n <= 30), lines
