"""The ``vtysh`` command line an operator types to change a router's configuration.

The reference solvers and the scripted baselines send the same shape of command an agent
would (``vtysh -c 'conf t' -c LINE ...``); building it in one place keeps their quoting
identical and lets history readers recognise it.
"""

from __future__ import annotations

import shlex

__all__ = ["CONF", "conf"]

CONF = "vtysh -c 'conf t'"
"""How every configuration command starts (what history readers match)."""


def conf(lines: list[str]) -> str:
    """A vtysh command that enters configuration mode and types ``lines`` in order."""
    return f"{CONF} " + " ".join(f"-c {shlex.quote(x)}" for x in lines)
