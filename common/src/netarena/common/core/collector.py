"""CPython's cyclic garbage collector, tuned for an evaluator's allocations.

An episode allocates many small containers that live as long as it does (an API server's
objects and their shared copies, parsed command output, probe results). With CPython's
default first-generation threshold (a collection every 700 net allocations) the collector
ran so often, and promoted so much, that it took about a third of a k8s episode's CPU
(``perf``; docs/tests.md, "The whole run by program"). Reference counting frees nearly all of
it anyway; the collector only has to find cycles. Looking 70 times less often costs memory:
cycles (a closed episode's objects among them) live longer, and a process playing a k8s rung
peaked at 340 MB instead of 249 MB. Set once per process, by its entry point (the
``netarena`` command, the test workers), never by a library call in somebody else's process.
"""

from __future__ import annotations

import gc

__all__ = ["THRESHOLDS", "tune_collector"]

THRESHOLDS = (50_000, 20, 100)
"""``gc.set_threshold`` arguments (CPython's defaults: 700, 10, 10)."""


def tune_collector() -> None:
    """Collect cycles less often (``THRESHOLDS``)."""
    gc.set_threshold(*THRESHOLDS)
