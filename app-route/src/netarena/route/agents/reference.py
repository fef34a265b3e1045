"""The route reference agent: one entry for every query, static or dynamic.

It sends a dynamic-routing observation to the FRR solver and any other to the static one;
it sits above both so that neither solver imports the other.
"""

from __future__ import annotations

import json

from netarena.common.core.agents import Observation
from netarena.route.base.history import Move
from netarena.route.frr.solver import next_dynamic_action
from netarena.route.static.solver import RoutePlanner

__all__ = ["ReferenceRouteAgent"]


class ReferenceRouteAgent:
    """Stateless reference solver for the route app (no LLM)."""

    name = "route-reference"

    def next_action(self, text: str) -> Move | None:
        """The next ``(machine, command)`` for an observation's text; ``None`` gives up.

        A dynamic-routing observation (it states a routing design) goes to
        ``frr.solver.next_dynamic_action``.
        """
        if "## Routing design" in text:
            return next_dynamic_action(text)
        return _STATIC.next_action(text)

    async def act(self, observation: Observation) -> str:
        """Answer with the next diagnostic or fix as ``{"machine", "command"}`` JSON.

        An agent that gives up (``next_action`` is ``None``) replies with nothing.
        """
        action = self.next_action(observation.text)
        if action is None:
            return ""
        machine, command = action
        return json.dumps({"machine": machine, "command": command})


_STATIC = RoutePlanner()
