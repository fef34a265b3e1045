"""The route app: its parameters, pure query generation, and episode factory."""

from __future__ import annotations

import random
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, model_validator

from netarena.common.app import App
from netarena.common.errors import ConfigError
from netarena.common.reactive import RewardConfig
from netarena.common.types import Query, query_id
from netarena.route.faults import FAULT_TYPES, LEVEL_LABELS, fault_candidates
from netarena.route.intent import Intent, draw_intent, intended_pairs
from netarena.route.limits import MAX_CONCURRENT_EPISODES, MAX_MACHINES
from netarena.route.plan import NetworkPlan, draw_plan
from netarena.route.probe import PingMatrix
from netarena.route.prompts import task_prompt
from netarena.route.topology import RouterTopo, Topo, load_topo_class, plan_of
from netarena.route.undisclosed import draw_undisclosed

if TYPE_CHECKING:
    from netarena.common.agents import Baseline

__all__ = ["RouteConfig", "RouteApp"]


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


class RouteApp(App):
    """Routing misconfiguration troubleshooting on a Mininet network."""

    name = "route"
    kind = "reactive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = LEVEL_LABELS
    config_model = RouteConfig
    default_max_turns = 30
    max_concurrency = MAX_CONCURRENT_EPISODES
    legacy_keys: ClassVar[dict[str, str]] = {
        "num_switches": "num_subnets",
        "num_hosts_per_subnet": "hosts_per_subnet",
    }
    config: RouteConfig

    def _topology(self, rng: random.Random) -> tuple[NetworkPlan, str | None]:
        if self.config.topo is not None:
            try:
                topo = load_topo_class(self.config.topo)()
            except TypeError as exc:
                raise ConfigError(
                    f"{self.config.topo} must build with no arguments: {exc}"
                ) from exc
            plan = plan_of(topo)
            if len(plan.nodes) > MAX_MACHINES:
                raise ConfigError(f"{self.config.topo} has more than {MAX_MACHINES} machines")
            return plan, self.config.topo
        n = self.config.num_subnets or rng.randint(2, 4)
        counts = [self.config.hosts_per_subnet or rng.randint(2, 4) for _ in range(n)]
        return draw_plan(rng, counts), None

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        """Draw the network, its intent and the fault plan (with re-sampling candidates).

        Pure: nothing touches the emulator; ``open()`` verifies the candidates.
        """
        rng = random.Random(seed)
        label = self.pick_label(rng, level, label)
        plan, topo = self._topology(rng)
        intent = draw_intent(rng, plan)
        local = draw_undisclosed(random.Random(f"route/{seed}/undisclosed"), plan, intent)
        faults: list[dict[str, Any]] = [
            {
                "type": code,
                "name": FAULT_TYPES[code],
                "candidates": fault_candidates(seed, slot, plan, intent, code, local.tcp_port),
            }
            for slot, code in enumerate(label.split("+"))
        ]
        expected = PingMatrix(plan.nodes, intended_pairs(plan, intent))
        params = self.params()
        return Query(
            id=query_id(self.name, seed, level, label, params),
            app=self.name,
            seed=seed,
            level=level,
            label=label,
            prompt=task_prompt(
                plan,
                intent,
                expected,
                self.config.prompt_style,
                self.config.command_timeout_s,
                (local.tcp_port, local.udp_port),
            ),
            params=params,
            truth={
                "plan": plan.to_dict(),
                "intent": intent.to_dict(),
                "topo": topo,
                "faults": faults,
                "undisclosed": local.to_dict(),
            },
        )

    def open(self, query: Query) -> Any:
        """Build the network, inject and verify the faults, and return the episode."""
        from netarena.route.episode import RouteEpisode

        return RouteEpisode(query, self.config)

    def reference_agent(self) -> Any:
        """The reference solver (reads observations only, never ``Query.truth``)."""
        from netarena.route.solver import ReferenceRouteAgent

        return ReferenceRouteAgent()

    def baselines(self) -> tuple[Baseline, ...]:
        """Route's calibration ladder (``netarena.route.baselines``)."""
        from netarena.route.baselines import BASELINES

        return BASELINES


def topology_of(query: Query) -> tuple[NetworkPlan, Intent, Callable[[], Topo]]:
    """The plan, intent and a topology factory of a generated query.

    Raises:
        ConfigError: A user topology no longer matches the plan it was generated with.
    """
    plan = NetworkPlan.from_dict(query.truth["plan"])
    intent = Intent.from_dict(query.truth["intent"])
    spec = query.truth.get("topo")
    if spec is None:
        return plan, intent, partial(RouterTopo, plan)
    cls = load_topo_class(spec)
    if plan_of(cls()) != plan:
        raise ConfigError(f"topology {spec} changed since the query was generated")
    return plan, intent, partial(cls)
