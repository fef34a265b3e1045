"""``RouteConfig``: the parameters of the route app (network size, timeouts, rewards)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from netarena.common.core.reactive import RewardConfig
from netarena.route.sandbox.capped import OUTPUT_CAP_CHARS
from netarena.route.sandbox.limits import MAX_MACHINES

__all__ = ["COMMAND_LIMITS_NOTE", "RouteConfig"]

COMMAND_LIMITS_NOTE = (
    "A command is stopped after {timeout:g} s (what it printed is kept)"
    f" and output is cut at {OUTPUT_CAP_CHARS} characters"
)
"""How every route prompt states ``command_timeout_s`` and the output cap (static and
dynamic alike; the history repeats outputs at that length too, ``GuardedEpisode``)."""


class RouteConfig(RewardConfig):
    """Parameters of the route app (all optional in an evaluation request).

    Step rewards (``reward_invalid``, ``reward_valid``, ``reward_fix``, ``reward_unsafe``,
    ``reward_forbidden``) come from ``RewardConfig``.
    """

    runtime_fields: ClassVar[frozenset[str]] = RewardConfig.runtime_fields | {
        "command_timeout_s",
        "probe_timeout_s",
    }
    operator_fields: ClassVar[frozenset[str]] = frozenset({"topo"})
    """``topo`` imports code on the evaluator's machine: only its operator may set it
    (``netarena run/serve route --param topo=...``), never a remote request."""

    num_subnets: int | None = Field(None, ge=2, le=64)
    """Switches/subnets behind the router; ``None`` lets each query's seed draw 2-4."""
    num_routers: int | None = Field(None, ge=3, le=8)
    """Dynamic-routing queries: routers in the network; ``None`` lets the seed draw (4-8,
    BGP in ASes of 2-3; BGP ignores fewer than 4)."""
    network: str | None = None
    """OSPF queries: a whole real network (``topozoo/Abilene``, ``sndlib/polska``; at most
    24 sites) instead of a part of ``num_routers`` sites drawn from any of them."""
    hosts_per_subnet: int | None = Field(None, ge=1, le=64)
    """Hosts per subnet; ``None`` lets each query's seed draw 2-4 per subnet."""
    topo: str | None = None
    """A Mininet ``Topo`` to use instead of generated ones: ``module:Class`` or
    ``path/to/file.py:Class`` (a router ``r0`` linked to one switch per subnet)."""
    command_timeout_s: float = Field(5.0, gt=0, le=60)
    """Longest run of one agent command, seconds (it then gets SIGINT, then SIGKILL)."""
    probe_timeout_s: float = Field(0.1, gt=0, le=5)
    """Pingmesh: longest first round, seconds (lost pairs are confirmed after it)."""

    @model_validator(mode="after")
    def _within_measured_limits(self) -> RouteConfig:
        if self.topo is not None and (self.num_subnets or self.hosts_per_subnet):
            raise ValueError("topo fixes the network: drop num_subnets and hosts_per_subnet")
        subnets = self.num_subnets or 4
        machines = subnets * (self.hosts_per_subnet or 4) + 1
        if machines > MAX_MACHINES:
            raise ValueError(
                f"{subnets} subnets x {self.hosts_per_subnet or 4} hosts is {machines} "
                f"machines; at most {MAX_MACHINES} are supported (the limit measured for a "
                "pingmesh without false results on a 2-core machine)"
            )
        return self
