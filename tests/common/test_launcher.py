"""``netarena up`` without an engine: clear errors from a real Docker client, one privileges table.

The client is the real Docker SDK pointed at a socket that does not exist (no mocks); the
live runs are in ``tests/containers/test_up.py``.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.errors import ConfigError, EngineUnavailable, LaunchError
from netarena.common.launch.compose import ComposeSpec, compose_document, compose_yaml
from netarena.common.launch.launcher import UpSpec, connect, up
from netarena.common.launch.privileges import privileges

pytest.importorskip("docker", reason="the Docker SDK (netarena[docker]) is not installed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_engine(tmp_path: Path) -> str:
    return f"unix://{tmp_path}/no-such-docker.sock"


def test_no_engine_is_named_with_its_address_and_the_fix(no_engine: str) -> None:
    with pytest.raises(EngineUnavailable) as caught:
        connect(no_engine, timeout_s=5)
    message = str(caught.value)
    assert no_engine in message and "DOCKER_HOST" in message and "start one" in message


def test_up_without_an_engine_fails_before_creating_anything(no_engine: str,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = UpSpec(app="malt", purple="netarena-purple:latest", docker_host=no_engine)
    with pytest.raises(EngineUnavailable):
        asyncio.run(up(spec, out=out))
    assert not out.exists()


def test_cli_prints_the_error_not_a_traceback(no_engine: str) -> None:
    result = CliRunner().invoke(cli, ["up", "malt", "--purple", "netarena-purple:latest",
                                      "-n", "2"], env={"DOCKER_HOST": no_engine})
    assert result.exit_code == 2, result.output
    assert "no Docker engine reachable at" in result.output
    assert no_engine in result.output.replace("\n", "")
    assert "Traceback" not in result.output


@pytest.mark.parametrize(("args", "problem"), [
    (["--config", "[1]"], "--config must be a JSON object"),
    (["--config", "{nope"], "--config is not JSON"),
    (["--pull", "sometimes"], "--pull must be missing, never or always"),
    (["-e", "NETARENA_SURELY_UNSET_VARIABLE"], "not set in this shell"),
])
def test_cli_rejects_bad_options_clearly(args: list[str], problem: str) -> None:
    result = CliRunner().invoke(cli, ["up", "malt", "--purple", "img", *args],
                                env={"DOCKER_HOST": "unix:///nonexistent.sock"})
    assert result.exit_code == 2 and problem in result.output, result.output


def test_unknown_network_mode_is_a_config_error() -> None:
    from netarena.common.launch.containers import Launch

    launch = Launch(None, UpSpec(app="malt", purple="p", network="overlay"), print)
    with pytest.raises(ConfigError, match="--network must be one of"):
        launch.choose_network()
    shared_url = Launch(None, UpSpec(app="malt", purple="http://10.1.2.3:9019/",
                                      network="shared"), print)
    with pytest.raises(ConfigError, match="needs a purple image"):
        shared_url.choose_network()
    assert issubclass(EngineUnavailable, LaunchError)


def test_only_route_needs_privileges_and_the_entrypoint_asks_for_the_same() -> None:
    assert privileges("malt").docker_flags() == privileges("k8s").docker_flags() == []
    route = privileges("route")
    assert route.cap_add == ("NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE")
    assert "seccomp=unconfined" in route.security_opt
    entrypoint = (ROOT / "docker" / "entrypoint.sh").read_text()
    flags = re.search(r'^FLAGS="([^"]+)"', entrypoint, re.M)
    assert flags is not None
    asked = flags.group(1).split()
    assert [asked[i + 1] for i, flag in enumerate(asked) if flag == "--cap-add"] == list(
        route.cap_add)
    assert {asked[i + 1] for i, f in enumerate(asked) if f == "--security-opt"} <= set(
        route.security_opt)


def test_scripts_hold_no_copy_of_the_privileges() -> None:
    """The shell scripts ask ``netarena`` (up, compose) instead of listing capabilities."""
    for script in ("scripts/containers.sh", "scripts/agentbeats_compose.sh"):
        text = (ROOT / script).read_text()
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        assert "SYS_PTRACE" not in code, script
        assert "netarena up" in code or "netarena compose" in code or "$NETARENA" in code


@pytest.mark.parametrize("network", ["bridge", "shared"])
@pytest.mark.parametrize("app", ["malt", "route", "k8s"])
def test_compose_file_has_the_leaderboard_shape_and_the_same_privileges(
        app: str, network: str) -> None:
    spec = ComposeSpec(app=app, purple_env={"NETARENA_SOLVER": "reference"},
                       config={"num_queries": 2, "seed": 3}, network=network)
    document = yaml.safe_load(compose_yaml(spec))
    assert document == compose_document(spec)
    services = document["services"]
    assert set(services) == {f"{app}_operator", "green-agent", "agentbeats-client"}
    green = services["green-agent"]
    assert green.get("cap_add", []) == list(privileges(app).cap_add)
    assert green.get("security_opt", []) == list(privileges(app).security_opt)
    for name in (f"{app}_operator", "green-agent"):
        assert services[name]["healthcheck"]["test"][:3] == ["CMD", "curl", "-f"]
    client = services["agentbeats-client"]
    assert client["depends_on"] == {"green-agent": {"condition": "service_healthy"},
                                    f"{app}_operator": {"condition": "service_healthy"}}
    assert '"num_queries": 2' in client["command"][client["command"].index("--config") + 1]
    assert f"NETARENA_APP={app}" in services[f"{app}_operator"]["environment"]
    if network == "shared":
        assert green["network_mode"] == f"service:{app}_operator"
        assert "networks" not in document
    else:
        assert green["networks"] == ["agent-network"]


def test_shipped_selfhosted_route_compose_is_the_generators_output() -> None:
    """``scenarios/route/docker-compose.selfhosted.yml`` is written by ``netarena compose``."""
    shipped = ROOT / "scenarios" / "route" / "docker-compose.selfhosted.yml"
    result = CliRunner().invoke(cli, _SELFHOSTED_ARGS)
    assert result.exit_code == 0, result.output
    assert shipped.read_text() == result.output


_SELFHOSTED_ARGS = [
    "compose", "route",
    "--purple", "${PURPLE_IMAGE:-ghcr.io/your-org/netarena-purple:latest}",
    "--client-image",
    "${NETARENA_IMAGE_PREFIX-ghcr.io/your-org/}netarena-purple:${NETARENA_TAG-latest}",
    "--green", "${NETARENA_IMAGE_PREFIX-ghcr.io/your-org/}netarena-route:${NETARENA_TAG-latest}",
    "-e", "NETARENA_SOLVER=${NETARENA_SOLVER:-reference}",
    "--config", '{"num_queries": 150, "levels": [1, 2, 3], "concurrency": 4, "max_turns": 10, '
                '"num_subnets": 3, "hosts_per_subnet": 2}',
    "--agentbeats-id",
    "route_operator=${ROUTE_OPERATOR_ID:?set ROUTE_OPERATOR_ID to the submitter's AgentBeats id}",
    "--agentbeats-id", "netarena_route=${NETARENA_ROUTE_ID:-}",
    "--client-out", "${NETARENA_RESULTS:-./output}",
    "--client-user", "${NETARENA_CLIENT_USER:-0:0}"]
"""How ``scenarios/route/docker-compose.selfhosted.yml`` is written (docs/agentbeats.md): the
route scenario's assessment config (no seed), the submitter's AgentBeats id from the
environment, no gate on scores."""


def test_the_default_compose_file_needs_nothing_beside_it() -> None:
    """``netarena compose route > docker-compose.yml`` in an empty folder: no script to mount
    (the client is in the image), a client that can write into the folder the engine makes
    for ``./output``, and no gate on scores."""
    result = CliRunner().invoke(cli, ["compose", "route", "-e", "NETARENA_SOLVER=reference"])
    assert result.exit_code == 0, result.output
    client = yaml.safe_load(result.output)["services"]["agentbeats-client"]
    assert client["entrypoint"] == ["python", "-m", "netarena.common.launch.smoke_client"]
    assert client["volumes"] == ["./output:/output"] and client["user"] == "0:0"
    assert "--expect-correctness" not in client["command"]
    assert "--agentbeats-id" not in client["command"]
    smoke = CliRunner().invoke(cli, ["compose", "malt", "--client-script", "dev/client.py",
                                     "--expect-correctness", "1",
                                     "--agentbeats-id", "malt_operator=x"])
    client = yaml.safe_load(smoke.output)["services"]["agentbeats-client"]
    assert client["entrypoint"] == ["python", "/smoke_client.py"]
    assert client["volumes"][0] == "dev/client.py:/smoke_client.py:ro"
    command = client["command"]
    assert command[command.index("--expect-correctness") + 1] == "1"
    assert command[command.index("--agentbeats-id") + 1] == "malt_operator=x"
