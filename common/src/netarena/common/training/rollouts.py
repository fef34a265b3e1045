"""Trajectories for RL and fine-tuning: rollout files, GRPO datasets, an environment reward.

``collect`` plays queries through a ``Runner`` (so concurrency, timeouts, turn limits and
executors such as Ray are the evaluation's own) and appends one JSON line per finished
episode to a rollout file, flushed as each ends; re-running skips episodes already there.
Each line is one trajectory in the chat format TRL, verl and OpenRLHF read:

* ``prompt``: the first observation as a one-message conversation (GRPO's prompt column);
* ``messages``: the whole episode as a conversation: the first observation, then for each
  turn the agent's action (``assistant``) and what it did (``user``: the command output and
  the new state), ending with the last action (SFT's conversational column);
* ``actions``, ``rewards``, ``valid``: one entry per turn; ``return``: the reward sum;
* the final score: ``correct``, ``safe``, ``turns``, ``error``;
* what rebuilds the episode: ``app``, ``query_id``, ``seed``, ``level``, ``label``,
  ``params`` (a JSON string: the app parameters), and ``agent``.

``grpo_rows`` turns trajectories into one GRPO prompt per decision point, and ``EnvReward``
is a TRL-style reward function that scores a completion by playing it in a fresh episode
(the recorded earlier actions replayed first): the environment, not a model, gives the reward.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from netarena.common.core.app import App, load_app
from netarena.common.core.result_files import open_regular, read_regular
from netarena.common.core.runner import ResultCallback, Runner, TurnRecord
from netarena.common.core.types import Query, QueryResult

__all__ = ["ROLLOUT_FORMAT", "EnvReward", "collect", "grpo_rows", "read_rollouts", "trajectory"]

log = logging.getLogger(__name__)

ROLLOUT_FORMAT = 1
"""Version of the rollout line layout."""


def trajectory(query: Query, result: QueryResult, turns: Sequence[TurnRecord]) -> dict[str, Any]:
    """One rollout line: the episode as a conversation, per-turn rewards, the final score."""
    first = turns[0].observation if turns else query.prompt
    messages = [{"role": "user", "content": first}]
    for i, turn in enumerate(turns):
        if i:
            messages.append({"role": "user", "content": turns[i - 1].step.observation})
        messages.append({"role": "assistant", "content": turn.action})
    rewards = [float(t.step.reward) for t in turns]
    return {
        "prompt": messages[:1],
        "messages": messages,
        "actions": [t.action for t in turns],
        "rewards": rewards,
        "valid": [t.step.valid for t in turns],
        "return": sum(rewards),
        "correct": result.correct,
        "safe": result.safe,
        "turns": result.turns,
        "error": result.error,
        "app": query.app,
        "query_id": query.id,
        "seed": query.seed,
        "level": query.level,
        "label": query.label,
        "params": json.dumps(query.params, sort_keys=True),
        "agent": result.agent,
        "format": ROLLOUT_FORMAT,
    }


def read_rollouts(path: Path) -> list[dict[str, Any]]:
    """The trajectories in a rollout file, skipping a torn last line left by a crash.

    Raises:
        UnsafeResultsFile: ``path`` is a FIFO, symlink or device, not a regular file.
    """
    data = read_regular(path)
    return _parse(data.decode("utf-8", "replace"), path) if data else []


def _parse(text: str, path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            log.warning("skipping torn line in %s", path)
    return records


async def collect(
    runner: Runner,
    queries: Sequence[Query],
    out: Path,
    on_result: ResultCallback | None = None,
) -> list[QueryResult]:
    """Play ``queries`` and append each finished episode's trajectory to ``out``.

    Episodes already in ``out`` are not played again (resume). Episodes the emulator could
    not start (``scored: false``) are not written, so a re-run retries them.

    Returns:
        The results of the episodes played now, in query order.

    Raises:
        UnsafeResultsFile: ``out`` is a FIFO, symlink or device, not a regular file.
        OSError: A trajectory could not be written (raised once the run has finished).
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    with open_regular(out) as sink:  # never a planted FIFO or symlink
        text = sink.read()
        if text and not text.endswith("\n"):  # a torn last line from a crash
            sink.truncate(len(text[: text.rfind("\n") + 1].encode("utf-8", "surrogateescape")))
        done = {r["query_id"] for r in _parse(text, out)}
        todo = [q for q in queries if q.id not in done]
        by_id = {q.id: q for q in todo}
        runner.trajectories = {}
        failures: list[OSError] = []

        def write(result: QueryResult, finished: int, total: int) -> Any:
            kept = runner.trajectories
            turns = kept.pop(result.query_id, []) if kept is not None else []
            if result.scored:
                try:
                    record = trajectory(by_id[result.query_id], result, turns)
                    sink.write(json.dumps(record) + "\n")
                    sink.flush()
                except OSError as exc:
                    failures.append(exc)
            return on_result(result, finished, total) if on_result else None

        results = await runner.run(todo, on_result=write)
    runner.trajectories = None
    if failures:
        raise failures[0]
    return results


