"""What tells one emulated cluster from another: its name, size, age and host kernel."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["ClusterProfile", "cluster_profile"]

_NAMES = ("kind", "boutique", "shop", "staging", "dev", "demo", "prod-eu", "ops")

_KERNELS = ("6.8.0-60-generic", "6.8.0-71-generic", "6.11.0-29-generic", "6.1.0-37-amd64")

@dataclass(frozen=True)
class ClusterProfile:
    """What tells one cluster from another: its name, size, age and host kernel.

    Attributes:
        name: kind cluster name; nodes are ``<name>-control-plane``, ``<name>-worker``...
        workers: Number of worker nodes.
        created_at: When the cluster was created (seconds since the epoch).
        deployed_at: When the application was deployed (after ``created_at``).
        now: The moment the episode starts (the clock ages are read against).
        kernel: The nodes' kernel version.
    """

    name: str
    workers: int
    created_at: float
    deployed_at: float
    now: float
    kernel: str

    @property
    def control_plane(self) -> str:
        """Name of the control-plane node."""
        return f"{self.name}-control-plane"

    @property
    def worker_names(self) -> list[str]:
        """Names of the worker nodes (``-worker``, ``-worker2``, ...)."""
        return [f"{self.name}-worker{i + 1 if i else ''}" for i in range(self.workers)]

def cluster_profile(seed: int, now: float) -> ClusterProfile:
    """A cluster drawn from ``seed``: 2-3 workers, created 4 to 90 days before ``now``.

    The application went in between 5 minutes and 6 days ago (a third of the time within
    the last hour, so its pods' events are still kept).
    """
    rng = random.Random(f"cluster/{seed}")
    created = now - rng.uniform(4, 90) * 86_400
    recent = rng.random() < 1 / 3
    deployed = now - (rng.uniform(300, 3_300) if recent else rng.uniform(2, 144) * 3_600)
    return ClusterProfile(rng.choice(_NAMES), rng.choice((2, 2, 3)), created, deployed, now,
                          rng.choice(_KERNELS))
