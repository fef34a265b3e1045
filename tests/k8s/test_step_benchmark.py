"""``benchmarks/k8s_step.py`` still runs: every command it times succeeds in an episode.

The benchmark asserts each command's exit code; when the images became real (distroless
services have no ``nc``) its exec probe failed and nothing ran it to notice.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "k8s_step.py"


def test_every_timed_kubectl_command_succeeds() -> None:
    spec = importlib.util.spec_from_file_location("k8s_step_benchmark", _SCRIPT)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    medians = bench._kubectl_ms(1)
    assert "exec nc probe" in medians and "version --client (no server)" in medians
    assert all(ms > 0 for ms in medians.values()), medians
