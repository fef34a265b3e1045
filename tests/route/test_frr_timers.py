"""Reading FRR's ``show thread timers`` (no root, no FRR needed): what ``settle`` waits on.

The samples are FRR 8.4's own output: bgpd wraps a peer's timers in parentheses, and a
timer overdue on a busy daemon (its callback not run yet) prints with a ``-`` in front.
"""

from __future__ import annotations

from types import SimpleNamespace

from netarena.route.frr.daemon_work import ospf_heard_since, parse_timers

BGPD = """
Showing timers for default
--------------------------
  bgp_announce_route_timer_expired                  00:00:00.098
  (bgp_holdtime_timer)                              00:00:02.957
  bgp_route_map_update_timer                        -00:00:00.020
  bgp_startup_timer_expire                          00:01:53.953

Showing timers for BGP I/O thread
---------------------------------

Showing timers for BGP Keepalives thread
----------------------------------------
"""


def test_every_timer_is_read_with_its_time_left() -> None:
    """An overdue one too (negative): its run has not happened yet, so it is work ahead."""
    assert parse_timers(BGPD) == [
        ("bgp_announce_route_timer_expired", 0.098),
        ("bgp_holdtime_timer", 2.957),
        ("bgp_route_map_update_timer", -0.02),
        ("bgp_startup_timer_expire", 113.953),
    ]



def _answers(*entries: dict[str, object]) -> SimpleNamespace:
    """A network of one router whose ``show ip ospf neighbor json`` lists ``entries``."""
    data = {"neighbors": {f"10.255.0.{i}": [e] for i, e in enumerate(entries, 2)}}
    return SimpleNamespace(ospf=SimpleNamespace(links=[], routers=["r1"]),
                           ask_all=lambda daemon, command: [("r1", (100.0, 100.1, data))])


def test_a_neighbour_without_a_running_dead_timer_is_not_heard() -> None:
    """FRR prints ``"deadTimeMsecs": "inactive"`` then; it once crashed the settle loop."""
    # the dead interval (1 s here) less the 0.7 s left: last heard 0.3 s before the ask at 100
    heard = {"nbrState": "Full/DROther", "ifaceName": "eth1:10.0.0.1", "deadTimeMsecs": 700}
    assert ospf_heard_since(_answers(heard), 99.0)  # type: ignore[arg-type]
    assert not ospf_heard_since(_answers(heard), 99.9)  # type: ignore[arg-type]
    inactive = {**heard, "deadTimeMsecs": "inactive"}
    assert not ospf_heard_since(_answers(heard, inactive), 99.0)  # type: ignore[arg-type]
