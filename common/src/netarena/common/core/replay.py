"""Recorded LLM calls: what a run spent, and replaying the run with no network.

``LiteLLMAgent`` (the one place NetArena calls LiteLLM) hands every call to its ``Tape``:

* **recording** (``Tape(sink=...)``): each call's request (model, messages, options; API
  keys removed), the provider's response, usage, cost and time are appended to
  ``<run dir>/llm_calls.jsonl`` as they happen, flushed line by line;
* **replaying** (``Tape.from_file``): the agent answers from the recording and never
  reaches the network. Calls are matched by query and by their order within the query's
  episode (not by request text: a command's output, such as ping times, may differ between
  runs while the agent's decision is the one recorded); a request that differs from the
  recorded one is counted as *drift*, and a call the recording lacks fails that query's
  agent with a clear reason. A recorded provider failure is replayed as the same failure.

Every tape counts usage per query; the runner folds it into each result's details
(``llm_calls``, ``llm_prompt_tokens``, ``llm_completion_tokens``, ``llm_cost_usd``), so
summaries and reports add it up with ``usage_summary``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from netarena.common.core.errors import AgentError, ConfigError
from netarena.common.core.result_files import open_regular, read_regular
from netarena.common.core.types import QueryResult

__all__ = [
    "CALLS_FILE",
    "USAGE_COLUMNS",
    "LLMCall",
    "Tape",
    "request_key",
    "usage_cells",
    "usage_summary",
]

log = logging.getLogger(__name__)

CALLS_FILE = "llm_calls.jsonl"
"""Where a run folder keeps its recorded LLM calls."""
_SECRET = re.compile(r"key|secret|token|credential|password|header", re.IGNORECASE)
"""Request options never written to a recording (``api_key``, ``extra_headers``, ...)."""
_TRANSPORT_KEYS = frozenset({"api_base", "base_url", "timeout", "num_retries"})
"""Options that say how a call travels, not what is asked: left out of the request key."""
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")
_OPEN_LIMIT = 10_000
"""Most episodes a tape keeps counters for (a purple server never closes its episodes)."""


def request_key(request: dict[str, Any]) -> str:
    """A digest of what a request asks (model, messages, sampling options), not how it travels."""
    asked = {k: v for k, v in request.items()
             if k not in _TRANSPORT_KEYS and not _SECRET.search(k)}
    return hashlib.sha256(json.dumps(asked, sort_keys=True, default=str).encode()).hexdigest()


class LLMCall(BaseModel):
    """One recorded LLM call: one line of ``llm_calls.jsonl``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    query_id: str
    """The query whose episode made the call (the context id when the query is unknown)."""
    episode: str = ""
    """The episode (its context id): a query played again (resumed after a crash) is a new
    episode, and a replay follows the last one recorded."""
    seq: int
    """0-based order of the call within its episode."""
    turn: int
    """The episode's turn the call answered."""
    model: str
    request_key: str
    """``request_key`` of the request (for drift detection)."""
    request: dict[str, Any]
    """Model, messages and options, without API keys."""
    response: dict[str, Any] | None = None
    """The provider's response (OpenAI chat-completion shape), or ``None`` when it failed."""
    error: str | None = None
    """The failure the agent reported, when the call failed."""
    usage: dict[str, int]
    """``prompt_tokens``, ``completion_tokens``, ``total_tokens`` (0 when unknown)."""
    cost_usd: float | None = None
    """Cost as LiteLLM prices it, or ``None`` when it cannot (unknown model)."""
    latency_s: float = 0.0

    def reply(self) -> str:
        """The assistant text of the response (empty when it had none).

        Raises:
            AgentError: The recorded call failed (the same failure, replayed).
        """
        if self.error is not None or self.response is None:
            raise AgentError(self.error or "recorded call has no response")
        choices = self.response.get("choices") or [{}]
        return str((choices[0].get("message") or {}).get("content") or "")


