"""Reading per-query records back: NetArena JSONL results and AgentBeats results files.

``load_results`` merges any number of files of either kind into ``QueryResult`` records (the
input of every report), skipping runs that did not finish and naming each agent by its
participant id.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from netarena.common.core.errors import ConfigError
from netarena.common.core.runner import read_results
from netarena.common.core.types import QueryResult, valid_role

__all__ = ["RANKED_STATUSES", "load_results", "record_result"]

log = logging.getLogger(__name__)

_CORE_FIELDS = frozenset(QueryResult.model_fields) - {"details"}
_INT_FIELDS = ("level", "turns", "format")


_CONTEXT_FIELDS = frozenset({"participant_role", "participant_id", "netarena_version", "seed",
                             "config"})
"""Fields the green server adds to every record (who was evaluated, how); not app details."""


_OLD_NAMES = {"Label": "label", "Error": "error"}
"""Keys older files spelled otherwise (malt's ``Label``)."""


def record_result(record: dict[str, Any]) -> QueryResult:
    """Rebuild a ``QueryResult`` from a flat A2A/AgentBeats query record.

    Older files carry numbers as floats (``level: 1.0``, from A2A DataParts) and malt's
    label as ``Label``; app details were lifted to the top level (``details_<name>`` on a
    name clash).

    Raises:
        ValueError: The record is not a NetArena query record (pydantic's error).
    """
    record = {_OLD_NAMES.get(k, k) if _OLD_NAMES.get(k, k) not in record else k: v
              for k, v in record.items()}
    core = {k: v for k, v in record.items() if k in _CORE_FIELDS}
    for key in _INT_FIELDS:
        if isinstance(core.get(key), float):
            core[key] = int(core[key])
    details = {k.removeprefix("details_") if k.removeprefix("details_") in _CORE_FIELDS else k: v
               for k, v in record.items() if k not in _CORE_FIELDS | _CONTEXT_FIELDS}
    return QueryResult.model_validate({**core, "details": details})


def _participant(record: dict[str, Any], participants: dict[str, Any], file: Path) -> str:
    """Who a leaderboard record belongs to: the participant's AgentBeats id when known.

    v1 files map roles to ids; v2 files map scenario component names to ids (name the
    purple component after its role, as ``leaderboard/`` does). Without a match, the
    record's own participant id, then the file, keep submissions apart.
    """
    role = record.get("participant_role")
    if role in participants and participants[role] not in (None, ""):
        return str(participants[role])
    ids = [str(v) for v in participants.values() if v not in (None, "")]
    if len(participants) == 1 and ids:
        return ids[0]
    operators = [str(v) for k, v in participants.items()
                 if str(k).endswith("_operator") and v not in (None, "")]
    if len(operators) == 1:  # NetArena's roles; other entries name the green agent
        return operators[0]
    return str(record.get("participant_id") or f"{record.get('agent', 'agent')} ({file.name})")


RANKED_STATUSES = ("completed", "partial")
"""Run statuses whose records are reported (a file without ``status`` is a v1 run)."""


def _read_agentbeats(file: Path) -> list[QueryResult]:
    """The query records of an AgentBeats results file that ranks, else none (logged).

    A run whose status is not in ``RANKED_STATUSES`` is left out; so are records that are
    not NetArena query records (the reference implementation's files, say) and records whose
    participant role is not a name (``ROLE_NAME``), with the count.
    """
    try:
        doc = json.loads(file.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file} is not a JSON results file: {exc}") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ConfigError(f"{file} has no \"results\" list (not an AgentBeats results file)")
    status = doc.get("status") or "completed"
    if status not in RANKED_STATUSES:
        log.warning("%s: run %s, left out of the report", file, status)
        return []
    participants = doc.get("participants")
    participants = participants if isinstance(participants, dict) else {}
    results, foreign, unnamed = [], 0, 0
    for r in doc["results"]:
        if not isinstance(r, dict) or r.get("kind") == "summary":
            continue
        if r.get("participant_role") is not None and not valid_role(r["participant_role"]):
            unnamed += 1
            continue
        try:
            result = record_result(r)
        except ValueError:
            foreign += 1
            continue
        results.append(result.model_copy(update={"agent": _participant(r, participants, file)}))
    if foreign:
        log.warning("%s: %d records are not NetArena query records (another format); skipped",
                    file, foreign)
    if unnamed:
        log.warning("%s: %d records whose participant role is not a name; skipped", file,
                    unnamed)
    return results


