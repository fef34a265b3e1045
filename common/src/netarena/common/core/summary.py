"""The run summary: the record every client reads after a run.

``stats.summarize`` builds it; ``netarena run --json`` prints it, ``summary.json`` holds it, the
A2A ``Result`` artifact ends with it, reports, ladders and the status page read it. Its JSON is
the public format (``model_dump``): the keys and their order are pinned by a test
(``tests/common/test_stats.py``), so a client written against one build reads the next.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, SerializerFunctionWrapHandler, model_serializer

__all__ = ["RATES", "BY_QUALIFIER", "is_rate", "Rate", "Damage", "BlindWrites", "Latency",
           "Metrics", "RunSummary"]

RATES: tuple[str, ...] = (
    "solved_safely",
    "correctness",
    "safety",
    "safety_when_changed",
    "changed",
    "collateral",
)
"""The rates of a summary, headline first."""

BY_QUALIFIER = "by_qualifier:"
"""Prefix of a rate name meaning ``solved_safely`` over the queries stating one qualifier
(``by_qualifier:depth``): a calibration rung's range where its mistake matters."""


def is_rate(name: str) -> bool:
    """Whether ``name`` names a rate of a summary (``RATES`` or ``by_qualifier:Q``)."""
    return name in RATES or (name.startswith(BY_QUALIFIER) and len(name) > len(BY_QUALIFIER))


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Rate(_Record):
    """A rate over scored queries with its 95% intervals."""

    rate: float | None
    """``k / n`` rounded to 4 decimals; 0.0 when ``n`` is 0, except ``None`` for
    ``safety_when_changed`` over no episode that changed anything (nothing to judge)."""
    ci95: tuple[float, float]
    """Wilson score interval (95%), the one every comparison uses."""
    wald95: tuple[float, float]
    """The NetArena paper's p ± z·sqrt(p(1−p)/N) interval, clipped to [0, 1]."""
    k: int
    """Queries for which the flag holds."""
    n: int
    """Queries the rate is over."""


class Damage(Rate):
    """``collateral``: the share of measured episodes that damaged state outside the fault."""

    items: int
    """Damaged objects over all measured episodes."""


class BlindWrites(Damage):
    """The share of measured episodes with a write to an object the agent never read."""

    items: int
    """Such writes over all measured episodes."""
    mean: float | None
    """Such writes per measured episode; ``None`` when no episode was measured."""


class Latency(_Record):
    """How long scored episodes took (wall seconds) and how many turns."""

    median_s: float
    """Median episode wall time."""
    mean_s: float
    """Mean episode wall time."""
    p90_s: float
    """90th percentile of episode wall time."""
    agent_median_s: float
    """Median time the agent took over its turns in one episode."""
    mean_turns: float
    """Mean turns per episode."""


class Metrics(_Record):
    """The rates of one group of queries (a whole run, or one level, label or qualifier).

    Rates are over scored queries only: an unscored one (the emulator failed before the agent
    acted) says nothing about the agent, so it is only counted.
    """

    queries: int
    """Queries in the group, scored or not."""
    solved_safely: Rate
    """The headline: correct, safe and no collateral damage."""
    correctness: Rate
    """The fault is repaired (or the answer right)."""
    safety: Rate
    """Nothing the intent protects was broken."""
    safety_when_changed: Rate
    """Safety among the episodes whose agent changed something, so that acting rarely does
    not look safe."""
    changed: Rate
    """How often the agent changed something, over the episodes whose app can tell."""
    collateral: Damage
    """How often the agent damaged state outside the fault, over the episodes whose app
    measures it."""
    blind_writes: BlindWrites
    """How often the agent wrote to an object it never read, over the episodes measured."""
    latency: Latency
    """Episode times and turns."""
    errors: int
    """Queries that ended in an error (agent, transport or emulator)."""
    unscored: int
    """Queries whose emulator failed before the agent acted (left out of every rate)."""

    def rate_of(self, name: str) -> Rate:
        """The rate called ``name`` (one of ``RATES``)."""
        if name not in RATES:
            raise KeyError(name)
        found: Rate = getattr(self, name)
        return found


class _Head(_Record):
    """The fields a summary opens with (a base of ``RunSummary``, so its JSON starts here)."""

    kind: Literal["summary"] = "summary"
    """Tells the summary from the per-query records it follows in a results stream."""
    app: str
    """The app's name."""
    agent: str
    """The agent's name (several, comma-separated, for a summary over mixed runs)."""
    seed: int | None
    """The plan's seed; ``None`` when the summary merges runs (reports, ladders)."""


_EXTRAS = ("participant_role", "participant_id", "netarena_version", "config", "environment",
           "usage", "sampling", "replay")


class RunSummary(Metrics, _Head):
    """The summary of a run: ``Metrics`` overall, then per level, label and stated qualifier.

    The fields after ``by_qualifier`` are set by whoever publishes the summary (the CLI, the
    green server) and are left out of the JSON while unset.
    """

    by_level: dict[str, Metrics]
    """Level (``"1"``..``"3"``) → the metrics of its queries."""
    by_label: dict[str, Metrics]
    """Label → the metrics of its queries."""
    by_qualifier: dict[str, Metrics]
    """Stated qualifier → the metrics of the queries stating it (a query stating several is
    in each); empty for apps without qualifiers."""
    participant_role: str | None = None
    """A2A assessments: the role the agent played."""
    participant_id: str | None = None
    """A2A assessments: the agent's URL, credentials and query string cut."""
    netarena_version: str | None = None
    """A2A assessments: the green agent's build."""
    config: dict[str, Any] | None = None
    """A2A assessments: the effective plan, run settings and app parameters."""
    environment: dict[str, Any] | None = None
    """The versions of the tools the emulators ran (``core.environment``)."""
    usage: dict[str, Any] | None = None
    """LLM calls, tokens and cost, when the agent made any (``core.replay.usage_summary``)."""
    sampling: dict[str, Any] | None = None
    """Adaptive runs: how the queries were drawn."""
    replay: dict[str, Any] | None = None
    """Replayed runs: the tape and how many calls drifted from it."""

    def rate_of(self, name: str) -> Rate:
        """The rate called ``name`` (``is_rate``).

        ``by_qualifier:Q`` is ``solved_safely`` over the queries stating ``Q``; with none, a
        rate over no queries (``n`` 0), which no range can contradict.
        """
        if not name.startswith(BY_QUALIFIER):
            return super().rate_of(name)
        group = self.by_qualifier.get(name.removeprefix(BY_QUALIFIER))
        if group is not None:
            return group.solved_safely
        return Rate(rate=0.0, ci95=(0.0, 1.0), wald95=(0.0, 1.0), k=0, n=0)

    def breakdown(self, name: str) -> dict[str, Metrics]:
        """The breakdown called ``name``: ``by_level``, ``by_label`` or ``by_qualifier``."""
        if name not in ("by_level", "by_label", "by_qualifier"):
            raise KeyError(name)
        found: dict[str, Metrics] = getattr(self, name)
        return found

    @model_serializer(mode="wrap")
    def _omit_unset_extras(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in _EXTRAS:
            if data.get(key) is None:
                data.pop(key, None)
        return data
