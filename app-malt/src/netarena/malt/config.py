"""``MaltConfig``: the parameters of the MALT app (topology, prompts, sandbox, rewards)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from netarena.common.core.app import AppConfig
from netarena.malt.topology import TopologyParams

__all__ = ["MaltConfig"]


class MaltConfig(AppConfig, TopologyParams):
    """MALT parameters: topology size and capacity profile, prompt style, sandbox budget.

    The topology fields come from ``TopologyParams``, so they are defined (and documented)
    once.
    """

    runtime_fields: ClassVar[frozenset[str]] = frozenset(
        {"sandbox_workers", "reward_correct", "reward_incorrect", "reward_invalid"}
    )

    timeout_s: float = Field(5.0, gt=0, le=120)
    """Wall-clock (and, rounded up, CPU) limit of one answer's code, seconds."""
    sandbox_workers: int = Field(2, ge=1, le=32)
    """Warm sandbox workers (each answer runs in a fresh fork of one)."""
    reward_correct: float = 100.0
    """RL reward of an answer judged correct (MALT answers in one step)."""
    reward_incorrect: float = 0.0
    """RL reward of an answer judged wrong (including code that failed or was unsafe)."""
    reward_invalid: float = -1.0
    """RL reward of a reply with no code to run (the episode goes on to the next turn)."""

    def topology_params(self) -> TopologyParams:
        """The topology part of the configuration."""
        return TopologyParams(**self.model_dump(include=set(TopologyParams.model_fields)))
