"""A run's summary names the software it was scored with (ABC T.1: tool versions).

Before: ``summary.json`` and the A2A summary carried no interpreter, kernel, kubectl or
iptables version, though the route judge reads the host kernel's rulesets and the k8s
episodes answer through the installed ``kubectl``; two results that disagreed could not be
told apart by what produced them.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path

from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.environment import TOOLS, environment


def test_environment_names_interpreter_kernel_and_netarena() -> None:
    env = environment()
    assert env["python"] == platform.python_version()
    assert env["kernel"] == platform.release()
    assert env["netarena"] and all(isinstance(v, str) and v for v in env.values())
    assert set(env) - {"python", "implementation", "system", "kernel", "machine"}


def test_tools_on_path_are_named_with_their_version(monkeypatch) -> None:
    import netarena.common.core.environment as module

    monkeypatch.setitem(module.TOOLS, "python3", ("python3", "--version"))
    monkeypatch.setitem(module.TOOLS, "no-such-tool", ("no-such-tool-anywhere", "-v"))
    module.environment.cache_clear()
    try:
        env = module.environment()
    finally:
        module.environment.cache_clear()
    assert env["python3"].startswith("Python 3.")
    assert "no-such-tool" not in env
    assert "kubectl" in TOOLS and "iptables" in TOOLS


def test_run_summary_names_the_software_it_was_scored_with(tmp_path: Path) -> None:
    args = ["run", "malt", "-n", "2", "--seed", "3", "--out", str(tmp_path), "--json"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["environment"] == environment()
