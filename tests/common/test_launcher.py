"""``netarena up`` without an engine: clear errors from a real Docker client, one privileges table.

The client is the real Docker SDK pointed at a socket that does not exist (no mocks); the
live runs are in ``tests/containers/test_up.py``.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.errors import ConfigError, EngineUnavailable, LaunchError
from netarena.common.launch.compose import ComposeSpec, compose_document, compose_yaml
from netarena.common.launch.launcher import UpSpec, connect, up
from netarena.common.launch.privileges import ROUTE_CAPABILITIES, privileges
from netarena.common.launch.seccomp import PROFILE_FILE, profile_text, route_profile

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


class _Recorder:
    """A Docker client that records the containers ``Launch`` would create (no engine)."""

    def __init__(self) -> None:
        self.created: list[tuple[str, list[str], dict]] = []
        image = SimpleNamespace(attrs={"Config": {"Healthcheck": {"Test": ["CMD", "true"]}}})
        self.images = SimpleNamespace(get=lambda name: image)
        self.containers = SimpleNamespace(create=self._create)

    def _create(self, image: str, command: list[str], **options: object) -> SimpleNamespace:
        self.created.append((image, command, options))
        return SimpleNamespace(start=lambda: None, id="c1", name=options["name"])


@pytest.mark.parametrize("purple", ["http://127.0.0.1:9019/", "http://localhost:9/",
                                    "http://[::1]:9/"])
def test_up_joins_the_hosts_network_only_when_asked(purple: str) -> None:
    from netarena.common.launch.containers import Launch

    with pytest.raises(ConfigError, match="--network host"):
        Launch(None, UpSpec(app="malt", purple=purple), print).choose_network()
    with pytest.raises(ConfigError, match="for a purple URL on this machine"):
        Launch(None, UpSpec(app="malt", purple="img", network="host"), print).choose_network()
    asked = Launch(_Recorder(), UpSpec(app="malt", purple=purple, network="host"), print)
    assert asked.choose_network() == "host"
    asked.start_green("host")
    _, command, options = asked.client.created[-1]
    assert command[:2] == ["--host", "127.0.0.1"] and options["network_mode"] == "host"


def test_up_starts_the_green_container_with_its_privileges_and_a_token() -> None:
    from netarena.common.launch.containers import Launch

    runs = {}
    for app in ("route", "malt"):
        launch = Launch(_Recorder(), UpSpec(app=app, purple="img"), print)
        launch.network = SimpleNamespace(name="net")
        launch.start_green("bridge")
        _, command, options = launch.client.created[-1]
        runs[app] = (launch, command, options)
    launch, command, options = runs["route"]
    assert options["cap_drop"] == ["ALL"] and options["cap_add"] == list(ROUTE_CAPABILITIES)
    seccomp, apparmor = options["security_opt"]
    assert json.loads(seccomp.removeprefix("seccomp=")) == route_profile()
    assert apparmor == "apparmor=unconfined" and "privileged" not in options
    assert options["environment"]["NETARENA_TOKEN"] == launch.token and len(launch.token) >= 32
    assert options["ports"] == {"9009/tcp": ("127.0.0.1", None)}  # published on loopback only
    _, _, malt = runs["malt"]
    assert malt["cap_drop"] is None and malt["cap_add"] is None and malt["security_opt"] is None
    assert runs["malt"][0].token != launch.token


def test_only_route_needs_privileges_and_the_entrypoint_asks_for_the_same() -> None:
    """Route drops every capability and adds back the nine measured ones, under its own
    seccomp profile; nothing unconfined but AppArmor (docs/agentbeats.md)."""
    assert privileges("malt").docker_flags() == privileges("k8s").docker_flags() == []
    route = privileges("route")
    assert route.cap_drop == ("ALL",)
    assert route.cap_add == ROUTE_CAPABILITIES == (
        "CHOWN", "DAC_OVERRIDE", "KILL", "NET_ADMIN", "NET_RAW", "SETGID", "SETUID",
        "SYS_ADMIN", "SYS_PTRACE")
    flags = route.docker_flags()
    assert flags[0] == "--cap-drop=ALL" and "--security-opt=seccomp=unconfined" not in flags
    assert "--security-opt=seccomp=netarena-route-seccomp.json" in flags
    assert route.security_options("/p.json") == ["seccomp=/p.json", "apparmor=unconfined"]
    inline, apparmor = route.engine_security_options()  # the engine's API takes the JSON
    assert json.loads(inline.removeprefix("seccomp=")) == route_profile()
    assert apparmor == "apparmor=unconfined"
    entrypoint = (ROOT / "docker" / "entrypoint.sh").read_text()
    caps = re.search(r'^CAPS="([^"]+)"', entrypoint, re.M)
    assert caps is not None and tuple(caps.group(1).split()) == route.cap_add
    checked = re.findall(r"\b([A-Z_]+):\d+\b", entrypoint)  # caps_missing's bit table
    assert sorted(checked) == sorted(route.cap_add)


def test_the_shipped_seccomp_profiles_are_the_generators_and_allow_only_what_route_needs(
        ) -> None:
    for path in ("docker/netarena-route-seccomp.json",
                 "scenarios/route/netarena-route-seccomp.json"):
        assert (ROOT / path).read_text() == profile_text(), path
    profile = route_profile()
    allowed = {name for rule in profile["syscalls"] for name in rule["names"]}
    assert profile["defaultAction"] == "SCMP_ACT_ERRNO" and "architectures" not in profile
    assert {"pivot_root", "unshare", "setns", "mount", "umount2", "clone", "clone3",
            "sethostname"} <= allowed
    assert not allowed & {"bpf", "perf_event_open", "io_uring_setup", "ptrace",
                          "process_vm_readv", "kexec_load", "init_module", "add_key",
                          "keyctl", "userfaultfd", "setdomainname", "syslog", "quotactl",
                          "chroot", "reboot", "swapon", "acct", "open_by_handle_at"}


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
                       config={"num_queries": 2, "seed": 3}, network=network, token="t0k")
    document = yaml.safe_load(compose_yaml(spec))
    assert document == compose_document(spec)
    services = document["services"]
    assert set(services) == {f"{app}_operator", "green-agent", "agentbeats-client"}
    green = services["green-agent"]
    assert green.get("cap_drop", []) == list(privileges(app).cap_drop)
    assert green.get("cap_add", []) == list(privileges(app).cap_add)
    assert green.get("security_opt", []) == privileges(app).security_options(
        "./netarena-route-seccomp.json")
    assert not any("unconfined" in opt and "seccomp" in opt for opt in green.get(
        "security_opt", []))
    for name in (f"{app}_operator", "green-agent"):
        assert services[name]["healthcheck"]["test"][:3] == ["CMD", "curl", "-f"]
    client = services["agentbeats-client"]
    assert client["depends_on"] == {"green-agent": {"condition": "service_healthy"},
                                    f"{app}_operator": {"condition": "service_healthy"}}
    assert '"num_queries": 2' in client["command"][client["command"].index("--config") + 1]
    assert f"NETARENA_APP={app}" in services[f"{app}_operator"]["environment"]
    # The token: the green server and the client hold it, the participant does not.
    assert "NETARENA_TOKEN=t0k" in green["environment"]
    assert client["environment"] == ["NETARENA_TOKEN=t0k"]
    assert "t0k" not in json.dumps(services[f"{app}_operator"])
    if network == "shared":
        assert green["network_mode"] == f"service:{app}_operator"
        assert "networks" not in document
    else:
        assert green["networks"] == ["agent-network"]


def test_compose_generates_a_fresh_token_and_writes_routes_profile_beside_the_file(
        tmp_path: Path) -> None:
    def token_of(path: Path) -> str:
        green = yaml.safe_load(path.read_text())["services"]["green-agent"]
        (token,) = [e.split("=", 1)[1] for e in green["environment"]
                    if e.startswith("NETARENA_TOKEN=")]
        return str(token)

    tokens = []
    for i in range(2):
        out = tmp_path / f"run{i}" / "docker-compose.yml"
        result = CliRunner().invoke(cli, ["compose", "route", "--out", str(out)])
        assert result.exit_code == 0, result.output
        tokens.append(token_of(out))
        assert (out.parent / "netarena-route-seccomp.json").read_text() == profile_text()
    assert tokens[0] != tokens[1] and min(len(t) for t in tokens) >= 32
    with pytest.raises(ConfigError, match="needs a token"):
        compose_document(ComposeSpec(app="malt"))


def test_shipped_selfhosted_route_compose_is_the_generators_output() -> None:
    """``scenarios/route/docker-compose.selfhosted.yml`` is written by ``netarena compose``."""
    shipped = ROOT / "scenarios" / "route" / "docker-compose.selfhosted.yml"
    result = CliRunner().invoke(cli, _SELFHOSTED_ARGS)
    assert result.exit_code == 0, result.output
    assert shipped.read_text() == result.stdout


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
    "--client-user", "${NETARENA_CLIENT_USER:-0:0}",
    "--token", "${NETARENA_TOKEN:?set NETARENA_TOKEN to a random secret}"]
"""How ``scenarios/route/docker-compose.selfhosted.yml`` is written (docs/agentbeats.md): the
route scenario's assessment config (no seed), the submitter's AgentBeats id and the green
server's token from the environment, no gate on scores."""


