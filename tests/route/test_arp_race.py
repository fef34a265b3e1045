"""A flow to an address two machines hold comes and goes by ARP race, not by the agent."""

from __future__ import annotations

from netarena.route.judge.checks import held_twice, regressions
from netarena.route.judge.pingall import PingMatrix

NODES = ("h1", "h2", "h3")
ALL = frozenset((s, d) for s in NODES for d in NODES if s != d)
ADDRESSES = {"h1": "10.0.1.1", "h2": "10.0.1.2", "h3": "10.0.1.3"}


def _matrix(pairs: frozenset[tuple[str, str]]) -> PingMatrix:
    return PingMatrix(NODES, pairs, pairs, pairs)


def _states(h3_address: str) -> dict[str, dict[str, str]]:
    return {
        "h1": {"addr h1-eth0 10.0.1.1/24": "", "route main 0.0.0.0/0 metric 0": "via 10.0.1.254"},
        "h2": {"addr h2-eth0 10.0.1.2/24": ""},
        "h3": {f"addr h3-eth0 {h3_address}/24": ""},
    }


ONE_LINK = {"h1 h1-eth0": 1, "h2 h2-eth0": 1, "h3 h3-eth0": 1}


def test_an_address_held_twice_on_one_link_names_its_probed_machine() -> None:
    assert held_twice(_states("10.0.1.2"), ADDRESSES, ONE_LINK) == frozenset({"h2"})
    assert held_twice(_states("10.0.1.3"), ADDRESSES, ONE_LINK) == frozenset()


def test_an_address_held_on_two_links_is_no_race() -> None:
    two_links = {**ONE_LINK, "h3 h3-eth0": 2}
    assert held_twice(_states("10.0.1.2"), ADDRESSES, two_links) == frozenset()


def test_flows_of_a_racing_machine_are_not_lost_but_others_are() -> None:
    of_h2 = frozenset(p for p in ALL if "h2" in p)
    to_h1 = frozenset(p for p in ALL if p[1] == "h1")
    before = _matrix(ALL)
    assert regressions(before, _matrix(ALL - of_h2), ALL, racing=frozenset({"h2"})) == []
    found = regressions(before, _matrix(ALL - of_h2 - to_h1), ALL, racing=frozenset({"h2"}))
    assert sorted(found) == sorted(f"lost {p}h3->h1" for p in ("", "tcp ", "udp "))
    assert regressions(before, _matrix(ALL - of_h2), ALL)  # no race named: lost
