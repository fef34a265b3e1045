"""The route app: its parameters, pure query generation, and episode factory."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from pydantic import Field

from netarena.common.app import App
from netarena.common.reactive import RewardConfig
from netarena.common.types import Query, query_id
from netarena.route.faults import FAULT_TYPES, LEVEL_LABELS, fault_candidates
from netarena.route.prompts import task_prompt
from netarena.route.topology import TopologySpec

__all__ = ["RouteConfig", "RouteApp"]


class RouteConfig(RewardConfig):
    """Parameters of the route app (all optional in an evaluation request).

    Step rewards (``reward_invalid``, ``reward_valid``, ``reward_fix``, ``reward_unsafe``:
    a command that breaks a previously working pair) come from ``RewardConfig``.
    """

    runtime_fields: ClassVar[frozenset[str]] = RewardConfig.runtime_fields | {
        "command_timeout_s",
        "probe_timeout_s",
        "probe_retry_timeout_s",
    }

    num_subnets: int | None = Field(None, ge=2, le=50)
    """Switches/subnets behind the router; ``None`` lets each query's seed draw 2-4."""
    hosts_per_subnet: int | None = Field(None, ge=1, le=50)
    """Hosts per subnet; ``None`` lets each query's seed draw 2-4."""
    command_timeout_s: float = Field(5.0, gt=0, le=60)
    """Longest run of one agent command, seconds."""
    probe_timeout_s: float = Field(0.1, gt=0, le=5)
    """Pingmesh: wait for the first round of replies, seconds."""
    probe_retry_timeout_s: float = Field(0.2, gt=0, le=5)
    """Pingmesh: wait for the retry of pairs that failed the first round, seconds."""


class RouteApp(App):
    """Routing misconfiguration troubleshooting in an emulated network."""

    name = "route"
    kind = "reactive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = LEVEL_LABELS
    config_model = RouteConfig
    default_max_turns = 30
    legacy_keys: ClassVar[dict[str, str]] = {
        "num_switches": "num_subnets",
        "num_hosts_per_subnet": "hosts_per_subnet",
    }
    config: RouteConfig

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        """Draw the topology size and the fault plan (with re-sampling candidates).

        Pure: nothing touches the emulator; ``open()`` verifies the candidates.
        """
        rng = random.Random(seed)
        label = self.pick_label(rng, level, label)
        n = self.config.num_subnets or rng.randint(2, 4)
        m = self.config.hosts_per_subnet or rng.randint(2, 4)
        spec = TopologySpec(n, m)
        faults: list[dict[str, Any]] = [
            {
                "type": code,
                "name": FAULT_TYPES[code],
                "candidates": fault_candidates(seed, slot, spec, code),
            }
            for slot, code in enumerate(label.split("+"))
        ]
        params = self.params()
        return Query(
            id=query_id(self.name, seed, level, label, params),
            app=self.name,
            seed=seed,
            level=level,
            label=label,
            prompt=task_prompt(spec, self.config.prompt_style),
            params=params,
            truth={"topology": {"num_subnets": n, "hosts_per_subnet": m}, "faults": faults},
        )

    def open(self, query: Query) -> Any:
        """Build the network, inject and verify the faults, and return the episode."""
        from netarena.route.episode import RouteEpisode

        return RouteEpisode(query, self.config)

    def reference_agent(self) -> Any:
        """The reference solver (reads observations only, never ``Query.truth``)."""
        from netarena.route.solver import ReferenceRouteAgent

        return ReferenceRouteAgent()
