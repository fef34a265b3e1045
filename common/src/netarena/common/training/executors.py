"""Where episodes play: in this process (``Runner``) or fanned out over a Ray cluster.

``RayRunner`` is a ``Runner`` whose ``play`` sends each query to one of a few Ray actors
(one per CPU of the cluster by default). Each actor holds a warm app, agent and ``Runner``
of its own and plays the query there exactly as the built-in runner would; the driver keeps
everything else of ``Runner.run``: the query order, resume from the results file, results
appended and flushed one query at a time, progress. So a Ray run's results merge exactly as
shards' do, and the same seed gives the same results as ``netarena run`` without Ray.

Agents travel as a spec (``reference``, ``null``, ``litellm:MODEL``, a URL) or as a
picklable factory ``app -> Agent``. An LLM agent's calls are recorded in the actor and sent
back with the result (the driver writes them to the run's recording), and a replay sends
each query's recorded calls along with it, so ``--replay`` works the same on Ray.

With no address, a local cluster is started on loopback only (Ray's single-machine mode)
with usage reporting off, and stopped on ``close()``; ``address="auto"`` or ``ray://...``
joins an existing cluster, which must have NetArena installed (and root for route).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import time
from collections.abc import Callable
from typing import Any

from netarena.common.core.agents import Agent, LiteLLMAgent
from netarena.common.core.app import App, load_app
from netarena.common.core.errors import ConfigError
from netarena.common.core.replay import LLMCall, Tape
from netarena.common.core.runner import RunConfig, Runner, TurnRecord
from netarena.common.core.types import Query, QueryResult, StepResult
from netarena.common.serving.agent_spec import make_agent

__all__ = ["AgentSource", "RayRunner", "build_agent", "start_ray"]

log = logging.getLogger(__name__)

AgentSource = str | Callable[[App], Agent]
"""An agent spec for ``make_agent`` or a picklable ``app -> Agent`` factory."""


def build_agent(source: AgentSource, app: App) -> Agent:
    """The agent ``source`` names, for ``app``."""
    return make_agent(source, app) if isinstance(source, str) else source(app)


class _EpisodeWorker:
    """Lives in a Ray actor: one warm app, agent and runner; plays queries on request."""

    def __init__(
        self, app: str, params: dict[str, Any], agent: AgentSource, config: str, replaying: bool
    ) -> None:
        self.app = load_app(app, params)
        self.agent = build_agent(agent, self.app)
        self.tape: Tape | None = None
        if isinstance(self.agent, LiteLLMAgent):
            self.tape = self.agent.tape = Tape(recording=[] if replaying else None, keep=True)
        self.runner = Runner(self.app, self.agent, RunConfig.model_validate_json(config))
        self.runner.trajectories = {}

    async def play(
        self, query: str, keep_turns: bool, recorded: list[dict[str, Any]] | None
    ) -> dict[str, Any]:
        q = Query.model_validate_json(query)
        if recorded and self.tape is not None:
            self.tape.load(LLMCall.model_validate(c) for c in recorded)
        result = await self.runner.play(q)
        turns = (self.runner.trajectories or {}).pop(q.id, [])
        calls = self.tape.take(q.id) if self.tape is not None else []
        return {
            "result": result.model_dump_json(),
            "turns": [
                {"observation": t.observation, "action": t.action, "step": t.step.model_dump()}
                for t in turns
            ]
            if keep_turns
            else [],
            "calls": [c.model_dump() for c in calls],
            "drift": self.tape.take_drift(q.id) if self.tape is not None else 0,
        }


@functools.cache
def _actor_class() -> Any:
    import ray

    return ray.remote(_EpisodeWorker)


def start_ray(address: str | None = None, num_cpus: int | None = None, **init: Any) -> bool:
    """Join the Ray cluster at ``address``, or start a local one on loopback only.

    Does nothing when Ray is already initialised in this process.

    Args:
        address: ``"auto"``, ``ray://host:port``...; ``None`` starts a local cluster.
        num_cpus: CPUs of a local cluster (default: this machine's).
        **init: More ``ray.init`` arguments (``runtime_env``, ...).

    Returns:
        Whether a local cluster was started here (the caller then shuts it down).

    Raises:
        ConfigError: Ray is not installed.
    """
    if address is None:
        # Ray's single-machine mode binds loopback only. The cluster's processes read this
        # at start; this process read it when it imported Ray, so set that copy too.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
        from ray._private import ray_constants
    except ImportError as exc:
        raise ConfigError("--executor ray needs Ray: pip install 'netarena[ray]'") from exc
    if ray.is_initialized():
        return False
    if address is None:
        ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(
        # "local" always starts a new cluster: None would join any Ray instance found
        # running on this machine (another user's, on a shared host).
        address="local" if address is None else address,
        num_cpus=num_cpus if address is None else None,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
        **init,
    )
    return address is None


class RayRunner(Runner):
    """A ``Runner`` whose episodes play in Ray actors.

    Args:
        app: App name.
        params: App parameters (as for ``load_app``).
        agent: Agent spec or picklable factory (built again in every actor).
        config: How queries are played; ``concurrency`` episodes are in flight at once.
        address: Ray cluster to join; ``None`` starts a local one (stopped on ``close``).
        actors: Actors to spread episodes over (default: the cluster's CPUs, at most
            ``concurrency``).
        num_cpus: CPUs of a local cluster (default: this machine's).
        tape: The driver's tape: recorded calls coming back from actors are written to
            it; a replaying tape's calls are sent out with their queries.
    """

    def __init__(
        self,
        app: str,
        params: dict[str, Any] | None,
        agent: AgentSource,
        config: RunConfig | None = None,
        *,
        address: str | None = None,
        actors: int | None = None,
        num_cpus: int | None = None,
        tape: Tape | None = None,
    ) -> None:
        local_app = load_app(app, params)
        super().__init__(local_app, build_agent(agent, local_app), config)
        self._spec = (app, dict(params or {}), agent)
        self._address, self._num_cpus, self._wanted = address, num_cpus, actors
        self.tape = tape
        self._actors: list[Any] = []
        self._busy: list[int] = []
        self._new_actor: Callable[[], Any] = lambda: None
        self._started = False

    def _ensure_actors(self) -> None:
        if self._actors:
            return
        import ray

        self._started = start_ray(self._address, self._num_cpus)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        count = max(1, min(self._wanted or cpus, self.config.concurrency))
        per_actor = math.ceil(self.config.concurrency / count)
        reserve = 1 if cpus >= count else 0
        actor = _actor_class().options(num_cpus=reserve, max_concurrency=per_actor)
        replaying = self.tape is not None and self.tape.replaying
        config = self.config.model_dump_json()
        self._new_actor = lambda: actor.remote(*self._spec, config, replaying)
        self._actors = [self._new_actor() for _ in range(count)]
        self._busy = [0] * count
        log.info("playing episodes on %d Ray actors (%d episodes each)", count, per_actor)

    async def play(self, query: Query) -> QueryResult:
        """Play ``query`` on the least busy actor.

        If the actor dies (its process crashed or was killed) or Ray fails, the query is
        recorded as unscored with the reason (a resumed run plays it again) and the actor
        is replaced; the run goes on.
        """
        self._ensure_actors()
        index = self._busy.index(min(self._busy))
        self._busy[index] += 1
        recorded = None
        if self.tape is not None and self.tape.replaying:
            recorded = [c.model_dump() for c in self.tape.recorded(query.id)]
        started = time.perf_counter()
        actor = self._actors[index]
        try:
            keep = self.trajectories is not None
            ref = actor.play.remote(query.model_dump_json(), keep, recorded)
            out: dict[str, Any] = await asyncio.wrap_future(ref.future())
        except Exception as exc:  # noqa: BLE001 - an executor failure costs this query only
            log.warning("query %s lost on Ray: %s", query.id, exc)
            if self._actors[index] is actor:  # not yet replaced by another lost episode
                self._replace(index)
            return self._lost(query, exc, time.perf_counter() - started)
        finally:
            self._busy[index] -= 1
        if self.trajectories is not None:
            self.trajectories[query.id] = [
                TurnRecord(t["observation"], t["action"], StepResult.model_validate(t["step"]))
                for t in out["turns"]
            ]
        if self.tape is not None:
            self.tape.drift += out["drift"]
            for call in out["calls"]:
                self.tape.append(LLMCall.model_validate(call), count=False)  # counted in the actor
        return QueryResult.model_validate_json(out["result"])

    def _replace(self, index: int) -> None:
        """Swap the actor at ``index`` for a fresh one (the old one is killed if alive)."""
        import ray

        with contextlib.suppress(Exception):
            ray.kill(self._actors[index])
        self._actors[index] = self._new_actor()

    def _lost(self, query: Query, exc: Exception, elapsed: float) -> QueryResult:
        return QueryResult(
            query_id=query.id, app=query.app, level=query.level, label=query.label,
            agent=self.agent.name, correct=False, safe=False, latency_s=round(elapsed, 6),
            agent_latency_s=0.0, turns=0, scored=False, qualifiers=query.qualifiers,
            error=f"executor: {type(exc).__name__}: {str(exc)[:300]}",
        )

    def close(self) -> None:
        """Stop the actors, and the local cluster if this runner started it."""
        import ray

        for actor in self._actors:
            with contextlib.suppress(Exception):  # already dead
                ray.kill(actor)
        self._actors, self._busy = [], []
        if self._started:
            ray.shutdown()
            self._started = False

    def __enter__(self) -> RayRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