def grpo_rows(records: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """One GRPO training prompt per decision point of each trajectory.

    Row ``t`` of an episode holds the conversation up to the observation before action
    ``t`` (``prompt``) and the actions before it (``prefix_actions``), plus what rebuilds the
    episode; ``EnvReward`` replays the prefix and scores the model's completion in it.
    """
    for record in records:
        for t in range(max(1, len(record["actions"]))):
            yield {
                "prompt": record["messages"][: 2 * t + 1],
                "prefix_actions": record["actions"][:t],
                "app": record["app"],
                "query_id": record["query_id"],
                "seed": record["seed"],
                "level": record["level"],
                "label": record["label"],
                "params": record["params"],
            }


@functools.lru_cache(maxsize=16)
def _app(name: str, params: str, runtime_params: str) -> App:
    return load_app(name, {**json.loads(params), **json.loads(runtime_params)})


def _text(completion: Any) -> str:
    """A completion's text: a plain string, or the last message of a conversation."""
    if isinstance(completion, str):
        return completion
    return str(completion[-1]["content"]) if completion else ""


class EnvReward:
    """A TRL-style reward function: the environment's reward for each completion.

    Called as ``reward(prompts=..., completions=..., **dataset_columns)`` with the columns
    of ``grpo_rows``; each completion is played as the next action of a fresh episode of
    the row's query, after replaying its ``prefix_actions``. The reward is that step's
    reward from the app's table (reactive: ``reward_fix`` when it solves the task,
    ``reward_invalid`` for a refused reply, ...; MALT: 100 correct, 0 wrong, -1 unreadable).
    """

    __name__ = "netarena_env_reward"  # TRL logs each reward function under its __name__

    def __init__(self, runtime_params: dict[str, Any] | None = None) -> None:
        """Score with the apps' defaults, or with ``runtime_params`` (``reward_fix``, ...)."""
        self.runtime_params = json.dumps(runtime_params or {}, sort_keys=True)

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        **columns: Any,
    ) -> list[float]:
        """Reward every completion of the batch (rows of ``grpo_rows``)."""
        return [self.reward(_text(c), {k: v[i] for k, v in columns.items()
                                       if isinstance(v, Sequence) and not isinstance(v, str)})
                for i, c in enumerate(completions)]

    def reward(self, action: str, row: dict[str, Any]) -> float:
        """The reward of ``action`` played after ``row["prefix_actions"]`` in ``row``'s query."""
        app = _app(row["app"], row["params"], self.runtime_params)
        query = app.generate(int(row["seed"]), int(row["level"]), row["label"])
        episode = app.open(query)
        try:
            for earlier in row["prefix_actions"]:
                if episode.step(earlier).done:
                    return 0.0  # the recorded prefix already solved it: nothing left to earn
            return float(episode.step(action).reward)
        finally:
            episode.close()
