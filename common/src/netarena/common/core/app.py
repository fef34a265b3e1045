"""The two contracts every application implements, and the app registry.

An ``App`` generates queries (pure and seeded) and opens an ``Episode`` for one query.
An ``Episode`` is a gym-like environment: ``observe`` / ``step`` / ``score`` / ``close``.
Turn limits, timeouts and error capture are *not* here: they belong to the runner.
"""

from __future__ import annotations

import abc
import hashlib
import json
import random
from collections.abc import Sequence
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from netarena.common.core.errors import ConfigError, EpisodeClosed
from netarena.common.core.evidence import AuditCheck, AuditObject
from netarena.common.core.types import Kind, Query, Score, StepResult, query_id

if TYPE_CHECKING:
    from netarena.common.core.agents import Agent, Baseline

__all__ = [
    "App", "AppConfig", "Episode", "PromptStyle", "app_names", "find_baseline", "load_app",
    "style_sections",
]

PromptStyle = Literal["zeroshot_base", "fewshot_base", "zeroshot_cot", "fewshot_cot"]
"""How complete prompts are built: with or without worked examples and a reasoning cue.

The names are the reference NetArena's ``prompt_type`` values, kept for drop-in use."""


def style_sections(style: str, examples: str, reasoning: str, direct: str = "") -> list[str]:
    """The sections ``style`` adds to a prompt, in order (every app reads styles here).

    The worked ``examples`` for few-shot styles; the ``reasoning`` cue for chain-of-thought
    styles, ``direct`` (if any) for the others.
    """
    cue = reasoning if style.endswith("cot") else direct
    return ([examples] if style.startswith("fewshot") else []) + ([cue] if cue else [])


class AppConfig(BaseModel):
    """Base of each app's own parameters (topology size, backend, ...).

    Unknown keys are rejected, so typos in an evaluation request fail loudly.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt_style: PromptStyle = "zeroshot_base"
    """Prompt variant: few-shot examples and/or a chain-of-thought cue."""

    runtime_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields that change how episodes run (timeouts, rewards, worker counts) but not which
    query is generated: left out of ``App.params()``, so they never change a query id."""
    operator_fields: ClassVar[frozenset[str]] = frozenset()
    """Fields only whoever runs the evaluator may set (``netarena run --param``), never a
    remote evaluation request: they name files, hosts or code on the evaluator's machine
    (a kubeconfig, a module to import), which a requester must not choose."""


class Episode(abc.ABC):
    """One query being played out against a live emulator.

    Subclasses implement ``_observe``, ``_step``, ``_score`` and ``_close``; this base
    enforces the lifecycle (``EpisodeClosed`` after close, idempotent close, context manager).
    """

    def __init__(self, query: Query) -> None:
        self.query = query
        self._closed = False

    def observe(self) -> str:
        """Return the text the agent should see now (the prompt plus current state)."""
        self._check_open()
        return self._observe()

    def step(self, action: str) -> StepResult:
        """Apply one agent action (code, command, ...) and report what it did.

        An unparseable or forbidden action is not an exception: it yields
        ``StepResult(valid=False)`` with the reason as observation.
        """
        self._check_open()
        return self._step(action)

    def score(self) -> Score:
        """Judge the episode: correctness of the final state and safety of the path."""
        self._check_open()
        return self._score()

    def close(self) -> None:
        """Release every emulator resource. Idempotent; safe after errors."""
        if self._closed:
            return
        self._closed = True
        self._close()

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise EpisodeClosed(f"episode {self.query.id} is closed")

    @abc.abstractmethod
    def _observe(self) -> str: ...

    @abc.abstractmethod
    def _step(self, action: str) -> StepResult: ...

    @abc.abstractmethod
    def _score(self) -> Score: ...

    def _close(self) -> None:  # noqa: B027 - optional hook
        """Release resources; override when the episode holds any."""


