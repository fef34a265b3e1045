"""Evaluation requests: parse, validate and map them to a query plan and run settings.

A request is the text (or a DataPart) of one A2A message::

    {"participants": {"<role>": "<url>"}, "config": {...}}

Config keys are the core keys below, the app's own ``config_model`` fields, the app's
``legacy_keys`` and the reference NetArena dialect (``complexity_level``, ``prompt_type``,
``max_iterations``; ``num_queries`` then counts *per label*). The reference's file-path keys
are accepted and ignored with a note, and so are the keys AgentBeats' leaderboard workflow
adds (``num_instances``: the first N queries of the whole plan). Anything else is rejected
with a message naming it, because a silently ignored typo would run a different benchmark
than the one asked for. ``ServerLimits`` bound what one request may ask for. Participant
roles are names (``ROLE_NAME``): a request naming another is refused with HTTP 400 before a
task exists (``screen_roles``), and by ``parse_request`` wherever it comes from.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError
from netarena.common.core.plan import QueryPlan, fresh_seed, plan_size
from netarena.common.core.runner import RunConfig
from netarena.common.core.types import ROLE_NAME, valid_role
from netarena.common.serving.limits import ServerLimits, check_app_caps

__all__ = [
    "CORE_KEYS",
    "REFERENCE_KEYS",
    "IGNORED_KEYS",
    "TOOLING_KEYS",
    "EvalRequest",
    "ParsedRequest",
    "parse_request",
    "load_request",
    "check_role",
    "screen_roles",
]

CORE_KEYS = frozenset({
    "num_queries", "levels", "labels", "seed", "concurrency", "max_turns", "turn_timeout_s",
    "episode_timeout_s", "shard_index", "num_shards", "prompt_style",
})
"""Config keys every app accepts (brief §4)."""

REFERENCE_KEYS = frozenset({"complexity_level", "prompt_type", "max_iterations"})
"""The reference implementation's keys that map onto ours; they switch on its dialect."""

IGNORED_KEYS = frozenset({
    "benchmark_path", "output_dir", "output_file", "regenerate_query", "regenerate_benchmark",
    "regenerate_config", "microservice_dir", "start_index", "end_index",
})
"""The reference's file-path keys: meaningless here (queries are generated), so ignored."""

TOOLING_KEYS = frozenset({"num_instances"})
"""Keys AgentBeats' leaderboard workflow patches into every assessment config."""

_SEND_METHODS = frozenset({"message/send", "message/stream", "SendMessage",
                           "SendStreamingMessage"})
"""JSON-RPC methods that carry an evaluation request (protocol 0.3 and 1.0)."""

MAX_URL_CHARS = 2048
"""Longest participant URL accepted."""
MAX_CONFIG_CHARS = 8192
"""Largest effective config (as JSON) accepted: every result record carries it, so a
request's size would otherwise come back once per query (a few hundred characters is
usual)."""

_PLAN_KEYS = ("num_queries", "levels", "labels", "seed", "shard_index", "num_shards")
_RUN_KEYS = ("concurrency", "max_turns", "turn_timeout_s", "episode_timeout_s")


class EvalRequest(BaseModel):
    """The request envelope AgentBeats sends."""

    model_config = ConfigDict(extra="forbid")

    participants: dict[str, str]
    """Role name (``ROLE_NAME``) → base URL of the purple agent playing it (exactly one
    here)."""
    config: dict[str, Any] = {}
    """Evaluation settings; see the module docstring."""


@dataclass(frozen=True)
class ParsedRequest:
    """A validated request, ready to run."""

    role: str
    """The participant's role name (``malt_operator``, ...)."""
    url: str
    """The purple agent's base URL."""
    plan: QueryPlan
    """Which queries to run."""
    run: RunConfig
    """How to run them."""
    app_config: dict[str, Any]
    """Parameters for the app's ``config_model`` (prompt style, topology size, ...)."""
    notes: list[str] = field(default_factory=list)
    """Human-readable remarks for the status (ignored keys, fresh seed)."""


