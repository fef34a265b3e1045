"""The self-hosted runner recipe for route: the shipped compose file runs the route scenario.

``scenarios/route/docker-compose.selfhosted.yml`` (written by ``netarena compose``) started
with compose on a live engine, the local images standing in for the published ones
(``NETARENA_IMAGE_PREFIX=``, ``PURPLE_IMAGE=netarena-purple:latest``): the client's
results file must say completed, 6 of 6 correct.
Skipped, with the reason, without an engine, compose or the images.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "scenarios" / "route" / "docker-compose.selfhosted.yml"


def _compose() -> list[str] | None:
    if shutil.which("docker") is None:
        return None
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) and subprocess.run(
                [*command, "version"], capture_output=True, timeout=30).returncode == 0:
            return command
    return None


def _why_not() -> str:
    if _compose() is None:
        return "no compose (docker compose plugin or docker-compose)"
    for image in ("netarena-route:latest", "netarena-purple:latest"):
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                          timeout=30).returncode != 0:
            return f"no engine or no image {image} (bash scripts/containers.sh build)"
    return ""


WHY = _why_not()
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.skipif(bool(WHY), reason=WHY)]


@pytest.mark.timeout(600)
def test_route_scenario_runs_under_the_selfhosted_compose_file(tmp_path: Path) -> None:
    compose = _compose()
    assert compose is not None
    env = {**os.environ, "NETARENA_IMAGE_PREFIX": "", "NETARENA_RESULTS": str(tmp_path),
           "PURPLE_IMAGE": "netarena-purple:latest",
           "NETARENA_CLIENT_USER": f"{os.getuid()}:{os.getgid()}",
           "NETARENA_TOKEN": secrets.token_hex(24)}
    base = [*compose, "-f", str(FILE), "-p", f"netarena-selfhosted-{os.getpid()}"]
    try:
        proc = subprocess.run([*base, "up", "--exit-code-from", "agentbeats-client",
                               "--abort-on-container-exit"], env=env, capture_output=True,
                              text=True, timeout=540)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    finally:
        subprocess.run([*base, "down", "-v", "--remove-orphans"], env=env,
                       capture_output=True, timeout=120)
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["status"] == "completed" and list(doc["participants"]) == ["route_operator"]
    queries = [r for r in doc["results"] if r["kind"] == "query"]
    assert len(queries) == 6 and all(q["correct"] and q["safe"] for q in queries)
