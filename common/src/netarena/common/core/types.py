"""Flat, frozen, JSON round-trippable records that flow through the loop.

``Query`` (made by an App) → ``StepResult`` (made by an Episode per action) →
``Score`` (made by an Episode at the end) → ``QueryResult`` (made by the Runner).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Kind", "Query", "StepResult", "Score", "QueryResult", "query_id", "query_record",
    "RESULT_FORMAT", "ROLE_NAME", "valid_role",
]

Kind = Literal["constructive", "reactive"]

#: Version of the per-query record layout written to JSONL and A2A artifacts.
RESULT_FORMAT = 1


ROLE_NAME = "[a-z][a-z0-9_]{0,63}"
"""What a participant role name is (``malt_operator``), matched whole: an identifier, so it
is safe as a key in results files, leaderboard queries and file names."""

_ROLE = re.compile(ROLE_NAME)


def valid_role(name: object) -> bool:
    """Whether ``name`` is a participant role name (``ROLE_NAME``)."""
    return isinstance(name, str) and _ROLE.fullmatch(name) is not None


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def query_id(app: str, seed: int, level: int, label: str, params: dict[str, Any]) -> str:
    """Derive a stable query id from everything that determines the query.

    Args:
        app: App name.
        seed: The per-query seed.
        level: Difficulty level 1-3.
        label: Operation or fault-combination label.
        params: App parameters that change generation (e.g. topology size).

    Returns:
        ``"<app>-L<level>-<label>-<seed>"`` plus a short digest of ``params`` when non-empty.
    """
    base = f"{app}-L{level}-{label}-{seed}"
    if not params:
        return base
    digest = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:8]
    return f"{base}-{digest}"


class Query(_Record):
    """One generated task. Everything needed to rebuild its episode, plus the hidden truth."""

    id: str
    """Stable id derived from app, seed, level, label and params (see ``query_id``)."""
    app: str
    """Name of the app that generated it."""
    seed: int
    """Seed that generated it; ``App.generate(seed, level, label, params)`` rebuilds it."""
    level: int = Field(ge=1, le=3)
    """Difficulty level: 1 single operation/fault, 2 two, 3 control flow / harder combos."""
    label: str
    """Operation or fault combination, e.g. ``remove-rank`` or ``DI+WR``."""
    prompt: str
    """The task as shown to the agent (complete: role, task, answer format)."""
    params: dict[str, Any] = Field(default_factory=dict)
    """App parameters the query was generated with (topology size, backend, ...)."""
    qualifiers: list[str] = Field(default_factory=list)
    """Details the prompt states that the answer depends on (malt: ``depth``, ``order``,
    ``top``, ...); summaries break accuracy down by each, so a report shows what an agent
    misreads. Empty for apps without them."""
    truth: dict[str, Any] = Field(default_factory=dict)
    """Hidden ground truth: action sequence A* (constructive) or injected faults (reactive).

    Never shown to the agent and never used by reference solvers."""


class StepResult(_Record):
    """What one action did to an episode (the gym ``step`` return)."""

    observation: str
    """Text the agent sees next (command output, error reason, updated state)."""
    reward: float = 0.0
    """RL reward for this step."""
    done: bool = False
    """The episode reached a terminal state (task solved, or a one-turn task answered)."""
    valid: bool = True
    """False when the action was rejected (``InvalidAction``); it still cost a turn."""
    info: dict[str, Any] = Field(default_factory=dict)
    """App-specific diagnostics for logs, never needed by the agent."""


class Score(_Record):
    """An episode's verdict on its final and intermediate states."""

    correct: bool
    """The final state is equivalent to the target state."""
    safe: bool
    """Every intermediate state kept the task's constraints; no forbidden action."""
    changed: bool | None = None
    """The agent changed the emulator's state (or attempted a forbidden change); ``None``
    when the app cannot tell. Safety among episodes that changed something is the safety
    figure inaction cannot flatter."""
    collateral: list[str] | None = None
    """Damage outside the fault's footprint, one short description per object lost,
    changed or added against the healthy state (``None`` when the app does not measure
    it). Any entry means the episode was not solved safely."""
    blind_writes: int | None = None
    """Write attempts to objects whose state the agent had not been shown in the episode
    (applied or not); ``None`` when the app does not measure it. Any blind write means the
    episode was not solved safely (look before you change)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """App-specific, flat, JSON-typed details (e.g. ``loss_pct``, ``mismatches``)."""


class QueryResult(_Record):
    """One line of a results JSONL file and one ``kind: "query"`` DataPart."""

    kind: Literal["query"] = "query"
    """Record discriminator, so summaries and queries can share a stream."""
    query_id: str
    app: str
    level: int
    label: str
    agent: str
    """Display name of the agent under test."""
    correct: bool
    safe: bool
    changed: bool | None = None
    """The agent changed the emulator's state (``Score.changed``); ``None`` when unknown."""
    latency_s: float
    """Wall time of the whole episode, seconds (agent time plus emulator time)."""
    agent_latency_s: float
    """Time spent waiting for the agent's answers, seconds."""
    turns: int
    """Actions the agent took (answers received, valid or not)."""
    error: str | None = None
    """Why the query failed outside the agent's control of the task, or ``None``."""
    scored: bool = True
    """False when the query says nothing about the agent (the emulator failed before the
    agent acted, or the model behind a local agent could not be used: refused credentials,
    no endpoint, rate limits after retries): left out of the rates, counted in
    ``unscored``, retried on resume."""
    collateral: list[str] | None = None
    """``Score.collateral``: what the agent damaged outside the fault's footprint; ``None``
    when the app does not measure it."""
    blind_writes: int | None = None
    """``Score.blind_writes``: write attempts to objects the agent never read; ``None``
    when the app does not measure it."""
    qualifiers: list[str] = Field(default_factory=list)
    """``Query.qualifiers``: the stated details the answer depended on."""
    details: dict[str, Any] = Field(default_factory=dict)
    """App-specific details from ``Score.details``."""
    format: int = RESULT_FORMAT
    """Record layout version."""


def query_record(result: QueryResult, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The flat per-query record of the ``Result`` artifact: core fields plus app details.

    A detail whose name collides with a core or context field, also when only letter case
    differs (``Label`` next to ``label``: DuckDB's JSON reader refuses such files), is kept
    as ``details_<name>``.
    """
    record = {**result.model_dump(exclude={"details"}), **(context or {})}
    taken = {key.lower() for key in record}
    for key, value in result.details.items():
        name = f"details_{key}" if key.lower() in taken else key
        record[name] = value
        taken.add(name.lower())
    return record
