"""``netarena serve`` and ``netarena purple`` as real processes, driven like AgentBeats."""

from __future__ import annotations

import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from netarena.common.core.app import app_names
from tests.a2a.servers import gateway_records, listen_socket, stream_03

pytestmark = pytest.mark.slow

# route needs root and is the slowest; any app works (no app-specific A2A code).
APP = next((a for a in ("malt", "k8s", "route") if a in app_names()), None)


def _port() -> int:
    """A free port below the kernel's ephemeral range. One inside it (what port 0 gives) can
    go to an outgoing connection before the server, started up to a minute later under the
    parallel suite, binds it (CI: ``Address already in use``)."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    rng = random.SystemRandom()
    while True:
        port = rng.randrange(low // 2, low)
        try:
            with listen_socket("127.0.0.1", port):
                return port
        except OSError:
            continue


def _start(*args: str, **extra_env: str) -> subprocess.Popen:
    cmd = [sys.executable, "-c", "from netarena.common.cli.root import main; main()", *args]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **extra_env}
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)


START_S = 120.0
"""How long a served agent may take to answer its card: a Python process importing the
whole stack takes 2-3 s alone, and over a minute on 2 cores under the parallel suite."""


async def _wait_card(url: str, proc: subprocess.Popen) -> dict:
    deadline = time.monotonic() + START_S
    async with httpx.AsyncClient(timeout=2) as http:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited: {proc.stderr.read().decode()[-2000:]}")
            try:
                return (await http.get(url + ".well-known/agent-card.json")).json()
            except httpx.TransportError:
                await asyncio.sleep(0.2)
    pytest.fail(f"server did not start within {START_S:g} s")


@pytest.mark.skipif(APP is None, reason="no real app installed yet")
async def test_serve_and_purple_processes_evaluate_end_to_end() -> None:
    gport, pport = _port(), _port()
    green_url, purple_url = f"http://127.0.0.1:{gport}/", f"http://127.0.0.1:{pport}/"
    green = _start("serve", APP, "--host", "127.0.0.1", "--port", str(gport),
                   "--card-url", green_url)
    purple = _start("purple", "--solver", "reference", "--app", APP, "--port", str(pport))
    try:
        card = await _wait_card(green_url, green)
        await _wait_card(purple_url, purple)
        assert card["name"] == f"netarena-{APP}" and card["url"] == green_url
        events = await stream_03(green_url, {"participants": {f"{APP}_operator": purple_url},
                                             "config": {"num_queries": 3, "seed": 1}})
    finally:
        for proc in (green, purple):
            proc.terminate()
            proc.wait(10)
    assert events[-1]["status"]["state"] == "completed"
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    summary = gateway_records(artifact["parts"])[-1]
    assert summary["kind"] == "summary" and summary["queries"] == 3
    assert summary["correctness"]["rate"] == 1.0


@pytest.mark.skipif(APP is None, reason="no real app installed yet")
async def test_purple_agent_is_chosen_by_environment_when_runners_pass_only_server_flags() -> None:
    """Leaderboard runners pass only --host/--port/--card-url to an image."""
    gport, pport = _port(), _port()
    green_url, purple_url = f"http://127.0.0.1:{gport}/", f"http://127.0.0.1:{pport}/"
    purple = _start("purple", "--host", "127.0.0.1", "--port", str(pport),
                    "--card-url", purple_url, NETARENA_SOLVER="reference", NETARENA_APP=APP)
    green = _start("serve", APP, "--host", "127.0.0.1", "--port", str(gport))
    try:
        card = await _wait_card(purple_url, purple)
        await _wait_card(green_url, green)
        assert card["name"] == f"netarena-purple-{APP}-reference"  # not the LiteLLM default
        events = await stream_03(green_url, {"participants": {f"{APP}_operator": purple_url},
                                             "config": {"num_queries": 2, "seed": 3}})
    finally:
        for proc in (green, purple):
            proc.terminate()
            proc.wait(10)
    assert events[-1]["status"]["state"] == "completed"
    (artifact,) = [e["artifact"] for e in events if e["kind"] == "artifact-update"]
    assert gateway_records(artifact["parts"])[-1]["correctness"]["rate"] == 1.0
