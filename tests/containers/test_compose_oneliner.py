"""The README's one-liner: ``netarena compose route -e NETARENA_SOLVER=reference --out
docker-compose.yml`` then compose up, in an empty folder (no script to mount, an output
folder the engine creates; beside the file only route's seccomp profile, which ``--out``
writes). Skipped, with the reason, without an engine or the images."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.common.launch.seccomp import PROFILE_FILE
from tests.containers.test_selfhosted import compose_command, why_not

WHY = why_not("netarena-route:latest", "netarena-purple:latest")
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.skipif(bool(WHY), reason=WHY)]


@pytest.mark.timeout(900)
def test_the_compose_one_liner_runs_in_an_empty_folder(tmp_path: Path) -> None:
    compose = compose_command()
    assert compose is not None
    netarena = str(Path(sys.executable).parent / "netarena")
    subprocess.run([netarena, "compose", "route", "-e", "NETARENA_SOLVER=reference",
                    "--config", '{"num_queries": 3}', "--out", "docker-compose.yml"],
                   check=True, timeout=60, cwd=tmp_path)
    base = [*compose, "-p", f"netarena-oneliner-{os.getpid()}"]
    try:
        proc = subprocess.run([*base, "up", "--exit-code-from", "agentbeats-client",
                               "--abort-on-container-exit"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    finally:
        subprocess.run([*base, "down", "-v", "--remove-orphans"], cwd=tmp_path,
                       capture_output=True, timeout=120)
    doc = json.loads((tmp_path / "output" / "results.json").read_text())
    assert doc["status"] == "completed"
    assert sum(r["kind"] == "query" for r in doc["results"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "docker-compose.yml", PROFILE_FILE, "output"]
