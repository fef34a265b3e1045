"""The self-hosted runner recipe for route: the shipped compose file, two submitters.

``scenarios/route/docker-compose.selfhosted.yml`` (written by ``netarena compose``) started
with compose on a live engine twice, as the workflow (``selfhosted-workflow.yml``) starts it
for two submissions: the local images stand in for the published ones
(``NETARENA_IMAGE_PREFIX=``, ``PURPLE_IMAGE=netarena-purple:latest``), the reference solver and
the null agent (``NETARENA_SOLVER``) are the submitters, each named by its AgentBeats id
(``ROUTE_OPERATOR_ID``), each run with a fresh green token (``NETARENA_TOKEN``). The file is
run as shipped, route's seccomp profile beside it, except for ``num_queries`` (6 instead of
the scenario's 150, for time). The two results files are two leaderboard rows.
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
import yaml

from netarena.common.launch.seccomp import PROFILE_FILE
from netarena.common.reporting.leaderboard import run_queries

ROOT = Path(__file__).resolve().parents[2]
FILE = ROOT / "scenarios" / "route" / "docker-compose.selfhosted.yml"


def compose_command() -> list[str] | None:
    """``docker compose`` or ``docker-compose``, whichever works here."""
    if shutil.which("docker") is None:
        return None
    for command in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(command[0]) and subprocess.run(
                [*command, "version"], capture_output=True, timeout=30).returncode == 0:
            return command
    return None


def why_not(*images: str) -> str:
    """Why these images cannot run under compose here ("" when they can)."""
    if compose_command() is None:
        return "no compose (docker compose plugin or docker-compose)"
    for image in images:
        if subprocess.run(["docker", "image", "inspect", image], capture_output=True,
                          timeout=30).returncode != 0:
            return f"no engine or no image {image} (bash scripts/containers.sh build)"
    return ""


WHY = why_not("netarena-route:latest", "netarena-purple:latest")
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.skipif(bool(WHY), reason=WHY)]


def _with_queries(path: Path, queries: int) -> Path:
    document = yaml.safe_load(FILE.read_text())
    command = document["services"]["agentbeats-client"]["command"]
    at = command.index("--config") + 1
    command[at] = json.dumps({**json.loads(command[at]), "num_queries": queries})
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    shutil.copy(FILE.parent / PROFILE_FILE, path.parent / PROFILE_FILE)  # read beside the file
    return path


@pytest.mark.timeout(1200)
def test_two_submitters_under_the_selfhosted_compose_file_are_two_rows(tmp_path: Path) -> None:
    compose = compose_command()
    assert compose is not None
    file = _with_queries(tmp_path / "docker-compose.selfhosted.yml", 6)
    results = tmp_path / "results"
    results.mkdir()
    for solver, agentbeats_id in (("reference", "submitter-a"), ("null", "submitter-b")):
        output = tmp_path / f"output-{agentbeats_id}"
        output.mkdir()
        env = {**os.environ, "NETARENA_IMAGE_PREFIX": "", "NETARENA_RESULTS": str(output),
               "PURPLE_IMAGE": "netarena-purple:latest", "NETARENA_SOLVER": solver,
               "ROUTE_OPERATOR_ID": agentbeats_id, "NETARENA_ROUTE_ID": "green-id",
               "NETARENA_TOKEN": secrets.token_hex(24)}
        base = [*compose, "-f", str(file), "-p", f"netarena-selfhosted-{os.getpid()}"]
        try:
            proc = subprocess.run([*base, "up", "--exit-code-from", "agentbeats-client",
                                   "--abort-on-container-exit"], env=env, capture_output=True,
                                  text=True, timeout=540)
            assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
        finally:
            subprocess.run([*base, "down", "-v", "--remove-orphans"], env=env,
                           capture_output=True, timeout=120)
        doc = json.loads((output / "results.json").read_text())
        assert doc["status"] == "completed"
        assert doc["participants"] == {"netarena_route": "green-id",
                                       "route_operator": agentbeats_id}
        assert (output / "results.json").stat().st_uid == os.getuid()
        shutil.copy(output / "results.json", results / f"{agentbeats_id}.json")
    (table,), problem = run_queries(tmp_path, ["leaderboard"])
    assert problem is None
    solved = {row[0]: dict(zip(table.columns, row, strict=True))["Solved safely"]
              for row in table.rows}
    assert solved == {"submitter-a": 1.0, "submitter-b": 0.0}
