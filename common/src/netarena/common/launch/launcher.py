"""``netarena up``: a green and a purple agent in containers, one assessment, nothing left.

On the Docker SDK for Python. ``up(spec)`` uses the images (pulling missing ones unless
told not to), creates a private bridge network (or, on engines that cannot make one, the
shared-namespace mode: the green container joins the purple container's network namespace
and they talk over its loopback; the host's network only when asked), starts the purple
container (unless the purple is a URL) and the green one with exactly the privileges
``netarena.common.launch.privileges`` lists for the app and a fresh bearer token only this
client holds, waits on their HEALTHCHECKs, and runs the assessment with the client of ``netarena
assess`` (from this process, or, in shared mode, inside the green container), while a
watcher stops it when a container dies. Everything it creates carries the label
``netarena.up=<run id>`` and is removed on every exit path: success, failure, a failed
health check, a crashed container, cancellation (the CLI turns SIGINT and SIGTERM into one).
Errors are ``LaunchError`` subclasses whose messages say what to do. The containers
themselves (start, health, removal) are ``netarena.common.launch.containers``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import shlex
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from netarena.common.core.errors import AgentError, LaunchError
from netarena.common.launch.containers import (
    GREEN_PORT,
    LABEL,
    PURPLE_PORT,
    Launch,
    UpSpec,
    connect,
    ensure_image,
)
from netarena.common.serving.assess import TERMINAL, Assessment, assess, write_assessment
from netarena.common.serving.stream_bounds import StreamLimits

__all__ = ["UpSpec", "UpResult", "up", "connect", "LABEL", "GREEN_PORT", "PURPLE_PORT"]

log = logging.getLogger(__name__)


@dataclass
class UpResult:
    """What one ``up`` did."""

    assessment: Assessment
    network_mode: str
    """``bridge``, ``shared`` or ``host`` (asked for: a purple URL on this machine)."""
    timings_s: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: ``images``, ``healthy``, ``assessment``, ``cleanup``, ``total``."""
    logs: dict[str, str] = field(default_factory=dict)
    """Each container's log (``green``, ``purple``), read before removal."""


def _limits(spec: UpSpec) -> StreamLimits:
    """The client's bounds: wide, but bounds all the same.

    The green agent is the image ``up`` started; a run of 100,000 queries returns ~230 MB
    of records.
    """
    size = 512 << 20
    return StreamLimits(max_event_bytes=size, max_artifact_bytes=size,
                        max_stream_bytes=2 * size, max_parsed_bytes=8 * size,
                        idle_timeout_s=spec.idle_timeout_s)


async def _watch(launch: Launch) -> LaunchError:
    """Return (never raise) the error of the first container that stops."""
    while True:
        await asyncio.sleep(2)
        problem = await asyncio.to_thread(launch.crashed)
        if problem is not None:
            return problem


async def _assess_inside(launch: Launch, purple_url: str, port: int,
                         on_status: Callable[[str, str], None]) -> Assessment:
    """Shared mode: ``netarena assess`` inside the green container (its loopback)."""
    spec, green = launch.spec, launch.containers["green"]
    out = f"/tmp/netarena-up-{launch.run_id}"
    limits = _limits(spec)
    command = ["netarena", "assess", f"http://127.0.0.1:{port}/", "--participant",
               f"{spec.role}={purple_url}", "--config", json.dumps(spec.config),
               "--idle-timeout", str(limits.idle_timeout_s),
               "--max-event-mb", str(limits.max_event_bytes >> 20),
               "--max-artifact-mb", str(limits.max_artifact_bytes >> 20),
               "--max-stream-mb", str(limits.max_stream_bytes >> 20),
               "--max-parsed-mb", str(limits.max_parsed_bytes >> 20), "--out", out]
    lines: list[str] = []
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def stream() -> None:
        try:
            result = green.exec_run(command, stream=True, demux=True,  # one line per status
                                    environment={"COLUMNS": "1000",
                                                 "NETARENA_TOKEN": launch.token})
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


async def _assessment(launch: Launch, mode: str, purple_url: str, port: int,
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
                        limits=_limits(spec), token=launch.token, on_status=on_status)


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
    launch = Launch(client, spec, on_event)
    timings: dict[str, float] = {}
    mode = "?"
    try:
        images = [spec.green_image] + ([] if spec.purple_is_url else [spec.purple])
        for image in images:
            await asyncio.to_thread(ensure_image, client, image, spec.pull)
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
