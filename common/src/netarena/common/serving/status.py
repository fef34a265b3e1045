"""Running and recent evaluations: the status page's data and the Prometheus metrics.

One ``Board`` per server. The executor reports each evaluation's start, progress and end to
it; the web layer renders it as the page at ``/`` and its counters at ``/metrics``. Finished
evaluations are kept in a bounded list (the newest ``keep`` of them), each with its summary,
so the page can link to a small report.

The page and its JSON are public, so they name each evaluation by a random ``public_id``,
never by its A2A task id: in A2A, knowing a task id is what lets a client read, cancel or
resubscribe to that task. They show participant URLs without user info, query or fragment
(``public_url``): a requester may put a password or an API key there. A server without a
bearer token shows each evaluation's summary but not the reasons individual queries failed
(``Entry.detail``): anyone can read it.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from netarena.common.core.summary import RunSummary
from netarena.common.serving.outbound import public_text, public_url

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
    """``working``, ``completed``, ``failed``, ``rejected`` or ``canceled``."""
    reason: str = ""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    summary: RunSummary | None = None
    detail: str = ""
    """Per-query detail of ``reason`` (the queries' own errors), shown only to token holders."""
    task: asyncio.Task[Any] | None = field(default=None, repr=False)
    public_id: str = field(default_factory=lambda: secrets.token_hex(8))
    """The name the public pages use (the task id is the owner's secret)."""

    def __post_init__(self) -> None:
        self.participant = public_url(self.participant)

    def as_dict(self, *, detail: bool = False) -> dict[str, Any]:
        """JSON view (no task id, no task handle); ``detail`` for token holders only."""
        view = {
            "id": self.public_id, "app": self.app, "role": self.role,
            "participant": self.participant, "total": self.total, "done": self.done,
            "correct": self.correct, "state": self.state, "reason": public_text(self.reason),
            "started": self.started, "ended": self.ended,
            "summary": self.summary.model_dump(mode="json") if self.summary else None,
        }
        if detail:
            view["detail"] = public_text(self.detail)
        return view


class Board:
    """Evaluations of one server, with their Prometheus metrics.

    Args:
        keep: Finished evaluations kept for the page (oldest dropped first).
    """

    def __init__(self, keep: int = 50) -> None:
        self.keep = keep
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.closing = False
        """Set when the server is stopping: no new evaluation starts."""
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
        """Register a new evaluation (``entries`` is keyed by its ``public_id``)."""
        self.entries[entry.public_id] = entry
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
               summary: RunSummary | None = None, detail: str = "") -> None:
        """Record how an evaluation ended (idempotent) and drop the oldest finished ones."""
        if entry.ended is not None:
            return
        entry.state, entry.reason, entry.summary = state, reason, summary
        entry.detail = detail
        entry.ended = time.time()
        entry.task = None
        self.running.dec()
        self.evaluations.labels(state=state).inc()
        finished = [k for k, e in self.entries.items() if e.ended is not None]
        for key in finished[: max(0, len(finished) - self.keep)]:
            del self.entries[key]

    def cancel_all(self) -> int:
        """Cancel every running evaluation; return how many were cancelled.

        From then on ``closing`` is set: no new evaluation starts.
        """
        self.closing = True
        tasks = [e.task for e in self.entries.values() if e.ended is None and e.task]
        for task in tasks:
            task.cancel()
        return len(tasks)
