"""What one requester may ask of a green server: caps on work, time, memory and storage.

A green agent on a leaderboard host is reachable by anyone who can reach its port, and one
request decides how big a topology it builds, how many queries it plans and plays and how
long it waits. ``ServerLimits`` bounds all of that. Unauthenticated requesters get the
defaults below, derived from measurements on a 2-core machine (docs/agentbeats.md, "Server
limits"); requesters that present the server's bearer token get ``trusted()``, which keeps
every time and storage bound but lifts the work caps to what the apps themselves accept.
"""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from netarena.common.core.errors import ConfigError

__all__ = ["APP_CAPS", "ServerLimits", "check_app_caps"]

APP_CAPS: dict[str, dict[str, int]] = {
    # malt: nodes ~ (superblocks*aggs + spineblocks) * 2*switches * (1 + ports); the default
    # model (5,493 nodes) built with a 58 MB peak, the largest these caps allow (~21k nodes)
    # with 82 MB, while a 141k-node request peaked at 2.6 GB.
    "malt": {"superblocks": 8, "aggs_per_superblock": 4, "spineblocks": 8,
             "switches_per_stage": 8, "ports_per_switch": 32, "sandbox_workers": 4},
    # route: every host and switch is a network namespace; 8x8 is 73 namespaces per episode.
    "route": {"num_subnets": 8, "hosts_per_subnet": 8},
    # k8s: the connectivity matrix grows with services squared (100 services: 82 ms).
    "k8s": {"num_services": 50},
}
"""Per-app maxima of numeric config fields for unauthenticated requests."""


class ServerLimits(BaseModel):
    """Bounds a green server applies to every request (all finite by construction)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_queries: int = Field(1000, ge=1, le=100_000)
    """Most queries one request plays (this shard's, after the per-label expansion).
    malt plans 17-60 ms per query (idle vs loaded 2-core machine), so 1,000 plan in 17-60 s."""
    max_plan_slots: int = Field(20_000, ge=1, le=2_000_000)
    """Most query slots before sharding (``num_queries`` x labels x shards)."""
    planning_timeout_s: float = Field(120.0, gt=0, le=3600, allow_inf_nan=False)
    """Wall-clock budget to generate the queries; over it the request is rejected."""
    max_concurrency: int = Field(8, ge=1, le=64)
    """Most episodes one request runs at once (each holds an emulator)."""
    max_turns: int = Field(50, ge=1, le=200)
    """Most turns per episode."""
    max_turn_timeout_s: float = Field(600.0, gt=0, le=3600, allow_inf_nan=False)
    """Longest wait for one purple answer."""
    max_episode_timeout_s: float = Field(3600.0, gt=0, le=86_400, allow_inf_nan=False)
    """Longest wall time of one episode."""
    max_running: int = Field(4, ge=1, le=256)
    """Evaluations running at once on this server; more are refused as busy."""
    max_tasks: int = Field(128, ge=1, le=100_000)
    """Tasks kept in memory; the oldest finished ones are evicted first."""
    max_task_bytes: int = Field(256 << 20, ge=1 << 20, le=16 << 30)
    """...and their serialized size (a finished task holds its whole ``Result``)."""
    header_timeout_s: float = Field(10.0, gt=0, le=600, allow_inf_nan=False)
    """A connection must finish sending a request's headers within this time."""
    body_timeout_s: float = Field(30.0, gt=0, le=600, allow_inf_nan=False)
    """...and its body within this time."""
    max_body_bytes: int = Field(1 << 20, ge=1024, le=64 << 20)
    """Largest request body accepted (an evaluation request is a few hundred bytes)."""
    first_request_timeout_s: float = Field(15.0, gt=0, le=600, allow_inf_nan=False)
    """A new connection must complete its first request (headers and body) within this
    time of being accepted (``netarena.common.serving.connections``)."""
    max_pending_per_address: int = Field(16, ge=1, le=65_536)
    """Connections one client address (IPv6: one /64) may hold that have not completed a
    request; more are reset at once."""
    max_connections_per_address: int = Field(64, ge=1, le=65_536)
    """Open connections one client address may hold; more are reset at once."""
    max_pending: int = Field(256, ge=1, le=65_536)
    """Pending connections from all addresses; at the limit the oldest pending one of the
    address holding the most is closed to admit a newcomer."""
    max_connections: int = Field(1024, ge=2, le=65_536)
    """Open connections (and requests being answered) in all; past it requests get 503.
    Kept above ``max_pending`` so that pending connections alone never reach it."""
    app_caps: dict[str, dict[str, int]] = Field(default_factory=lambda: dict(APP_CAPS))
    """Per-app maxima of numeric config fields (see ``APP_CAPS``)."""

    @model_validator(mode="after")
    def _connection_caps_nest(self) -> ServerLimits:
        if self.max_pending_per_address > self.max_pending:
            raise ValueError("max_pending_per_address must not exceed max_pending")
        if self.max_pending >= self.max_connections:
            raise ValueError("max_pending must stay below max_connections")
        return self

    def trusted(self) -> ServerLimits:
        """The limits for an authenticated requester: work caps lifted, time bounds kept."""
        return self.model_copy(update={
            "max_queries": 100_000, "max_plan_slots": 2_000_000, "planning_timeout_s": 3600.0,
            "max_concurrency": 64, "max_turns": 200, "app_caps": {},
        })

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> ServerLimits:
        """Defaults overridden by ``NETARENA_LIMITS`` (a JSON object of fields).

        Raises:
            ConfigError: The variable is not a JSON object of valid fields.
        """
        raw = (os.environ if environ is None else environ).get("NETARENA_LIMITS", "").strip()
        if not raw:
            return cls()
        try:
            fields = json.loads(raw)
            return cls.model_validate(fields)
        except (json.JSONDecodeError, ValidationError) as exc:
            raise ConfigError(f"NETARENA_LIMITS is not valid: {exc}") from exc


def check_app_caps(app_name: str, config: Any, limits: ServerLimits) -> None:
    """Refuse app parameters over this server's caps, before anything is built.

    Args:
        app_name: The app's registry name.
        config: The validated app config (a pydantic model).
        limits: The limits that apply to this requester.

    Raises:
        ConfigError: Naming every field over its cap.
    """
    over = []
    for field, cap in sorted(limits.app_caps.get(app_name, {}).items()):
        value = getattr(config, field, None)
        if isinstance(value, int | float) and value > cap:
            over.append(f"{field}={value} (limit {cap})")
    if over:
        raise ConfigError(
            f"{app_name} parameters over this server's limits: {', '.join(over)}; "
            "run your own server (netarena serve) or authenticate for larger evaluations"
        )