def _json_safe(value: dict[str, Any]) -> dict[str, Any]:
    """``value`` as plain JSON (objects such as a test's mock exception become text)."""
    safe: dict[str, Any] = json.loads(json.dumps(value, default=str))
    return safe


def _bound(counters: dict[str, Any]) -> None:
    """Forget the oldest entries past ``_OPEN_LIMIT`` (dicts keep insertion order)."""
    while len(counters) > _OPEN_LIMIT:
        del counters[next(iter(counters))]


def _usage_of(response: dict[str, Any] | None) -> dict[str, int]:
    raw = (response or {}).get("usage") or {}
    return {f: int(raw.get(f) or 0) for f in _USAGE_FIELDS}


class Tape:
    """The LLM calls of one agent in one run: recorded to a file or replayed from one.

    Thread-safe: episodes of a run play concurrently.

    Args:
        sink: JSONL file to append recorded calls to (``None``: record to memory only when
            ``keep``, else only count usage).
        recording: Recorded calls to replay instead of calling the model.
        keep: Keep recorded calls in memory until ``take`` (a Ray worker sends them back).
    """

    def __init__(
        self,
        sink: Path | None = None,
        recording: Iterable[LLMCall] | None = None,
        keep: bool = False,
    ) -> None:
        self.sink = sink
        self.replaying = recording is not None
        self.keep = keep
        self.drift = 0
        """Replayed calls whose request differed from the recorded one."""
        self._lock = threading.Lock()
        self._seq: dict[str, int] = {}
        self._usage: dict[str, dict[str, float]] = {}
        self._kept: dict[str, list[LLMCall]] = defaultdict(list)
        self._recorded: dict[str, deque[LLMCall]] = defaultdict(deque)
        self._drifted: dict[str, int] = defaultdict(int)
        self.load(recording or ())
        if sink is not None:
            sink.parent.mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_file(cls, path: Path) -> Tape:
        """A replaying tape of the calls in ``path`` (a run folder or its ``llm_calls.jsonl``).

        Raises:
            ConfigError: No recording there, or a line that is not a recorded call.
        """
        file = path / CALLS_FILE if path.is_dir() else path
        data = read_regular(file) if file.parent.is_dir() else None
        if data is None:
            raise ConfigError(f"no LLM recording at {file}")
        lines = data.decode("utf-8", "replace").splitlines()
        calls = []
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                calls.append(LLMCall.model_validate_json(line))
            except ValueError as exc:
                if number == len(lines):  # a crash can tear the last line only
                    log.warning("skipping torn last line of %s", file)
                    continue
                raise ConfigError(f"{file}:{number} is not a recorded call: {exc}") from exc
        return cls(recording=calls)

    def load(self, calls: Iterable[LLMCall]) -> None:
        """Add recorded calls to replay: per query, those of its last recorded episode."""
        by_query: dict[str, list[LLMCall]] = defaultdict(list)
        for call in calls:
            by_query[call.query_id].append(call)
        with self._lock:
            for query, recorded in by_query.items():
                last = recorded[-1].episode
                episode = sorted((c for c in recorded if c.episode == last), key=lambda c: c.seq)
                self._recorded[query].extend(episode)

    # ----------------------------------------------------------------- recording
    def record(
        self,
        key: str,
        episode: str,
        turn: int,
        request: dict[str, Any],
        *,
        response: dict[str, Any] | None = None,
        error: str | None = None,
        cost_usd: float | None = None,
        latency_s: float = 0.0,
    ) -> LLMCall:
        """Record one call made for query ``key`` in ``episode`` (its context id)."""
        with self._lock:
            seq = self._seq.pop(episode, 0)
            self._seq[episode] = seq + 1
            _bound(self._seq)
        call = LLMCall(
            query_id=key,
            episode=episode,
            seq=seq,
            turn=turn,
            model=str(request.get("model", "")),
            request_key=request_key(request),
            request=_json_safe({k: v for k, v in request.items() if not _SECRET.search(k)}),
            response=_json_safe(response) if response is not None else None,
            error=error,
            usage=_usage_of(response),
            cost_usd=cost_usd,
            latency_s=round(latency_s, 6),
        )
        self.append(call)
        return call

    def append(self, call: LLMCall, count: bool = True) -> None:
        """Write ``call`` to the sink (or keep it, or both), counting its usage if ``count``."""
        line = call.model_dump_json() + "\n"
        with self._lock:
            if count:
                self._count(call)
            if self.keep:
                self._kept[call.query_id].append(call)
            if self.sink is not None:
                with open_regular(self.sink) as out:  # never a planted FIFO or symlink
                    out.write(line)

    def take(self, key: str) -> list[LLMCall]:
        """Remove and return the kept calls of episode ``key``."""
        with self._lock:
            return self._kept.pop(key, [])

    # ----------------------------------------------------------------- replaying
    def replay(self, key: str, request: dict[str, Any]) -> LLMCall:
        """The next recorded call of episode ``key``; its usage counts as if it were made.

        Raises:
            AgentError: The recording has no further call for this episode.
        """
        with self._lock:
            queue = self._recorded.get(key)
            if not queue:
                raise AgentError(f"replay: the recording has no further LLM call for {key}")
            call = queue.popleft()
            if call.request_key != request_key(request):
                self.drift += 1
                self._drifted[key] += 1
                log.warning("replay: call %d of %s asked something else than recorded",
                            call.seq, key)
            self._count(call)
        return call

    def recorded(self, key: str) -> list[LLMCall]:
        """Remove and return the calls of episode ``key`` not replayed yet.

        A Ray driver sends them to the actor that plays the episode.
        """
        with self._lock:
            return list(self._recorded.pop(key, ()))

    def take_drift(self, key: str) -> int:
        """How many of episode ``key``'s replayed calls drifted (then forget it)."""
        with self._lock:
            return self._drifted.pop(key, 0)

    # ---------------------------------------------------------------------- usage
    def _count(self, call: LLMCall) -> None:
        usage = self._usage.setdefault(call.query_id, {"llm_calls": 0})
        _bound(self._usage)
        usage["llm_calls"] += 1
        for field in ("prompt_tokens", "completion_tokens"):
            usage[f"llm_{field}"] = usage.get(f"llm_{field}", 0) + call.usage[field]
        usage["llm_cost_usd"] = usage.get("llm_cost_usd", 0.0) + (call.cost_usd or 0.0)

    def episode_usage(self, key: str) -> dict[str, float]:
        """What episode ``key`` spent (calls, tokens, cost), then forget it."""
        with self._lock:
            usage = self._usage.pop(key, {})
        return {k: (round(v, 8) if k == "llm_cost_usd" else int(v)) for k, v in usage.items()}


def usage_summary(results: Sequence[QueryResult]) -> dict[str, Any] | None:
    """LLM calls, tokens and cost over ``results``; ``None`` when no result made a call."""
    spent = [r.details for r in results if r.details.get("llm_calls")]
    if not spent:
        return None
    return {
        "llm_calls": sum(int(d["llm_calls"]) for d in spent),
        "prompt_tokens": sum(int(d.get("llm_prompt_tokens", 0)) for d in spent),
        "completion_tokens": sum(int(d.get("llm_completion_tokens", 0)) for d in spent),
        "cost_usd": round(sum(float(d.get("llm_cost_usd", 0.0)) for d in spent), 8),
    }


USAGE_COLUMNS = ("agent", "LLM calls", "prompt tokens", "completion tokens", "cost USD")
"""Header of the usage tables of summaries and reports."""


def usage_cells(agent: str, usage: dict[str, Any]) -> list[str]:
    """One row of a usage table (``USAGE_COLUMNS``)."""
    return [agent, str(usage["llm_calls"]), str(usage["prompt_tokens"]),
            str(usage["completion_tokens"]), f"{usage['cost_usd']:.6f}"]
