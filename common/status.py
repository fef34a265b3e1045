"""Running and recent evaluations: the status page's data and the Prometheus metrics.

One ``Board`` per server. The executor reports each evaluation's start, progress and end to
it; the web layer renders it as the page at ``/`` and its counters at ``/metrics``. Finished
evaluations are kept in a bounded list (the newest ``keep`` of them), each with its summary,
so the page can link to a small report.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["Board", "Entry"]


@dataclass
class Entry:
    """One evaluation as the status page shows it."""

    task_id: str
    app: str
    role: str
    participant: str
    total: int = 0
    done: int = 0
    correct: int = 0
    state: str = "working"
    """``working``, ``completed``, ``failed`` or ``canceled``."""
    reason: str = ""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    summary: dict[str, Any] | None = None
    task: asyncio.Task[Any] | None = field(default=None, repr=False)

    def as_dict(self) -> dict[str, Any]:
        """JSON view (no task handle)."""
        return {
            "task_id": self.task_id, "app": self.app, "role": self.role,
            "participant": self.participant, "total": self.total, "done": self.done,
            "correct": self.correct, "state": self.state, "reason": self.reason,
            "started": self.started, "ended": self.ended, "summary": self.summary,
        }


class Board:
    """Evaluations of one server, with their Prometheus metrics.

    Args:
        keep: Finished evaluations kept for the page (oldest dropped first).
    """

    def __init__(self, keep: int = 50) -> None:
        self.keep = keep
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.registry = CollectorRegistry()
        self.queries = Counter(
            "netarena_queries", "Queries served, by app and outcome",
            ["app", "outcome"], registry=self.registry)
        self.running = Gauge(
            "netarena_evaluations_running", "Evaluations in progress", registry=self.registry)
        self.evaluations = Counter(
            "netarena_evaluations", "Evaluations finished, by final state",
            ["state"], registry=self.registry)
        self.latency = Histogram(
            "netarena_episode_latency_seconds", "Wall time of one episode",
            ["app"], registry=self.registry,
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))

    def running_count(self) -> int:
        """Evaluations not finished yet."""
        return sum(1 for e in self.entries.values() if e.ended is None)

    def start(self, entry: Entry) -> Entry:
        """Register a new evaluation."""
        self.entries[entry.task_id] = entry
        self.running.inc()
        return entry

    def progress(self, entry: Entry, *, app: str, correct: bool, scored: bool,
                 latency_s: float) -> None:
        """Count one finished query."""
        entry.done += 1
        entry.correct += int(correct)
        outcome = "unscored" if not scored else "correct" if correct else "incorrect"
        self.queries.labels(app=app, outcome=outcome).inc()
        self.latency.labels(app=app).observe(latency_s)

    def finish(self, entry: Entry, state: str, reason: str = "",
               summary: dict[str, Any] | None = None) -> None:
        """Record how an evaluation ended (idempotent) and drop the oldest finished ones."""
        if entry.ended is not None:
            return
        entry.state, entry.reason, entry.summary = state, reason, summary
        entry.ended = time.time()
        entry.task = None
        self.running.dec()
        self.evaluations.labels(state=state).inc()
        finished = [k for k, e in self.entries.items() if e.ended is not None]
        for key in finished[: max(0, len(finished) - self.keep)]:
            del self.entries[key]

    def cancel_all(self) -> int:
        """Cancel every running evaluation; return how many were cancelled."""
        tasks = [e.task for e in self.entries.values() if e.ended is None and e.task]
        for task in tasks:
            task.cancel()
        return len(tasks)