def test_the_default_compose_file_needs_only_what_compose_writes(tmp_path: Path) -> None:
    """``netarena compose route --out docker-compose.yml`` in an empty folder: no script to
    mount (the client is in the image), a client that can write into the folder the engine
    makes for ``./output``, no gate on scores; beside the file only route's seccomp profile,
    which ``--out`` writes."""
    out = tmp_path / "docker-compose.yml"
    result = CliRunner().invoke(cli, ["compose", "route", "-e", "NETARENA_SOLVER=reference",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["docker-compose.yml", PROFILE_FILE]
    client = yaml.safe_load(out.read_text())["services"]["agentbeats-client"]
    assert client["entrypoint"] == ["python", "-m", "netarena.common.launch.smoke_client"]
    assert client["volumes"] == ["./output:/output"] and client["user"] == "0:0"
    assert "--expect-correctness" not in client["command"]
    assert "--agentbeats-id" not in client["command"]
    smoke = CliRunner().invoke(cli, ["compose", "malt", "--client-script", "dev/client.py",
                                     "--expect-correctness", "1",
                                     "--agentbeats-id", "malt_operator=x"])
    assert smoke.exit_code == 0, smoke.output
    client = yaml.safe_load(smoke.stdout)["services"]["agentbeats-client"]
    assert client["entrypoint"] == ["python", "/smoke_client.py"]
    assert client["volumes"][0] == "dev/client.py:/smoke_client.py:ro"
    command = client["command"]
    assert command[command.index("--expect-correctness") + 1] == "1"
    assert command[command.index("--agentbeats-id") + 1] == "malt_operator=x"
