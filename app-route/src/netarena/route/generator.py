"""The route app: its parameters, pure query generation, and episode factory."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError
from netarena.common.core.evidence import AuditObject
from netarena.common.core.types import Query
from netarena.route.base.config import RouteConfig
from netarena.route.base.routing_kind import is_dynamic
from netarena.route.emulator.intent import draw_intent, intended_pairs
from netarena.route.emulator.plan import NetworkPlan, draw_plan
from netarena.route.emulator.topology import load_topo_class, plan_of
from netarena.route.emulator.undisclosed import draw_undisclosed
from netarena.route.frr.bgp_design import draw_bgp_plan
from netarena.route.frr.bgp_faults import BGP_FAULTS, BGP_LEVEL_LABELS, draw_bgp_faults
from netarena.route.frr.bgp_prompts import bgp_symptoms
from netarena.route.frr.design import draw_ospf_plan
from netarena.route.frr.faults import OSPF_FAULTS, OSPF_LEVEL_LABELS, draw_faults
from netarena.route.frr.plan import OspfPlan
from netarena.route.frr.prompts import dynamic_prompt, ticket_symptoms
from netarena.route.judge.pingall import PingMatrix
from netarena.route.sandbox.limits import MAX_CONCURRENT_EPISODES, MAX_MACHINES
from netarena.route.static.faults import FAULT_TYPES, LEVEL_LABELS, fault_candidates
from netarena.route.static.looks import design_looks
from netarena.route.static.prompts import task_prompt

if TYPE_CHECKING:
    from netarena.common.core.agents import Baseline

__all__ = ["RouteApp", "ROUTE_LABELS", "ROUTE_LABEL_SETS"]

ROUTE_LABELS: dict[int, tuple[str, ...]] = {
    level: (*LEVEL_LABELS[level], *OSPF_LEVEL_LABELS.get(level, ()), *BGP_LEVEL_LABELS[level])
    for level in LEVEL_LABELS
}
"""Static fault combinations, then dynamic-routing (OSPF, then BGP, on FRR) ones, per level."""
_OSPF = tuple(label for labels in OSPF_LEVEL_LABELS.values() for label in labels)
_BGP = tuple(label for labels in BGP_LEVEL_LABELS.values() for label in labels)
ROUTE_LABEL_SETS: dict[str, tuple[str, ...]] = {
    "original": tuple(label for labels in LEVEL_LABELS.values() for label in labels),
    "static": tuple(label for labels in LEVEL_LABELS.values() for label in labels),
    "ospf": _OSPF,
    "bgp": _BGP,
    "dynamic": (*_OSPF, *_BGP),
}
"""``original``/``static``: the original NetArena's faults on one Linux router;
``ospf``: OSPF misconfigurations on FRR routers; ``bgp``: BGP misconfigurations in a
multi-AS network; ``dynamic``: both (run only when asked)."""


class RouteApp(App):
    """Routing misconfiguration troubleshooting on a Mininet network."""

    name = "route"
    kind = "reactive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = ROUTE_LABELS
    label_sets: ClassVar[dict[str, tuple[str, ...]]] = ROUTE_LABEL_SETS
    opt_in_labels: ClassVar[frozenset[str]] = frozenset((*_OSPF, *_BGP))
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
        if label.split("+")[0] in OSPF_FAULTS or label.split("+")[0] in BGP_FAULTS:
            return self._generate_dynamic(rng, seed, level, label)
        plan, topo = self._topology(rng)
        intent = draw_intent(rng, plan)
        local = draw_undisclosed(random.Random(f"route/{seed}/undisclosed"), plan, intent)
        firewalled = frozenset(i.node for i in local.items if i.kind == "host_firewall")
        held = design_looks(plan, local)
        faults: list[dict[str, Any]] = [
            {
                "type": code,
                "name": FAULT_TYPES[code],
                "candidates": fault_candidates(seed, slot, plan, intent, code, local.tcp_port,
                                               firewalled, held),
            }
            for slot, code in enumerate(label.split("+"))
        ]
        expected = PingMatrix(plan.nodes, intended_pairs(plan, intent))
        prompt = task_prompt(
            plan,
            intent,
            expected,
            self.config.prompt_style,
            self.config.command_timeout_s,
            (local.tcp_port, local.udp_port),
        )
        truth = {
            "plan": plan.to_dict(),
            "intent": intent.to_dict(),
            "topo": topo,
            "faults": faults,
            "undisclosed": local.to_dict(),
        }
        return self.make_query(seed, level, label, prompt, truth)

    def _generate_dynamic(self, rng: random.Random, seed: int, level: int, label: str) -> Query:
        """An OSPF or multi-AS BGP network, its faults and the incident ticket (``frr/``)."""
        plan: OspfPlan
        if label.split("+")[0] in BGP_FAULTS:
            kind, n = "bgp", self.config.num_routers
            drawn = None
            while drawn is None:  # a plan where no repair order loses reachability
                bgp = draw_bgp_plan(rng, n if n is not None and n >= 4 else None)
                drawn = draw_bgp_faults(rng, bgp, label)
            plan, faults = bgp, drawn
            symptoms, watch = bgp_symptoms(bgp, faults, rng)
        else:
            kind, ticket = "ospf", None
            while ticket is None:  # a design with a place for every fault, valued as
                plan = draw_ospf_plan(  # designed, and a ticket that tells them apart
                    rng, self.config.num_routers or rng.randint(4, 8), self.config.network
                )
                found = draw_faults(rng, plan, label)
                ticket = None if found is None else ticket_symptoms(plan, found, rng)
            faults = found or []
            symptoms, watch = ticket
        prompt = dynamic_prompt(
            plan, symptoms, self.config.prompt_style, self.config.command_timeout_s
        )
        truth = {
            "kind": kind,
            "plan": plan.to_dict(),
            "faults": faults,
            "watch": [list(w) for w in watch],
        }
        return self.make_query(seed, level, label, prompt, truth)

    def open(self, query: Query) -> Any:
        """Build the network, inject and verify the faults, and return the episode."""
        if is_dynamic(query.truth):
            from netarena.route.frr.episode import FrrEpisode

            return FrrEpisode(query, self.config)
        from netarena.route.static.episode import RouteEpisode

        return RouteEpisode(query, self.config)

    def audit_objects(self, query: Query) -> Sequence[AuditObject]:
        """Every object an agent can read in the faulted network, labelled by the truth.

        Static networks: ``static/audit.py``; OSPF and BGP networks: ``frr/audit.py``.
        """
        if is_dynamic(query.truth):
            from netarena.route.frr.audit import audit_objects as dynamic

            return dynamic(self, query)
        from netarena.route.static.audit import audit_objects

        return audit_objects(self, query)

    def reference_agent(self) -> Any:
        """The reference solver (reads observations only, never ``Query.truth``)."""
        from netarena.route.agents.reference import ReferenceRouteAgent

        return ReferenceRouteAgent()

    def baselines(self) -> tuple[Baseline, ...]:
        """Route's calibration ladder (``netarena.route.agents.baselines``)."""
        from netarena.route.agents.baselines import BASELINES
        from netarena.route.agents.frr_baselines import LADDER

        return BASELINES + LADDER
