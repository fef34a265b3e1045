"""``netarena up``: a green and a purple agent in containers, one assessment, nothing left.

On the Docker SDK for Python. ``up(spec)`` uses the images (pulling missing ones unless
told not to), creates a private bridge network (or, on engines that cannot make one, the
shared-namespace mode: the green container joins the purple container's network namespace
and they talk over its loopback), starts the purple container (unless the purple is a URL)
and the green one with exactly the privileges ``netarena.common.privileges`` lists for the
app, waits on their HEALTHCHECKs, and runs the assessment with the client of ``netarena
assess`` (from this process, or, in shared mode, inside the green container), while a
watcher stops it when a container dies. Everything it creates carries the label
``netarena.up=<run id>`` and is removed on every exit path: success, failure, a failed
health check, a crashed container, cancellation (the CLI turns SIGINT and SIGTERM into one).
Errors are ``LaunchError`` subclasses whose messages say what to do.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import json
import logging
import os
import shlex
import socket
import tarfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from netarena.common.assess import TERMINAL, Assessment, assess, write_assessment
from netarena.common.errors import (
    AgentError,
    ConfigError,
    ContainerFailed,
    EngineUnavailable,
    ImageMissing,
    LaunchError,
    PrivilegeRefused,
)
from netarena.common.privileges import privileges

__all__ = ["UpSpec", "UpResult", "up", "connect", "LABEL", "GREEN_PORT", "PURPLE_PORT"]

log = logging.getLogger(__name__)

LABEL = "netarena.up"
"""Label on every container and network ``up`` creates (value: the run id)."""
GREEN_PORT = 9009
"""Where the green agent listens inside its container (AgentBeats' port)."""
PURPLE_PORT = 9019
"""Where the purple agent listens inside its container (the leaderboard manifests' port)."""
_LOG_TAIL = 40
_NETWORKS = ("auto", "bridge", "shared")
_PULL = ("missing", "never", "always")


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
    """``bridge`` (a private network), ``shared`` (one network namespace), or ``auto``."""
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


@dataclass
class UpResult:
    """What one ``up`` did."""

    assessment: Assessment
    network_mode: str
    """``bridge``, ``shared`` or ``host`` (a purple URL on this machine's loopback)."""
    timings_s: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: ``images``, ``healthy``, ``assessment``, ``cleanup``, ``total``."""
    logs: dict[str, str] = field(default_factory=dict)
    """Each container's log (``green``, ``purple``), read before removal."""


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


def _ensure_image(client: Any, image: str, pull: str) -> None:
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
    hint = ("build it with `bash scripts/containers.sh build`"
            if image.split("/")[-1].startswith("netarena-") else "build or pull it")
    return f"image {image} is not on the engine {why}; {hint}"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    return host == "localhost" or host.startswith("127.") or host == "::1"


class _Launch:
    """The containers and network of one run; ``close()`` removes them all."""

    def __init__(self, client: Any, spec: UpSpec, on_event: Callable[[str], None]) -> None:
        self.client, self.spec, self.on_event = client, spec, on_event
        self.run_id = uuid.uuid4().hex[:10]
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
        docker = _sdk()

        spec = self.spec
        if spec.network not in _NETWORKS:
            raise ConfigError(f"--network must be one of {', '.join(_NETWORKS)}")
        if spec.purple_is_url and _loopback(spec.purple):
            return "host"  # the purple is on this machine's loopback: share its network
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
        self.containers["green"] = self._run(
            spec.green_image, "green", ["--host", "0.0.0.0", "--port", str(port),
                                        "--card-url", url],
            # The image's check asks every listening port unless told which: on the host's
            # network that would find other servers.
            environment={"PYTHONUNBUFFERED": "1", "NETARENA_HEALTH_PORT": str(port)},
            cap_add=list(needs.cap_add) or None,
            security_opt=list(needs.security_opt) or None, **extra)
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
        wanted = [*needs.cap_add, *needs.security_opt]
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


async def _watch(launch: _Launch) -> LaunchError:
    """Return (never raise) the error of the first container that stops."""
    while True:
        await asyncio.sleep(2)
        problem = await asyncio.to_thread(launch.crashed)
        if problem is not None:
            return problem


async def _assess_inside(launch: _Launch, purple_url: str, port: int,
                         on_status: Callable[[str, str], None]) -> Assessment:
    """Shared mode: ``netarena assess`` inside the green container (its loopback)."""
    spec, green = launch.spec, launch.containers["green"]
    out = f"/tmp/netarena-up-{launch.run_id}"
    command = ["netarena", "assess", f"http://127.0.0.1:{port}/", "--participant",
               f"{spec.role}={purple_url}", "--config", json.dumps(spec.config),
               "--idle-timeout", str(spec.idle_timeout_s), "--out", out]
    lines: list[str] = []
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def stream() -> None:
        try:
            result = green.exec_run(command, stream=True, demux=True,
                                    environment={"COLUMNS": "1000"})  # one line per status
            buffer = b""
            for _, err_chunk in result.output:
                buffer += err_chunk or b""
                *complete, buffer = buffer.split(b"\n")
                for raw in complete:
                    line = raw.decode("utf-8", "replace")
                    lines.append(line)
                    state, sep, text = line.partition(": ")
                    if sep and state in ("working", "submitted", *TERMINAL):
                        on_status(state, text)
            loop.call_soon_threadsafe(done.set_result, None)
        except Exception as exc:  # noqa: BLE001 - handed to the awaiting task
            loop.call_soon_threadsafe(done.set_exception, exc)

    threading.Thread(target=stream, name="netarena-up-exec", daemon=True).start()
    await done
    archive, _ = await asyncio.to_thread(green.get_archive, f"{out}/agentbeats.json")
    with tarfile.open(fileobj=io.BytesIO(b"".join(archive))) as tar:
        member = tar.extractfile("agentbeats.json")
        if member is None:
            raise AgentError("netarena assess wrote no agentbeats.json: " + "\n".join(lines[-5:]))
        doc = json.loads(member.read())
    run = Assessment(dict(doc["participants"]), state=doc["status"], records=doc["results"])
    run.messages = [line for line in lines if line.strip()]
    return run


async def _assessment(launch: _Launch, mode: str, purple_url: str, port: int,
                      on_status: Callable[[str, str], None]) -> Assessment:
    spec = launch.spec
    if mode == "shared":
        return await _assess_inside(launch, purple_url, port, on_status)
    if mode == "bridge":
        green = launch.containers["green"]
        await asyncio.to_thread(green.reload)
        binding = green.attrs["NetworkSettings"]["Ports"][f"{port}/tcp"][0]
        port = int(binding["HostPort"])
    return await assess(f"http://127.0.0.1:{port}/", {spec.role: purple_url}, spec.config,
                        idle_timeout_s=spec.idle_timeout_s, on_status=on_status)


async def up(
    spec: UpSpec,
    *,
    out: Path | None = None,
    on_status: Callable[[str, str], None] = lambda state, text: None,
    on_event: Callable[[str], None] = lambda text: None,
) -> UpResult:
    """Run one assessment with the green (and purple) agent in containers.

    Args:
        spec: What to run.
        out: Where to write ``results.jsonl``, ``summary.json``, ``agentbeats.json`` (as
            ``netarena assess --out``) and each container's log.
        on_status: Called with each status update of the green agent (progress).
        on_event: Called with each step of the launch (image, container, health).

    Returns:
        The assessment, the network mode, the time per phase and the containers' logs.

    Raises:
        ConfigError: A bad spec.
        LaunchError: No engine, an image missing, a privilege refused, a container that
            crashed or never became healthy (with its log tail).
        AgentError: The green agent could not be reached or broke the protocol.
    """
    started = time.monotonic()
    client = await asyncio.to_thread(connect, spec.docker_host)
    launch = _Launch(client, spec, on_event)
    timings: dict[str, float] = {}
    mode = "?"
    try:
        images = [spec.green_image] + ([] if spec.purple_is_url else [spec.purple])
        for image in images:
            await asyncio.to_thread(_ensure_image, client, image, spec.pull)
        timings["images"] = time.monotonic() - started
        mode = await asyncio.to_thread(launch.choose_network)
        purple_url = await asyncio.to_thread(launch.start_purple, mode)
        _, port = await asyncio.to_thread(launch.start_green, mode)
        await asyncio.to_thread(launch.wait_healthy)
        timings["healthy"] = time.monotonic() - started - timings["images"]
        mark = time.monotonic()
        watcher = asyncio.create_task(_watch(launch))
        evaluation = asyncio.create_task(_assessment(launch, mode, purple_url, port, on_status))
        try:
            await asyncio.wait({watcher, evaluation}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watcher.cancel()
            if not evaluation.done():
                evaluation.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await evaluation
        if not evaluation.done() or evaluation.cancelled():
            raise watcher.result()
        if evaluation.exception() is not None:  # a dead container explains a broken stream
            crash = await asyncio.to_thread(launch.crashed)
            if crash is not None:
                raise crash from evaluation.exception()
        run = evaluation.result()
        timings["assessment"] = time.monotonic() - mark
    finally:
        mark = time.monotonic()
        launch.close()  # synchronous: it must finish even when this task was cancelled
        timings["cleanup"] = time.monotonic() - mark
        timings["total"] = time.monotonic() - started
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            for role, text in launch.logs.items():
                (out / f"{role}.log").write_text(text + "\n", encoding="utf-8")
    if out is not None:
        write_assessment(run, out)
    log.info("netarena up %s: %s", spec.app, shlex.join(f"{k}={v:.1f}s" for k, v in
                                                         timings.items()))
    return UpResult(run, mode, timings, launch.logs)
