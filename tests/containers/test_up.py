"""``netarena up`` against a live engine: each app with the reference purple image, and every
way a run can end leaves no container or network behind (checked with the SDK).

Needs a running Docker engine and the images (``bash scripts/containers.sh build``); skipped,
with the reason, where either is missing. Route runs where the engine grants its
capabilities (skipped, naming what was refused, elsewhere).
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from netarena.common.core.errors import (
    ContainerFailed,
    EngineUnavailable,
    ImageMissing,
    PrivilegeRefused,
)
from netarena.common.launch.launcher import LABEL, UpSpec, connect, up

docker = pytest.importorskip("docker", reason="the Docker SDK (netarena[docker]) is not installed")

IMAGES = ("netarena-purple:latest", "netarena-malt:latest", "netarena-k8s:latest",
          "netarena-route:latest")
REFERENCE = {"NETARENA_SOLVER": "reference"}


def _engine() -> tuple[Any, str]:
    try:
        client = connect(timeout_s=20)
    except EngineUnavailable as exc:
        return None, str(exc)
    missing = []
    for image in IMAGES:
        try:
            client.images.get(image)
        except docker.errors.ImageNotFound:
            missing.append(image)
    if missing:
        return None, f"images missing ({', '.join(missing)}): bash scripts/containers.sh build"
    return client, ""


CLIENT, WHY = _engine()
pytestmark = [pytest.mark.docker, pytest.mark.slow,
              pytest.mark.skipif(CLIENT is None, reason=WHY or "no engine")]


def _leftovers() -> list[str]:
    """Names of containers and networks any ``netarena up`` left on the engine."""
    containers = CLIENT.containers.list(all=True, filters={"label": LABEL})
    networks = CLIENT.networks.list(filters={"label": LABEL})
    return [c.name for c in containers] + [n.name for n in networks]


@pytest.fixture(autouse=True)
def _nothing_left_behind() -> Any:
    assert _leftovers() == [], "an earlier run left these behind"
    yield
    assert _leftovers() == []


def _check_run(out: Path, app: str, n: int) -> None:
    doc = json.loads((out / "agentbeats.json").read_text())
    assert doc["status"] == "completed" and list(doc["participants"]) == [f"{app}_operator"]
    queries = [r for r in doc["results"] if r["kind"] == "query"]
    assert len(queries) == n and all(q["correct"] and q["safe"] for q in queries)
    assert len((out / "results.jsonl").read_text().splitlines()) == n
    assert json.loads((out / "summary.json").read_text())["correctness"]["rate"] == 1.0
    assert "netarena" in (out / "green.log").read_text()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("app", ["malt", "k8s"])
def test_app_completes_with_the_reference_purple_image(app: str, tmp_path: Path) -> None:
    statuses: list[str] = []
    spec = UpSpec(app=app, purple="netarena-purple:latest", purple_env=REFERENCE,
                  config={"num_queries": 3, "seed": 5}, pull="never")
    result = asyncio.run(up(spec, out=tmp_path, on_status=lambda s, t: statuses.append(t)))
    assert result.network_mode == "bridge"
    assert any("query 3/3" in s for s in statuses)
    _check_run(tmp_path, app, 3)


@pytest.mark.timeout(300)
def test_route_completes_where_the_engine_grants_its_capabilities(tmp_path: Path) -> None:
    spec = UpSpec(app="route", purple="netarena-purple:latest", purple_env=REFERENCE,
                  config={"num_queries": 2, "seed": 5}, pull="never")
    try:
        asyncio.run(up(spec, out=tmp_path))
    except PrivilegeRefused as exc:
        pytest.skip(f"this engine refuses route's privileges: {exc}")
    _check_run(tmp_path, "route", 2)


@pytest.mark.timeout(300)
def test_shared_namespace_mode_runs_the_client_inside_the_green_container(
        tmp_path: Path) -> None:
    """For engines that cannot make a bridge: one network namespace, nothing published."""
    spec = UpSpec(app="malt", purple="netarena-purple:latest", purple_env=REFERENCE,
                  config={"num_queries": 2, "seed": 9}, network="shared", pull="never")
    result = asyncio.run(up(spec, out=tmp_path))
    assert result.network_mode == "shared"
    assert any("query 2/2" in line for line in result.assessment.messages)
    _check_run(tmp_path, "malt", 2)


@pytest.fixture
def never_healthy() -> Any:
    """A purple image that starts, says why it is broken, and never serves."""
    dockerfile = ("FROM netarena-purple:latest\n"
                  'ENTRYPOINT ["sh", "-c", "echo purple: no model configured >&2; '
                  'exec sleep 600"]\n')
    image, _ = CLIENT.images.build(fileobj=io.BytesIO(dockerfile.encode()),
                                   tag="netarena-test-never-healthy:latest", rm=True)
    yield "netarena-test-never-healthy:latest"
    CLIENT.images.remove(image.id, force=True)


@pytest.mark.timeout(300)
def test_a_purple_that_never_becomes_healthy_ends_with_its_log_tail(
        never_healthy: str, tmp_path: Path) -> None:
    spec = UpSpec(app="malt", purple=never_healthy, pull="never", health_timeout_s=8)
    started = time.monotonic()
    with pytest.raises(ContainerFailed) as caught:
        asyncio.run(up(spec, out=tmp_path))
    message = str(caught.value)
    assert "purple container" in message and "did not become healthy within 8s" in message
    assert "purple: no model configured" in message
    assert time.monotonic() - started < 60
    assert "no model configured" in (tmp_path / "purple.log").read_text()


@pytest.mark.timeout(300)
def test_a_green_without_its_privileges_is_named(tmp_path: Path) -> None:
    """The route image started as if it needed nothing: the error names the capability."""
    spec = UpSpec(app="malt", green="netarena-route:latest", purple="netarena-purple:latest",
                  purple_env=REFERENCE, pull="never", health_timeout_s=60)
    with pytest.raises(PrivilegeRefused) as caught:
        asyncio.run(up(spec))
    assert "green container" in str(caught.value)
    assert "lacks CAP_NET_ADMIN CAP_SYS_PTRACE CAP_SYS_ADMIN." in str(caught.value)


def test_a_missing_image_is_named_with_the_fix() -> None:
    spec = UpSpec(app="malt", purple="netarena-purple:latest", pull="never",
                  green="netarena-no-such-image:latest")
    with pytest.raises(ImageMissing, match="netarena-no-such-image:latest is not on the "
                                           "engine.*scripts/containers.sh build"):
        asyncio.run(up(spec))


@pytest.mark.timeout(300)
def test_a_container_that_crashes_mid_assessment_ends_the_run(tmp_path: Path) -> None:
    def kill_purple(state: str, text: str) -> None:
        if "query 1/" in text:
            for container in CLIENT.containers.list(filters={"label": LABEL}):
                if container.name.endswith("-purple"):
                    container.kill()

    spec = UpSpec(app="malt", purple="netarena-purple:latest", purple_env=REFERENCE,
                  config={"num_queries": 40, "seed": 3}, pull="never")
    with pytest.raises(ContainerFailed, match="the purple container .* stopped"):
        asyncio.run(up(spec, on_status=kill_purple))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_removes_everything(sig: signal.Signals, tmp_path: Path) -> None:
    """Ctrl-C (or SIGTERM) while the assessment runs: exit 130, nothing left."""
    proc = subprocess.Popen(
        [str(Path(sys.executable).parent / "netarena"), "up", "malt", "--purple",
         "netarena-purple:latest", "-e", "NETARENA_SOLVER=reference", "-n", "200",
         "--seed", "1", "--pull", "never"],
        stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "200", "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    assert proc.stderr is not None
    for line in proc.stderr:
        if "query 1/" in line:
            break
    proc.send_signal(sig)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130, rest
    assert "every container and network of this run was removed" in rest


@pytest.mark.timeout(300)
def test_a_purple_url_on_loopback_is_evaluated_from_the_hosts_network(tmp_path: Path) -> None:
    """No purple container: asked to, the green one shares the host's network (listening on
    its loopback only) to reach the URL."""
    import socket

    import httpx

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    purple = subprocess.Popen(
        [str(Path(sys.executable).parent / "netarena"), "purple", "--solver", "reference",
         "--app", "malt", "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    try:
        url = f"http://127.0.0.1:{port}/"
        for _ in range(120):
            try:
                httpx.get(url + ".well-known/agent-card.json", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                time.sleep(0.5)
        spec = UpSpec(app="malt", purple=url, config={"num_queries": 2, "seed": 4},
                      pull="never", network="host")
        result = asyncio.run(up(spec, out=tmp_path))
    finally:
        purple.terminate()
        purple.wait(timeout=30)
    assert result.network_mode == "host" and set(result.logs) == {"green"}
    _check_run(tmp_path, "malt", 2)
