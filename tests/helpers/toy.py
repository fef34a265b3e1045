"""A tiny in-memory app for testing the core loop without any emulator.

The state is a counter; the target is a number in the prompt. Actions are ``add N``. It is
reactive (multi-turn) and has a safety rule (never overshoot), so runner, stats and server
tests exercise every path: solved, unsolved, unsafe, invalid actions, errors. Its episode
is a ``ReactiveEpisode``, like route's and k8s's, with a counter for an emulator.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar

from netarena.common.core.agents import Observation
from netarena.common.core.app import App, Episode
from netarena.common.core.errors import EmulatorError, InvalidAction
from netarena.common.core.reactive import Command, ReactiveEpisode, RewardConfig
from netarena.common.core.types import Query, query_id


class ToyConfig(RewardConfig):
    max_target: int = 9
    fail_open: bool = False
    """Raise an EmulatorError from open(), to test error capture."""
    reward_invalid: float = -1.0
    reward_valid: float = 0.0
    reward_fix: float = 10.0
    reward_unsafe: float = 0.0


class ToyEpisode(ReactiveEpisode[int, int]):
    """The counter as a reactive episode: proof that the shared loop is app-agnostic."""

    state_title = "Counter"
    next_cue = "Your next action, as add N:"
    config: ToyConfig

    def __init__(self, query: Query, config: ToyConfig | None = None) -> None:
        super().__init__(query, config or ToyConfig())
        self.value = 0
        self.target = int(query.truth["target"])
        self.closes = 0
        self._begin(self.value)

    def _parse(self, reply: str) -> Command[int]:
        m = re.fullmatch(r"\s*add\s+(-?\d+)\s*", reply)
        if not m:
            raise InvalidAction("answer with add N")
        return Command(f"add {m.group(1)}", int(m.group(1)))

    def _execute(self, command: Command[int]) -> tuple[str, int]:
        self.value += command.payload
        return "", 0

    def _measure(self) -> int:
        return self.value

    def _report(self, state: int) -> str:
        return f"value={state}"

    def _solved(self, state: int) -> bool:
        return state == self.target

    def _regressions(self, before: int, after: int) -> list[str]:
        return [f"overshot to {after}"] if after > max(before, self.target) else []

    def _details(self, state: int) -> dict[str, int]:
        return {"value": state}

    def _close(self) -> None:
        self.closes += 1


class ReferenceToyAgent:
    name = "toy-reference"

    async def act(self, observation: Observation) -> str:
        target = int(re.search(r"reach (\d+)", observation.text).group(1))
        value = int(re.search(r"value=(-?\d+)", observation.text).group(1))
        return f"add {min(3, target - value)}"


class ToyApp(App):
    name = "toy"
    kind = "reactive"
    labels: ClassVar[dict[int, tuple[str, ...]]] = {
        1: ("small",),
        2: ("medium",),
        3: ("big", "huge"),
    }
    config_model = ToyConfig
    config: ToyConfig
    default_max_turns = 10
    legacy_keys: ClassVar[dict[str, str]] = {"biggest": "max_target"}

    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        rng = random.Random(seed)
        label = self.pick_label(rng, level, label)
        target = rng.randint(1, self.config.max_target) * level
        return Query(
            id=query_id(self.name, seed, level, label, self.params()),
            app=self.name,
            seed=seed,
            level=level,
            label=label,
            params=self.params(),
            prompt=f"Use 'add N' actions to reach {target} without overshooting.",
            truth={"target": target},
        )

    def open(self, query: Query) -> Episode:
        if self.config.fail_open:
            raise EmulatorError("toy emulator refused to start")
        return ToyEpisode(query, self.config)

    def reference_agent(self) -> ReferenceToyAgent:
        return ReferenceToyAgent()
