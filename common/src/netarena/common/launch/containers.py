"""The containers and network of one ``netarena up`` run, on the Docker SDK for Python.

``Launch`` starts the purple container (unless the purple is a URL) and the green one with
exactly the privileges ``netarena.common.launch.privileges`` lists for the app, on a private bridge
network or, where the engine cannot make one, in the purple container's network namespace;
waits on their HEALTHCHECKs (each asked on the port it was started on); tells when one
stops; and removes everything on ``close()``, keeping each container's log. Everything it
creates carries the label ``netarena.up=<run id>``. ``netarena.common.launch.launcher`` drives it.
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from netarena.common.core.errors import (
    ConfigError,
    ContainerFailed,
    EngineUnavailable,
    ImageMissing,
    LaunchError,
    PrivilegeRefused,
)
from netarena.common.launch.privileges import privileges

__all__ = ["UpSpec", "Launch", "connect", "ensure_image", "LABEL", "GREEN_PORT", "PURPLE_PORT"]

log = logging.getLogger(__name__)

LABEL = "netarena.up"
"""Label on every container and network ``up`` creates (value: the run id)."""
GREEN_PORT = 9009
"""Where the green agent listens inside its container (AgentBeats' port)."""
PURPLE_PORT = 9019
"""Where the purple agent listens inside its container (the leaderboard manifests' port)."""
_LOG_TAIL = 40
_NETWORKS = ("auto", "bridge", "shared", "host")


@dataclass(frozen=True)
class UpSpec:
    """One ``netarena up`` run."""

    app: str
    """``malt``, ``route`` or ``k8s``."""
    purple: str
    """The purple agent: an image to start, or the URL of a running A2A agent."""
    green: str | None = None
    """The green image (default ``netarena-<app>:latest``)."""
    config: dict[str, Any] = field(default_factory=dict)
    """The assessment config (``num_queries``, ``seed``, ...)."""
    purple_env: dict[str, str] = field(default_factory=dict)
    """Environment of the purple container (``NETARENA_SOLVER``, ``MODEL_NAME``, keys)."""
    network: str = "auto"
    """``bridge``, ``shared`` (one network namespace), ``auto`` (bridge, else shared), or
    ``host`` (only when asked: the green container on this machine's loopback)."""
    pull: str = "missing"
    """Pull images: ``missing`` ones, ``never``, or ``always``."""
    health_timeout_s: float = 180.0
    """Longest wait for both containers to become healthy."""
    idle_timeout_s: float = 900.0
    """Longest wait for the green agent's next event during the assessment."""
    docker_host: str | None = None
    """The engine's address (default: ``DOCKER_HOST``, else the local socket)."""

    @property
    def green_image(self) -> str:
        """The green image to run."""
        return self.green or f"netarena-{self.app}:latest"

    @property
    def purple_is_url(self) -> bool:
        """Whether the purple agent is already running at a URL (no purple container)."""
        return self.purple.startswith(("http://", "https://"))

    @property
    def role(self) -> str:
        """The participant's role, as in the leaderboards (``malt_operator``)."""
        return f"{self.app}_operator"


def _sdk() -> Any:
    """The Docker SDK for Python (an optional dependency: ``netarena[docker]``)."""
    return importlib.import_module("docker")


def connect(docker_host: str | None = None, timeout_s: float = 60.0) -> Any:
    """A Docker client that has answered a ping.

    Raises:
        EngineUnavailable: The SDK is missing or no engine answers at the address.
    """
    try:
        import requests

        docker = _sdk()
    except ImportError as exc:
        raise LaunchError("netarena up needs the Docker SDK for Python: "
                          "pip install 'netarena[docker]'") from exc
    where = docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.DockerClient(base_url=where, timeout=int(timeout_s))
        client.ping()
    except (docker.errors.DockerException, requests.RequestException) as exc:
        reason = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        raise EngineUnavailable(
            f"no Docker engine reachable at {where} ({reason}); start one (dockerd, Docker "
            "Desktop) or point DOCKER_HOST at it") from exc
    return client


def ensure_image(client: Any, image: str, pull: str) -> None:
    """Make ``image`` present on the engine: use it, or pull it (``missing``/``always``).

    Raises:
        ImageMissing: Not present and ``pull`` is ``never``, or the pull failed.
    """
    docker = _sdk()
    if pull != "always":
        try:
            client.images.get(image)
            return
        except docker.errors.ImageNotFound:
            if pull == "never":
                raise ImageMissing(_missing(image, "and --pull never forbids pulling")) from None
        except docker.errors.APIError as exc:
            raise LaunchError(f"the engine could not inspect image {image}: {exc}") from exc
    repository, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
    try:
        client.images.pull(repository or image, tag=tag or "latest")
    except docker.errors.APIError as exc:
        raise ImageMissing(_missing(image, f"and could not be pulled: {exc.explanation or exc}")
                           ) from exc


def _missing(image: str, why: str) -> str:
    hint = ("build it with `bash scripts/containers.sh build` (with no image registry "
            "reachable, first `sudo bash docker/make-base-image.sh`, then "
            "`BASE_IMAGE=netarena-base:bookworm bash scripts/containers.sh build`)"
            if image.split("/")[-1].startswith("netarena-") else "build or pull it")
    return f"image {image} is not on the engine {why}; {hint}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


class Launch:
    """The containers and network of one run; ``close()`` removes them all."""

    def __init__(self, client: Any, spec: UpSpec, on_event: Callable[[str], None]) -> None:
        self.client, self.spec, self.on_event = client, spec, on_event
        self.run_id = uuid.uuid4().hex[:10]
        self.token = secrets.token_hex(24)
        """The green server's bearer token (only ``up``'s client holds it)."""
        self.name = f"netarena-up-{self.run_id}"
        self.containers: dict[str, Any] = {}
        self.network: Any = None
        self.logs: dict[str, str] = {}
        # A creation still running in a worker thread when the run is cancelled must not
        # outlive close(): both take the lock, and nothing is created once it is closed.
        self._lock = threading.Lock()
        self._closed = False

    # -- starting ---------------------------------------------------------------------------

    def choose_network(self) -> str:
        """Create the run's network; return the mode: ``bridge``, ``shared`` or ``host``."""
        docker = _sdk()

        spec = self.spec
        if spec.network not in _NETWORKS:
            raise ConfigError(f"--network must be one of {', '.join(_NETWORKS)}")
        if spec.network == "host" and not spec.purple_is_url:
            raise ConfigError("--network host is for a purple URL on this machine")
        if spec.network == "host":
            return "host"
        if spec.purple_is_url and _loopback(spec.purple):
            raise ConfigError(f"the purple URL {spec.purple} is on this machine's loopback, "
                              "which a container cannot reach: pass --network host (the green "
                              "container then listens on this machine's 127.0.0.1)")
        if spec.purple_is_url and spec.network == "shared":
            raise ConfigError("--network shared needs a purple image, not a URL")
        if spec.network in ("auto", "bridge"):
            try:
                with self._lock:
                    self._check_open()
                    self.network = self.client.networks.create(
                        self.name, driver="bridge", labels={LABEL: self.run_id})
                return "bridge"
            except docker.errors.APIError as exc:
                if spec.network == "bridge" or spec.purple_is_url:
                    raise LaunchError(f"the engine cannot create a bridge network: {exc}; "
                                      "try --network shared") from exc
                self.on_event(f"no bridge network on this engine ({exc.explanation}); "
                              "sharing the purple container's network namespace")
        return "shared"

    def start_purple(self, mode: str) -> str:
        """Start the purple container (unless it is a URL); return the URL the green uses."""
        spec = self.spec
        if spec.purple_is_url:
            return spec.purple
        host = f"{self.name}-purple" if mode == "bridge" else "127.0.0.1"
        url = f"http://{host}:{PURPLE_PORT}/"
        network = {"network": self.network.name} if mode == "bridge" else {"network_mode": "none"}
        self.containers["purple"] = self._run(
            spec.purple, "purple", ["--host", "0.0.0.0", "--port", str(PURPLE_PORT),
                                    "--card-url", url],
            environment={"NETARENA_APP": spec.app, "PYTHONUNBUFFERED": "1",
                         "NETARENA_HEALTH_PORT": str(PURPLE_PORT), **spec.purple_env},
            **network)
        return url

    def start_green(self, mode: str) -> tuple[str, int]:
        """Start the green container; return its card URL and its port."""
        spec = self.spec
        port = _free_port() if mode == "host" else GREEN_PORT
        extra: dict[str, Any]
        if mode == "bridge":
            url = f"http://{self.name}-green:{port}/"
            extra = {"network": self.network.name, "ports": {f"{port}/tcp": ("127.0.0.1", None)}}
        elif mode == "shared":
            url = f"http://127.0.0.1:{port}/"
            extra = {"network_mode": f"container:{self.containers['purple'].id}"}
        else:
            url = f"http://127.0.0.1:{port}/"
            extra = {"network_mode": "host"}
        needs = privileges(spec.app)
        listen = "127.0.0.1" if mode == "host" else "0.0.0.0"
        self.containers["green"] = self._run(
            spec.green_image, "green", ["--host", listen, "--port", str(port),
                                        "--card-url", url],
            # The image's check asks every listening port unless told which (on the host's
            # network: other servers). The token keeps the purple container off the server.
            environment={"PYTHONUNBUFFERED": "1", "NETARENA_HEALTH_PORT": str(port),
                         "NETARENA_TOKEN": self.token},
            cap_drop=list(needs.cap_drop) or None, cap_add=list(needs.cap_add) or None,
            security_opt=needs.engine_security_options() or None, **extra)
        return url, port

    def _run(self, image: str, role: str, command: list[str], **options: Any) -> Any:
        docker = _sdk()

        name = f"{self.name}-{role}"
        health = self._healthcheck(image, command)
        with self._lock:
            self._check_open()
            try:
                container = self.client.containers.create(
                    image, command, name=name, detach=True, labels={LABEL: self.run_id},
                    healthcheck=health, **options)
            except docker.errors.APIError as exc:
                self._refused(exc, role)
                raise LaunchError(f"the engine could not create the {role} container "
                                  f"({image}): {exc.explanation or exc}") from exc
            self.containers[role] = container  # removed by close() even if it never starts
        try:
            container.start()
        except docker.errors.APIError as exc:
            self._refused(exc, role)
            raise LaunchError(f"the engine could not start the {role} container "
                              f"({image}): {exc.explanation or exc}") from exc
        self.on_event(f"started {role} container {name} ({image})")
        return container

    def _check_open(self) -> None:
        if self._closed:
            raise LaunchError("the run was stopped")

    def _refused(self, exc: Exception, role: str) -> None:
        needs = privileges(self.spec.app)
        text = str(exc).lower()
        wanted = [*needs.cap_add, *needs.security_options()]
        named = [w for w in wanted if w.split("=")[0].lower() in text]
        if named or (wanted and any(w in text for w in ("capabilit", "privilege", "seccomp",
                                                        "apparmor", "not permitted"))):
            raise PrivilegeRefused(
                f"the engine refused the {role} container's privileges "
                f"({', '.join(named or wanted)}): {exc}; {self.spec.app} needs "
                f"{' '.join(needs.docker_flags())} (see docs/agentbeats.md, "
                "\"Route's privileges\")") from exc

    def _healthcheck(self, image: str, command: list[str]) -> dict[str, Any]:
        """Poll every second: the image's own check, or the agent card when it has none."""
        config = self.client.images.get(image).attrs.get("Config") or {}
        second = 1_000_000_000
        timing = {"interval": second, "timeout": 3 * second, "retries": 3,
                  "start_period": int(self.spec.health_timeout_s * second)}
        if (config.get("Healthcheck") or {}).get("Test"):
            return {"test": [], **timing}  # an empty test inherits the image's
        port = command[command.index("--port") + 1]
        card = f"http://127.0.0.1:{port}/.well-known/agent-card.json"
        return {"test": ["CMD-SHELL", f"curl -fsS -m 2 -o /dev/null {card} || "
                         f"wget -q -T 2 -O /dev/null {card}"], **timing}

    # -- waiting and watching ---------------------------------------------------------------

    def tail(self, role: str, lines: int = _LOG_TAIL) -> str:
        """The last log lines of a container (empty when it cannot be read)."""
        docker = _sdk()

        try:
            raw = self.containers[role].logs(tail=lines)
        except (docker.errors.APIError, KeyError):
            return ""
        return bytes(raw).decode("utf-8", "replace").rstrip()

    def state(self, role: str) -> tuple[str, str]:
        """(status, health) of a container: ``running``/``exited``..., ``healthy``/...."""
        container = self.containers[role]
        container.reload()
        state = container.attrs.get("State") or {}
        return state.get("Status", "unknown"), (state.get("Health") or {}).get("Status", "none")

    def failure(self, roles: str | list[str], what: str) -> LaunchError:
        """The error for containers that failed, with their log tails (named privileges)."""
        parts, refused = [], False
        for role in [roles] if isinstance(roles, str) else roles:
            tail = self.tail(role)
            image = self.containers[role].attrs.get("Config", {}).get("Image", "?")
            parts.append(f"the {role} container ({image}) {what}; its last log lines:\n"
                         f"{tail or '(none)'}")
            refused |= any(line.startswith("netarena: ") and "--cap-add" in line
                           for line in tail.splitlines())
        return (PrivilegeRefused if refused else ContainerFailed)("\n\n".join(parts))

    def wait_healthy(self) -> None:
        """Block until every container is healthy; raise with its log tail otherwise."""
        deadline = time.monotonic() + self.spec.health_timeout_s
        waiting = set(self.containers)
        while waiting:
            for role in sorted(waiting):
                status, health = self.state(role)
                if status in ("exited", "dead"):
                    code = self.containers[role].attrs["State"].get("ExitCode")
                    raise self.failure(role, f"exited with code {code} before becoming healthy")
                if health == "unhealthy":
                    raise self.failure(role, "is unhealthy")
                if health == "healthy":
                    waiting.discard(role)
                    self.on_event(f"{role} container healthy")
            if waiting and time.monotonic() > deadline:
                raise self.failure(sorted(waiting), f"did not become healthy within "
                                                    f"{self.spec.health_timeout_s:g}s")
            if waiting:
                time.sleep(0.5)

    def crashed(self) -> LaunchError | None:
        """The error for the first container no longer running, if any."""
        for role in self.containers:
            status, _ = self.state(role)
            if status != "running":
                code = self.containers[role].attrs["State"].get("ExitCode")
                return self.failure(role, f"stopped ({status}, exit code {code}) during the "
                                          "assessment")
        return None

    # -- removing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Keep each container's log, then remove every container and the network."""
        docker = _sdk()

        with self._lock:
            self._closed = True
        for role, container in list(self.containers.items()):
            self.logs[role] = self.tail(role, lines=2000)
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                log.warning("could not remove container %s: %s", container.name, exc)
        self.containers.clear()
        if self.network is not None:
            try:
                self.network.remove()
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                log.warning("could not remove network %s: %s", self.network.name, exc)
            self.network = None
