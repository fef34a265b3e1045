"""Size limits of the route app, from measurements (``benchmarks/route_limits.py``).

On the 2-core reference machine, loaded by other work, the judged pingmesh reported 0
false results for: one network of up to 101 machines (10x10; 65 machines, 8x8, without
even needing its confirmation rounds), 8 networks of 26 machines at once, 4 of 37, 2 of
65; but 687 false results for 8 networks of 37 machines at once (10,656 pairs probed
together). So a network may have up to ``MAX_MACHINES`` machines, a run up to
``MAX_CONCURRENT_EPISODES`` episodes, and the episodes live at once in one process share
a budget of ``PAIR_BUDGET`` probed pairs: a large network waits for room instead of
being judged on noise. Requests above the first two limits get a ``ConfigError``.
"""

from __future__ import annotations

import threading

__all__ = ["MAX_MACHINES", "MAX_CONCURRENT_EPISODES", "PAIR_BUDGET", "LiveNetworks"]

MAX_MACHINES = 65
"""Most machines (hosts plus the router) in one network (8 subnets of 8 hosts)."""
MAX_CONCURRENT_EPISODES = 8
"""Most live route networks at once in one process."""
PAIR_BUDGET = 5400
"""Most ordered pairs probed by the live networks of one process together."""


class LiveNetworks:
    """A gate on the live networks of this process: their count and their pairs."""

    def __init__(
        self, episodes: int = MAX_CONCURRENT_EPISODES, pairs: int = PAIR_BUDGET
    ) -> None:
        self._room = threading.Condition()
        self._episodes, self._pairs = episodes, pairs
        self._live: list[int] = []

    def acquire(self, pairs: int) -> None:
        """Wait until a network of ``pairs`` ordered pairs fits (alone, it always does)."""
        with self._room:
            self._room.wait_for(
                lambda: not self._live
                or (len(self._live) < self._episodes and sum(self._live) + pairs <= self._pairs)
            )
            self._live.append(pairs)

    def release(self, pairs: int) -> None:
        """A network of ``pairs`` pairs is gone."""
        with self._room:
            self._live.remove(pairs)
            self._room.notify_all()
