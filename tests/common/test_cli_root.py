"""The ``netarena`` command's own conventions: version, log level, warnings shown once,
tables that keep every column when piped, a card URL peers can reach."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from netarena.common.cli.console import print_table, render_summary
from netarena.common.cli.root import cli
from netarena.common.core import notices
from netarena.common.core.notices import first_in_session
from netarena.common.core.runner import Runner
from netarena.common.core.stats import summarize
from netarena.common.reporting.summaries import SCORECARD_COLUMNS
from netarena.common.sandbox.host import python_has_bytearray_uaf
from netarena.common.serving.a2a import card_url_warning
from tests.helpers.toy import ToyApp


@pytest.fixture
def root_level() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    root.setLevel(level)
    from netarena.common.cli.console import set_log_level

    set_log_level(None)


def test_version_names_every_installed_distribution() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    line = result.output.strip()
    assert line.startswith("netarena ") and "netarena-common" in line and "Python " in line


@pytest.mark.parametrize(("args", "level"), [
    (["-v"], logging.INFO), (["-vv"], logging.DEBUG), (["--log-level", "error"], logging.ERROR),
    (["--log-level", "DEBUG"], logging.DEBUG)])
def test_log_level_applies_to_every_command(args: list[str], level: int,
                                            root_level: None) -> None:
    result = CliRunner().invoke(cli, [*args, "ladder", "malt", "--json"])
    assert result.exit_code == 0, result.output
    assert logging.getLogger().level == level


@pytest.mark.parametrize(("argv", "builtin"), [
    (["assess", "http://x"], True), (["-v", "assess"], True), (["-vv", "leaderboard"], True),
    (["--log-level", "debug", "assess"], True), (["--log-level=debug", "assess"], True),
    (["route", "cleanup"], False), (["-v", "purple"], False), (["--help"], False), ([], False)])
def test_root_options_before_a_builtin_command_keep_app_commands_unloaded(
        argv: list[str], builtin: bool) -> None:
    """``netarena -v assess`` stays as small as ``netarena assess``; app commands still load."""
    from netarena.common.cli.root import _builtin

    assert _builtin(argv) is builtin


def test_a_bad_log_level_is_refused(root_level: None) -> None:
    result = CliRunner().invoke(cli, ["--log-level", "loud", "ladder", "malt"])
    assert result.exit_code == 2 and "debug, info, warning, error" in result.output


def test_a_piped_table_keeps_every_column() -> None:
    table = Table(title="wide")
    for i in range(24):
        table.add_column(f"column-{i:02d}")
    table.add_row(*(f"value-{i:02d}" for i in range(24)))
    out = io.StringIO()
    print_table(table, Console(file=out, width=80))  # a pipe: rich would use 80 columns
    text = out.getvalue()
    assert all(f"column-{i:02d}" in text and f"value-{i:02d}" in text for i in range(24))


def test_a_piped_run_summary_keeps_the_n_column() -> None:
    app = ToyApp()
    results = asyncio.run(Runner(app, app.reference_agent()).run(
        [app.generate(seed, 1 + seed % 3) for seed in range(9)]))
    summary = summarize(results, app="toy", agent="a-long-agent-name-" * 3, seed=1)
    out = io.StringIO()
    print_table(render_summary(summary), Console(file=out, width=80))
    header = next(line for line in out.getvalue().splitlines() if "group" in line)
    assert [c for c in SCORECARD_COLUMNS if c not in header] == []
    assert "┃ n ┃" in header


@pytest.mark.parametrize(("host", "url", "warned"), [
    ("0.0.0.0", "http://127.0.0.1:9009/", True),
    ("::", "http://localhost:9009/", True),
    ("10.1.2.3", "http://[::1]:9009/", True),
    ("127.0.0.1", "http://127.0.0.1:9009/", False),
    ("0.0.0.0", "http://green-agent:9009", False),
    ("localhost", "http://localhost:9009/", False)])
def test_a_loopback_card_url_is_flagged_when_listening_wider(host: str, url: str,
                                                             warned: bool) -> None:
    warning = card_url_warning(host, url)
    assert (warning is not None) is warned
    if warning:
        assert "--card-url" in warning and url in warning


def test_serve_warns_about_a_loopback_card_url(monkeypatch: pytest.MonkeyPatch) -> None:
    import netarena.common.serving.web as web

    started: list[tuple[str, int]] = []
    monkeypatch.setattr(web, "serve", lambda app, host, port, limits: started.append((host, port)))
    wide = CliRunner().invoke(cli, ["serve", "malt", "--host", "0.0.0.0", "--port", "19999"])
    assert wide.exit_code == 0, wide.output
    assert "warning" in wide.output and "loopback" in wide.output
    named = CliRunner().invoke(cli, ["serve", "malt", "--host", "0.0.0.0", "--port", "19999",
                                     "--card-url", "http://green-agent:19999/"])
    assert named.exit_code == 0 and "loopback" not in named.output
    assert started == [("0.0.0.0", 19999)] * 2


def test_a_note_is_new_once_per_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # CI may run us in a session whose leader lies outside our pid namespace: name it here.
    monkeypatch.setattr(notices, "_session_key", lambda: "4242-1")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    note = f"note {tmp_path}"
    assert first_in_session(note) and not first_in_session(note)
    assert first_in_session(note + " (another)")
    shared = tmp_path / "elsewhere"
    store = shared / f"netarena-{os.getuid()}"
    store.mkdir(parents=True)
    store.chmod(0o777)  # a store others may write is neither trusted nor written
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(shared))
    assert first_in_session(note) and first_in_session(note)
    assert list(store.iterdir()) == []


def test_a_session_that_cannot_be_named_shows_every_note(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(notices, "_session_key", lambda: None)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    assert first_in_session("a note") and first_in_session("a note")


def test_host_warnings_print_once_across_the_commands_of_a_session(tmp_path: Path) -> None:
    """As in scripts/demo.sh: several processes of one session show each warning once."""
    code = ("import logging; logging.basicConfig(); "
            "from netarena.common.sandbox.host import log_start_up_checks; log_start_up_checks()")
    script = "; ".join([f"{sys.executable} -c '{code}'"] * 3)
    proc = subprocess.run(["setsid", "bash", "-c", script], capture_output=True, text=True,
                          timeout=120, env={"PATH": "/usr/bin:/bin",
                                            "XDG_RUNTIME_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == len(set(warnings)), proc.stderr
    if python_has_bytearray_uaf():  # this interpreter has a note to show: shown, once
        assert sum("gh-142560" in line for line in warnings) == 1, proc.stderr
