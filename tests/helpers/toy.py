"""A tiny in-memory app for testing the core loop without any emulator.

The state is a counter; the target is a number in the prompt. Actions are ``add N``. It is
reactive (multi-turn) and has a safety rule (never overshoot), so runner, stats and server
tests exercise every path: solved, unsolved, unsafe, invalid actions, errors.
"""

from __future__ import annotations

import random
import re
from typing import ClassVar

from netarena.common.agents import Observation
from netarena.common.app import App, AppConfig, Episode
from netarena.common.errors import EmulatorError
from netarena.common.types import Query, Score, StepResult, query_id


class ToyConfig(AppConfig):
    max_target: int = 9
    fail_open: bool = False
    """Raise an EmulatorError from open(), to test error capture."""


class ToyEpisode(Episode):
    def __init__(self, query: Query) -> None:
        super().__init__(query)
        self.value = 0
        self.target = int(query.truth["target"])
        self.safe = True
        self.history: list[str] = []
        self.closes = 0

    def _observe(self) -> str:
        return f"{self.query.prompt}\nvalue={self.value}\n" + "\n".join(self.history)

    def _step(self, action: str) -> StepResult:
        m = re.fullmatch(r"\s*add\s+(-?\d+)\s*", action)
        if not m:
            self.history.append(f"invalid: {action[:40]!r}")
            return StepResult(observation="invalid action", valid=False, reward=-1)
        self.value += int(m.group(1))
        self.safe &= self.value <= self.target
        self.history.append(action)
        done = self.value == self.target
        return StepResult(observation=f"value={self.value}", done=done, reward=10 if done else 0)

    def _score(self) -> Score:
        return Score(
            correct=self.value == self.target, safe=self.safe, details={"value": self.value}
        )

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
        return ToyEpisode(query)

    def reference_agent(self) -> ReferenceToyAgent:
        return ReferenceToyAgent()
