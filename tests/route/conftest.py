"""Shared pieces of the route tests: root detection, small apps, playing an episode."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from collections.abc import Callable
from typing import Any

import pytest

from netarena.common.core.agents import Observation

_TOOLS = ("ip", "nsenter", "bwrap", "mnexec", "brctl", "iptables", "nft", "setpriv", "prlimit")
NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0 or any(shutil.which(t) is None for t in _TOOLS),
    reason=f"needs root and {', '.join(_TOOLS)} (scripts/setup.sh installs them)",
)

LIVE_FRR = [
    pytest.mark.root,
    pytest.mark.slow,
    NEEDS_ROOT,
    pytest.mark.skipif(shutil.which("vtysh") is None, reason="needs FRR (apt-get install frr)"),
]
"""The marks of tests that play episodes on live FRR routers."""

Script = Callable[[str, int], tuple[str, str] | None]
"""A scripted agent: (observation text, turn) -> (machine, command), or ``None`` when done."""


@pytest.fixture
def small_app():
    """A route app on a fixed 2x2 network (fast episodes)."""
    from netarena.route import RouteApp

    return RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})


def small_frr_app():
    """A route app whose dynamic-routing networks have 4 routers (fast episodes)."""
    from netarena.route import RouteApp

    return RouteApp({"num_routers": 4})


def first_query(app, label: str, want: Callable[[dict[str, Any]], bool], start: int = 0,
                design: Callable[[dict[str, Any]], bool] = lambda truth: True):
    """The first query from seed ``start`` on whose first fault candidate passes ``want``
    (and whose truth passes ``design``).

    A test that needs a fault of one shape searches for it: a seed pinned to a shape moves
    whenever the generator's draws change (a method's weight, an aim's)."""
    for seed in range(start, start + 500):
        query = app.generate(seed, len(label.split("+")), label)
        if want(query.truth["faults"][0]["candidates"][0]) and design(query.truth):
            return query
    raise AssertionError(f"no {label} query of that shape in 500 seeds from {start}")


def router_forward_drop(fault: dict[str, Any]) -> bool:
    """The router's FORWARD policy is DROP."""
    return (fault["method"], fault["node"], fault.get("chain")) == (
        "forward_policy_drop", "r0", "FORWARD")


def on_a_host(fault: dict[str, Any]) -> bool:
    """The fault aims at one host: other hosts still reach other subnets through r0."""
    return fault["target"]["kind"] == "host"


def reply(machine: str, command: str) -> str:
    return json.dumps({"machine": machine, "command": command})


def play_reference(episode, max_turns: int = 10) -> int:
    """Let the reference solver play ``episode``; return the turns used."""
    from netarena.route import ReferenceRouteAgent

    agent = ReferenceRouteAgent()
    for turn in range(max_turns):
        text = episode.observe()
        if episode.step(asyncio.run(agent.act(Observation(text, "test", turn)))).done:
            return turn + 1
    return max_turns


def play_script(episode, script: Script, max_turns: int) -> None:
    """Play ``episode`` with a scripted agent until done, ``max_turns`` or it gives up."""
    for turn in range(max_turns):
        action = script(episode.observe(), turn)
        if action is None or episode.step(reply(*action)).done:
            return