class App(abc.ABC):
    """An application of the benchmark: a query generator plus an episode factory."""

    name: ClassVar[str]
    """Registry name (``malt``, ``route``, ``k8s``)."""
    kind: ClassVar[Kind]
    """``constructive`` (one-turn answer) or ``reactive`` (multi-turn troubleshooting)."""
    labels: ClassVar[dict[int, tuple[str, ...]]]
    """Labels per level; the runner cycles through them."""
    config_model: ClassVar[type[AppConfig]] = AppConfig
    """The app's parameters; request keys are validated against it."""
    default_max_turns: ClassVar[int] = 1
    """Turn budget when the request does not set one."""
    label_sets: ClassVar[dict[str, tuple[str, ...]]] = {}
    """Named label subsets a plan may ask for by name (malt's ``original``: the original
    NetArena's task space), expanded by ``expand_labels``."""
    opt_in_labels: ClassVar[frozenset[str]] = frozenset()
    """Labels that run only when a plan names them (or a label set holding them): a
    query drawn without a label, or a plan without labels, never gets one (route's
    dynamic-routing labels, which need FRR)."""
    max_concurrency: ClassVar[int | None] = None
    """Most episodes the app runs at once, when measured to be limited (route: live
    networks on a 2-core machine); a run asking for more is rejected."""
    legacy_keys: ClassVar[dict[str, str]] = {}
    """Reference-NetArena request keys mapped to ``config_model`` fields (``num_switches``
    → ``num_subnets``), so existing leaderboards' requests keep working."""

    def __init__(self, config: AppConfig | dict[str, Any] | None = None) -> None:
        try:
            if config is None:
                config = self.config_model()
            elif isinstance(config, dict):
                config = self.config_model(**config)
        except ValidationError as exc:
            raise ConfigError(f"invalid {self.name} parameters: {exc}") from exc
        self.config = config

    @abc.abstractmethod
    def generate(self, seed: int, level: int, label: str | None = None) -> Query:
        """Generate one query. Pure: the same arguments and config give the same query.

        Args:
            seed: Per-query seed; use ``random.Random(seed)``, never the global RNG.
            level: 1, 2 or 3.
            label: A label of that level, or ``None`` to let the seed choose one.
        """

    @abc.abstractmethod
    def open(self, query: Query) -> Episode:
        """Build the emulator state for ``query`` and return its episode."""

    @abc.abstractmethod
    def reference_agent(self) -> Agent:
        """The app's reference solver: no LLM, solves every generated query."""

    def baselines(self) -> Sequence[Baseline]:
        """The app's calibration baselines (``--agent baseline:NAME``); none by default.

        An app adds its own by returning ``netarena.common.core.agents.Baseline`` records; see
        that class for the contract every baseline keeps.
        """
        return ()

    def audit_objects(self, query: Query) -> Sequence[AuditObject]:
        """Every object an agent can see in ``query``'s faulted state, labelled by the truth.

        The audit (``netarena audit``) learns from these whether faults can be told from the
        design by their looks. Reading may build the instance's emulator.

        Raises:
            ConfigError: The app has no audit extractor (the default).
            EmulatorError: The instance could not be built or read.
        """
        raise ConfigError(f"{self.name} has no audit extractor")

    def audit_checks(self, queries: Sequence[Query]) -> Sequence[AuditCheck]:
        """Metamorphic checks over ``queries`` (stated details that must change the answer)."""
        return ()

    def instance_key(self, query: Query) -> str:
        """What makes two queries the same instance (plans draw without replacement on it).

        By default the prompt and the hidden truth; an app whose prompt wording varies
        apart from the task keys on the task itself.
        """
        blob = json.dumps([query.prompt, query.truth], sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()

    def params(self) -> dict[str, Any]:
        """The app parameters that shape generated queries (part of each query id)."""
        return self.config.model_dump(
            exclude_defaults=True, exclude=set(self.config.runtime_fields)
        )

    def make_query(
        self, seed: int, level: int, label: str, prompt: str, truth: dict[str, Any], **more: Any
    ) -> Query:
        """A query of this app, with its id, app name and parameters filled in (one id scheme)."""
        params = self.params()
        return Query(
            id=query_id(self.name, seed, level, label, params),
            app=self.name,
            seed=seed,
            level=level,
            label=label,
            params=params,
            prompt=prompt,
            truth=truth,
            **more,
        )

    @classmethod
    def expand_labels(cls, names: Sequence[str]) -> tuple[str, ...]:
        """``names`` with every label-set name replaced by its labels (order kept, no repeats)."""
        out: list[str] = []
        for name in names:
            for label in cls.label_sets.get(name, (name,)):
                if label not in out:
                    out.append(label)
        return tuple(out)

    @classmethod
    def label_scope(cls, names: Sequence[str]) -> frozenset[str]:
        """The labels a plan naming ``names`` covers: the default plan's when none."""
        if names:
            return frozenset(cls.expand_labels(names))
        every = {label for labels in cls.labels.values() for label in labels}
        return frozenset(every - cls.opt_in_labels)

    def pick_label(self, rng: random.Random, level: int, label: str | None) -> str:
        """Validate ``label`` against ``level`` or draw one with ``rng``."""
        choices: Sequence[str] = self.labels.get(level, ())
        if level not in self.labels:
            raise ConfigError(f"{self.name}: level must be one of {sorted(self.labels)}")
        if label is None:
            return rng.choice([c for c in choices if c not in self.opt_in_labels])
        if label not in choices:
            raise ConfigError(
                f"{self.name}: label {label!r} is not a level-{level} label {choices}"
            )
        return label


def app_names() -> list[str]:
    """Names of every installed app (entry-point group ``netarena.apps``)."""
    return sorted(ep.name for ep in entry_points(group="netarena.apps"))


def load_app(name: str, config: AppConfig | dict[str, Any] | None = None) -> App:
    """Instantiate the app registered as ``name``.

    Raises:
        ConfigError: No such app, or invalid parameters.
    """
    matches = [ep for ep in entry_points(group="netarena.apps") if ep.name == name]
    if not matches:
        raise ConfigError(f"unknown app {name!r}; installed: {', '.join(app_names())}")
    cls: type[App] = matches[0].load()
    return cls(config)


def find_baseline(app: App, name: str) -> Baseline:
    """The baseline ``name`` of ``app``.

    Raises:
        ConfigError: The app has no baseline of that name (the message lists them).
    """
    found = {b.name: b for b in app.baselines()}
    if name not in found:
        names = ", ".join(sorted(found)) or "none"
        raise ConfigError(f"{app.name} has no baseline {name!r}; its baselines: {names}")
    return found[name]