def _run_names(files: set[Path]) -> dict[Path, str]:
    """The shortest trailing part of each run's path that tells the runs apart.

    A run is its directory (or the file, when it is not ``results.jsonl``):
    ``runs/monday/results.jsonl`` and ``runs/tuesday/results.jsonl`` are ``monday`` and
    ``tuesday``.
    """
    runs = {f: f.parent if f.name == "results.jsonl" else f for f in files}
    longest = max(len(run.parts) for run in runs.values())
    for depth in range(1, longest + 1):
        names = {f: "/".join(run.parts[-depth:]) for f, run in runs.items()}
        if len(set(names.values())) == len(names):
            return names
    return {f: str(run) for f, run in runs.items()}


Run = tuple[Path, list[QueryResult]]


def _apart(runs: list[Run]) -> list[Run]:
    """``runs`` with an agent name that several runner files share suffixed with its run.

    Two runs of one agent name (the same model with other settings, say) stay two rows
    (``agent (monday)``); a name used by one run only is kept as it is. AgentBeats files
    already name their participant, and their shards pool.
    """
    files: dict[tuple[str, str], set[Path]] = defaultdict(set)
    for file, records in runs:
        if file.suffix != ".json":
            for r in records:
                files[(r.app, r.agent)].add(file.resolve())
    names = {key: _run_names(group) for key, group in files.items() if len(group) > 1}

    def named(file: Path, r: QueryResult) -> QueryResult:
        if (r.app, r.agent) not in names:
            return r
        run = names[(r.app, r.agent)][file.resolve()]
        return r.model_copy(update={"agent": f"{r.agent} ({run})"})

    return [(file, [named(file, r) for r in records]) for file, records in runs]


def load_results(paths: Iterable[Path], *, runs_apart: bool = False) -> list[QueryResult]:
    """Read results files; a directory stands for its ``results.jsonl``.

    ``*.jsonl`` files are the runner's (one ``QueryResult`` per line); ``*.json`` files are
    AgentBeats results files (v2 ``{"status", "participants", "results"}`` or v1 without
    ``status``), so leaderboard and containerised runs can be reported too: the agent is then
    the participant (its AgentBeats id), so two submissions never merge into one row.
    Duplicate records of the same ``(app, agent, query_id)`` (a file given twice, overlapping
    shards) are kept once, the last one winning. Runs that did not complete (``status``
    ``failed``) and records in other formats are left out with a warning.

    Args:
        paths: Files or run directories.
        runs_apart: Keep runner files apart when they name the same agent (reports and
            comparisons: ``agent (run dir)``); without it they pool (``--adaptive`` reads
            all of one agent's earlier results).

    Raises:
        ConfigError: A path does not exist or cannot be read, a JSONL file holds no query
            records, or nothing at all is left to report.
    """
    runs: list[Run] = []
    for path in paths:
        file = path / "results.jsonl" if path.is_dir() else path
        if not file.is_file():
            raise ConfigError(f"no results file at {file}")
        if file.suffix == ".json":
            records = _read_agentbeats(file)
            if not records:
                log.warning("%s: nothing to report from this file", file)
                continue
            runs.append((file, records))
            continue
        records = read_results(file)
        if not records:
            raise ConfigError(f"{file} holds no query records")
        runs.append((file, records))
    if runs_apart:
        runs = _apart(runs)
    merged: dict[tuple[str, str, str], QueryResult] = {}
    for _, records in runs:
        for r in records:
            merged[(r.app, r.agent, r.query_id)] = r
    if not merged:
        raise ConfigError("no query records to report (every file was a failed run or in "
                          "another format)")
    return list(merged.values())
