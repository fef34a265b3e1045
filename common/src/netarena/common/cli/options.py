"""Options and values shared by the ``netarena`` commands (levels, app parameters, ...)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

__all__ = ["parse_levels", "parse_params", "parse_value"]


def parse_levels(text: str) -> tuple[int, ...]:
    """Parse ``--levels 1,2,3`` for every command that takes levels."""
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError as exc:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}") from exc


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """Parse repeated ``--param KEY=VALUE`` options (values as JSON when they parse)."""
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"--param expects KEY=VALUE, got {pair!r}")
        params[key] = parse_value(value)
    return params


def parse_value(text: str) -> Any:
    """A command-line value: JSON when it parses (numbers, lists), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text

AgentOpt = Annotated[
    str, typer.Option(help="reference, null, baseline:NAME, litellm:MODEL or an A2A URL")
]

LevelsOpt = Annotated[str, typer.Option(help="comma-separated levels")]

LabelsOpt = Annotated[
    str | None, typer.Option(help="comma-separated labels or label sets (malt: original)")
]

SeedOpt = Annotated[int | None, typer.Option(help="base seed (random when absent)")]

ConcurrencyOpt = Annotated[int, typer.Option(min=1)]

MaxTurnsOpt = Annotated[int | None, typer.Option(min=1)]

TurnTimeoutOpt = Annotated[float, typer.Option(help="seconds per agent answer")]

EpisodeTimeoutOpt = Annotated[
    float | None, typer.Option(help="seconds per episode, checked between turns")
]

ParamOpt = Annotated[list[str], typer.Option("--param", "-p", help="app parameter KEY=VALUE")]

JsonOpt = Annotated[bool, typer.Option("--json", help="print the summary as JSON on stdout")]

ExecutorOpt = Annotated[
    str, typer.Option(help="where episodes play: local (this process) or ray (a Ray cluster)")
]

RayAddressOpt = Annotated[
    str | None, typer.Option(help="Ray cluster to join (default: start a local one)")
]

AdaptiveOpt = Annotated[
    list[Path] | None,
    typer.Option(help="earlier results of this agent (files or run dirs): draw where it fails"),
]

FloorOpt = Annotated[
    float, typer.Option(min=0, max=1, help="adaptive: share of queries spread evenly")
]

AxisOpt = Annotated[
    list[str], typer.Option(help="adaptive: app parameter to vary per query, KEY=V1,V2,...")
]