def _describe(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'request'}: {err['msg']}"
        for err in exc.errors()
    )


def load_request(text: str | None, data: list[Any] | None = None) -> EvalRequest:
    """Decode the envelope from a message's text or, failing that, its first DataPart.

    Raises:
        ConfigError: Not JSON, not an object, or not the ``{participants, config}`` shape.
    """
    payload: Any = None
    for item in data or []:
        if isinstance(item, dict) and "participants" in item:
            payload = item
            break
    if payload is None:
        if not text or not text.strip():
            raise ConfigError("empty request: send {\"participants\": {...}, \"config\": {...}}")
        try:
            payload = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"request is not JSON ({exc.msg} at char {exc.pos})") from exc
    if not isinstance(payload, dict):
        raise ConfigError("request must be a JSON object with participants and config")
    if "participants" not in payload:
        raise ConfigError("request has no participants: give {\"<role>\": \"<purple url>\"}")
    try:
        return EvalRequest.model_validate(payload)
    except ValidationError as exc:
        raise ConfigError(f"bad request: {_describe(exc)}") from exc


def _participant(participants: dict[str, str]) -> tuple[str, str]:
    if len(participants) != 1:
        raise ConfigError(
            f"exactly one participant expected, got {len(participants)}: "
            f"{sorted(participants) or 'none'}"
        )
    role, url = next(iter(participants.items()))
    check_role(role)
    bad = f"participant {role!r} has a bad URL {url[:200]!r}"
    if len(url) > MAX_URL_CHARS:
        raise ConfigError(f"{bad}: longer than {MAX_URL_CHARS} characters")
    try:
        httpx.URL(url)  # the parser the client will use
        parsed = urlparse(url)
        parsed.port  # noqa: B018 - raises on a port out of range
    except (httpx.InvalidURL, ValueError) as exc:
        raise ConfigError(f"{bad}: {exc}") from exc
    host = parsed.hostname or ""
    if parsed.scheme not in ("http", "https") or not host or not all(
            c.isalnum() or c in ".-_:[]%" for c in host):
        raise ConfigError(f"{bad}: need http(s)://host[:port]")
    return role, url


def check_role(role: str) -> None:
    """Refuse a participant role that is not a name (``ROLE_NAME``).

    The role is written into every result record, and leaderboards look participants up
    by it: a role such as ``malt_operator""`` once made the leaderboard query fail for
    every participant.

    Raises:
        ConfigError: Naming the role (shortened) and the rule.
    """
    if not valid_role(role):
        shown = role if len(role) <= 80 else f"{role[:80]}..."
        raise ConfigError(f"participant role {shown!r} is not a role name: use lower-case "
                          f"letters, digits and underscores, starting with a letter, at most "
                          f"64 characters (^{ROLE_NAME}$), e.g. malt_operator")


def screen_roles(body: bytes) -> str | None:
    """Why an A2A JSON-RPC body must be refused with HTTP 400 before any task exists.

    Looks at ``message/send`` and ``message/stream`` (protocol 0.3) and ``SendMessage`` and
    ``SendStreamingMessage`` (1.0) calls only, and only at their participants' role names:
    every other problem of a request ends its task ``rejected`` as usual.

    Returns:
        The reason, or ``None`` when the body is not such a call or its roles are names.
    """
    try:
        rpc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(rpc, dict) or rpc.get("method") not in _SEND_METHODS:
        return None
    params = rpc.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return None
    parts = [p for p in parts if isinstance(p, dict)]
    text = "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
    try:
        request = load_request(text, [p["data"] for p in parts if "data" in p])
    except ConfigError:
        return None  # the executor rejects it, with the reason
    for role in request.participants:
        try:
            check_role(role)
        except ConfigError as exc:
            return str(exc)
    return None


