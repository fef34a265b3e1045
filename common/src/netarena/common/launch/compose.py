"""The leaderboard-shaped compose file, for users who run compose themselves.

The shape of an AgentBeats (v1) leaderboard run: the purple participant, the green agent and
a client, every container healthchecked with ``curl`` against its agent card, the client
starting once both are healthy and sending one assessment request over A2A 0.3
``message/stream`` (``netarena.common.launch.smoke_client``, which every NetArena image
holds), writing the leaderboard's results file into the mounted output folder.
The green service gets the privileges ``netarena.common.launch.privileges`` lists for the app
(route's capabilities and seccomp profile, which the leaderboard's generated files cannot
express): this is how route runs on a self-hosted runner (docs/agentbeats.md, "Route on a
self-hosted runner"). The green server requires a bearer token that only it and the client
hold, so the participant's container, on the same network, cannot use it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from netarena.common.core.errors import ConfigError
from netarena.common.launch.privileges import privileges
from netarena.common.launch.seccomp import PROFILE_FILE

__all__ = ["ComposeSpec", "compose_document", "compose_yaml"]

_GREEN_PORT, _PURPLE_PORT = 9009, 9019


@dataclass(frozen=True)
class ComposeSpec:
    """One leaderboard-shaped compose file."""

    app: str
    """``malt``, ``route`` or ``k8s``."""
    purple: str = "netarena-purple:latest"
    """The purple participant's image."""
    green: str = ""
    """The green image (default ``netarena-<app>:latest``)."""
    purple_env: dict[str, str] = field(default_factory=dict)
    """Environment of the purple service (``NETARENA_SOLVER``, ``MODEL_NAME``...)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The assessment config the client sends."""
    network: str = "bridge"
    """``bridge``: a compose network with service names, as the leaderboard's; ``shared``:
    the green and the client join the purple service's network namespace (engines without
    a bridge)."""
    client_out: str = "./output"
    """Host folder mounted as the client's ``/output`` (``results.json`` lands there)."""
    client_script: str = ""
    """Host path of a client script to mount and run instead of the image's
    ``netarena.common.launch.smoke_client`` (a development copy); empty: the image's."""
    client_image: str = ""
    """Image of the client service (a NetArena image; default: ``purple``)."""
    client_user: str = "0:0"
    """``uid:gid`` the client runs as: root by default, so it can write into an output
    folder the engine created (the file then gets the folder's owner); empty: the image's."""
    expect_correctness: float | None = None
    """Smoke checks: the client exits non-zero below this correctness; ``None`` (leaderboards)
    never gates on scores."""
    agentbeats_ids: dict[str, str] = field(default_factory=dict)
    """Role or component → AgentBeats id, written as the results file's ``participants``
    (``${VAR}`` references are left for compose to fill in)."""
    token: str = ""
    """The green server's bearer token, given to the green service and the client only
    (``netarena compose`` generates one; the participant's container never sees it)."""
    seccomp_file: str = f"./{PROFILE_FILE}"
    """Where the compose file finds the route container's seccomp profile (compose reads
    it relative to the compose file; Debian's docker-compose 1.x, to its working
    directory: give an absolute path there)."""


def _health(port: int) -> dict[str, Any]:
    return {"test": ["CMD", "curl", "-f", f"http://localhost:{port}/.well-known/agent-card.json"],
            "interval": "2s", "timeout": "3s", "retries": 30, "start_period": "30s"}


def compose_document(spec: ComposeSpec) -> dict[str, Any]:
    """The compose file as a mapping (``compose_yaml`` renders it).

    Raises:
        ConfigError: An unknown network mode.
    """
    if spec.network not in ("bridge", "shared"):
        raise ConfigError("network must be bridge or shared")
    if not spec.token:
        raise ConfigError("the green server needs a token (netarena compose generates one)")
    purple_name, role = f"{spec.app}_operator", f"{spec.app}_operator"
    if spec.network == "shared":
        green_url, purple_url = f"http://127.0.0.1:{_GREEN_PORT}", f"http://127.0.0.1:{_PURPLE_PORT}"
        purple_net: dict[str, Any] = {"network_mode": "none"}
        joined: dict[str, Any] = {"network_mode": f"service:{purple_name}"}
    else:
        green_url, purple_url = f"http://green-agent:{_GREEN_PORT}", f"http://{purple_name}:{_PURPLE_PORT}"
        purple_net = {"networks": ["agent-network"]}
        joined = {"networks": ["agent-network"]}
    environment = {"NETARENA_APP": spec.app, "PYTHONUNBUFFERED": "1", **spec.purple_env}
    services: dict[str, Any] = {
        purple_name: {
            "image": spec.purple,
            "command": ["--host", "0.0.0.0", "--port", str(_PURPLE_PORT), "--card-url", purple_url],
            "environment": [f"{k}={v}" for k, v in environment.items()],
            **purple_net, "healthcheck": _health(_PURPLE_PORT)},
        "green-agent": {
            "image": spec.green or f"netarena-{spec.app}:latest",
            "command": ["--host", "0.0.0.0", "--port", str(_GREEN_PORT), "--card-url", green_url],
            "environment": ["PYTHONUNBUFFERED=1", f"NETARENA_TOKEN={spec.token}"], **joined,
            **privileges(spec.app).compose(spec.seccomp_file),
            "healthcheck": _health(_GREEN_PORT),
            "depends_on": {purple_name: {"condition": "service_healthy"}}},
        "agentbeats-client": {
            "image": spec.client_image or spec.purple,
            "entrypoint": (["python", "/smoke_client.py"] if spec.client_script
                           else ["python", "-m", "netarena.common.launch.smoke_client"]),
            "command": ["--green", green_url, "--purple", purple_url, "--role", role,
                        "--config", _json(spec.config),
                        *(arg for key, value in spec.agentbeats_ids.items()
                          for arg in ("--agentbeats-id", f"{key}={value}")),
                        *(["--expect-correctness", f"{spec.expect_correctness:g}"]
                          if spec.expect_correctness is not None else []),
                        "--out", "/output/results.json"],
            "environment": [f"NETARENA_TOKEN={spec.token}"],
            **({"user": spec.client_user} if spec.client_user else {}),
            "volumes": [*([f"{spec.client_script}:/smoke_client.py:ro"]
                          if spec.client_script else []),
                        f"{spec.client_out}:/output"],
            **{key: list(value) if isinstance(value, list) else value
               for key, value in joined.items()},
            "depends_on": {"green-agent": {"condition": "service_healthy"},
                           purple_name: {"condition": "service_healthy"}}},
    }
    document: dict[str, Any] = {"version": "2.4", "services": services}
    if spec.network == "bridge":
        document["networks"] = {"agent-network": {"driver": "bridge"}}
    return document


def _json(config: dict[str, Any]) -> str:
    import json

    return json.dumps(config, separators=(", ", ": "))


def compose_yaml(spec: ComposeSpec) -> str:
    """The compose file, with a header saying what generated it."""
    header = (f"# Generated by `netarena compose {spec.app}`: the leaderboard's compose shape "
              f"for NetArena {spec.app}.\n")
    body: str = yaml.safe_dump(compose_document(spec), sort_keys=False, width=100,
                                default_flow_style=None)
    return header + body
