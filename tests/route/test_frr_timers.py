"""Reading FRR's ``show thread timers`` (no root, no FRR needed): what ``settle`` waits on.

The samples are FRR 8.4's own output: bgpd wraps a peer's timers in parentheses, and a
timer overdue on a busy daemon (its callback not run yet) prints with a ``-`` in front.
"""

from __future__ import annotations

from netarena.route.frr.daemon_work import parse_timers

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