def _check_int64(config: dict[str, Any]) -> None:
    """Refuse integers that do not fit in 64 bits (anywhere in the config).

    Every result record carries the seed and the effective config, and leaderboard tools
    (DuckDB, protobuf clients) read integers as 64-bit: one such number would break them.
    """
    def walk(key: str, value: Any) -> None:
        if isinstance(value, int) and not isinstance(value, bool) and not (
                -(2**63) <= value < 2**63):
            raise ConfigError(f"invalid config: {key}: {value} does not fit in 64 bits")
        for inner in value.values() if isinstance(value, dict) else (
                value if isinstance(value, list) else ()):
            walk(key, inner)

    for key, value in config.items():
        walk(key, value)


def _level(value: Any) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    match = re.fullmatch(r"\s*(?:level)?\s*([0-9]+)\s*", str(value), re.IGNORECASE)
    if isinstance(value, bool) or match is None:
        raise ConfigError(f"bad level {value!r}: use 1-3 or 'level1'..'level3'")
    return int(match.group(1))


def _levels(value: Any) -> tuple[int, ...]:
    items = value if isinstance(value, list | tuple) else [value]
    return tuple(_level(v) for v in items)


def _merge(target: dict[str, Any], key: str, value: Any, source: str) -> None:
    if key in target and target[key] != value:
        raise ConfigError(f"{source} conflicts with {key}: {value!r} vs {target[key]!r}")
    target[key] = value


def _split(
    app_cls: type[App], config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
    """Sort config keys into plan, run and app settings; reject unknown ones."""
    app_fields = set(app_cls.config_model.model_fields)
    legacy = dict(app_cls.legacy_keys)
    plan: dict[str, Any] = {}
    run: dict[str, Any] = {}
    app: dict[str, Any] = {}
    ignored: list[str] = []
    unknown = [
        k for k in config
        if k not in CORE_KEYS | REFERENCE_KEYS | IGNORED_KEYS | TOOLING_KEYS | app_fields
        | set(legacy)
    ]
    if unknown:
        settable = CORE_KEYS | (app_fields - app_cls.config_model.operator_fields) | set(legacy)
        raise ConfigError(
            f"unknown config keys for {app_cls.name}: {', '.join(sorted(unknown))} "
            f"(accepted: {', '.join(sorted(settable))})"
        )
    for key, value in config.items():
        if key in IGNORED_KEYS:
            ignored.append(key)
        elif key == "num_instances":
            if value is not None:
                plan["limit"] = value
        elif key in _PLAN_KEYS:
            plan[key] = value
        elif key in _RUN_KEYS:
            _merge(run, key, value, key)
        elif key in app_fields:
            _merge(app, key, value, key)
    for key, value in config.items():  # second pass: aliases after the real names
        if key in legacy:
            _merge(app, legacy[key], value, key)
        elif key == "prompt_type":
            _merge(app, "prompt_style", value, key)
        elif key == "max_iterations":
            _merge(run, "max_turns", value, key)
        elif key == "complexity_level":
            if "levels" in plan and _levels(plan["levels"]) != _levels(value):
                raise ConfigError("complexity_level conflicts with levels")
            plan["levels"] = value
    return plan, run, app, ignored


def parse_request(
    request: EvalRequest, app_cls: type[App], *, seed: int | None = None,
    limits: ServerLimits | None = None,
) -> ParsedRequest:
    """Validate a request against an app and map it to a plan, run settings and app config.

    Args:
        request: The decoded envelope.
        app_cls: The app being served (its config model and legacy keys are accepted).
        seed: Seed to use when the request has none (default: a fresh random one).
        limits: Bounds for this requester (queries, concurrency, turns, timeouts, app
            parameters); ``None`` applies none beyond the models' own.

    Raises:
        ConfigError: With a message naming every problem found.
    """
    role, url = _participant(request.participants)
    config = dict(request.config)
    _check_int64(config)
    reference_dialect = bool({"complexity_level", "prompt_type"} & set(config))
    plan_kw, run_kw, app_kw, ignored = _split(app_cls, config)
    local = sorted(set(app_kw) & app_cls.config_model.operator_fields)
    if local:
        raise ConfigError(
            f"{', '.join(local)} may only be set by the evaluator's operator "
            f"(netarena run --param), not by an evaluation request"
        )
    notes: list[str] = []
    if ignored:
        notes.append(f"ignored file-path keys: {', '.join(sorted(ignored))}")
    if "levels" in plan_kw:  # repeats mean nothing; collapsed, they stay out of every record
        plan_kw["levels"] = tuple(dict.fromkeys(_levels(plan_kw["levels"])))
    if isinstance(plan_kw.get("labels"), str):
        plan_kw["labels"] = [plan_kw["labels"]]
    labels = plan_kw.get("labels")
    if isinstance(labels, list) and all(isinstance(label, str) for label in labels):
        plan_kw["labels"] = list(dict.fromkeys(labels))
    if plan_kw.get("seed") is None:
        plan_kw["seed"] = fresh_seed() if seed is None else seed
        notes.append(f"seed {plan_kw['seed']} (fresh; pass it to repeat this run)")
    if reference_dialect:
        notes.append("reference dialect: num_queries counts per label")
        if "labels" not in plan_kw and "original" in app_cls.label_sets:
            plan_kw["labels"] = ["original"]
            notes.append("reference dialect: the original NetArena's labels (label set 'original')")
    if plan_kw.get("limit") is not None:
        notes.append(f"num_instances {plan_kw['limit']}: the first queries of the whole plan")
    try:
        plan = QueryPlan(per_label=reference_dialect, **plan_kw)
        run = RunConfig(**run_kw)
        app_config = app_cls.config_model(**app_kw)
    except ValidationError as exc:
        raise ConfigError(f"invalid config: {_describe(exc)}") from exc
    effective = len(json.dumps([plan.model_dump(mode="json"), run.model_dump(mode="json"),
                                app_config.model_dump(mode="json")]))
    if effective > MAX_CONFIG_CHARS:
        raise ConfigError(f"the effective config is {effective} characters; at most "
                          f"{MAX_CONFIG_CHARS} (every result record carries it)")
    if limits is not None:
        _check_limits(app_cls, plan, run, limits)
        check_app_caps(app_cls.name, app_config, limits)
    return ParsedRequest(role=role, url=url, plan=plan, run=run, app_config=app_kw, notes=notes)


def _check_limits(app_cls: type[App], plan: QueryPlan, run: RunConfig,
                  limits: ServerLimits) -> None:
    """Refuse a plan or run settings over this server's limits (nothing is built yet)."""
    total, mine = plan_size(app_cls, plan)
    over = []
    if total > limits.max_plan_slots:
        over.append(f"{total} planned queries over all shards (limit {limits.max_plan_slots})")
    if mine > limits.max_queries:
        over.append(f"{mine} queries in this shard (limit {limits.max_queries})")
    if run.concurrency > limits.max_concurrency:
        over.append(f"concurrency {run.concurrency} (limit {limits.max_concurrency})")
    if run.max_turns is not None and run.max_turns > limits.max_turns:
        over.append(f"max_turns {run.max_turns} (limit {limits.max_turns})")
    if run.turn_timeout_s > limits.max_turn_timeout_s:
        over.append(f"turn_timeout_s {run.turn_timeout_s:g} (limit {limits.max_turn_timeout_s:g})")
    episode = run.episode_timeout_s
    if episode is not None and episode > limits.max_episode_timeout_s:
        over.append(f"episode_timeout_s {episode:g} (limit {limits.max_episode_timeout_s:g})")
    if over:
        raise ConfigError(f"request over this server's limits: {'; '.join(over)}")
