"""Results files: a planted FIFO or symlink never hangs or redirects a run; names are keyed.

Before: a FIFO at ``summary.json`` hung ``netarena run --out DIR`` forever, and one at a
later request's predictable results file froze a green server (SIGTERM ignored). Each test
here runs under a short timeout, so a hang is a failure, not a stuck suite.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.result_files import (
    UnsafeResultsFile,
    keyed_name,
    open_regular,
    read_regular,
    write_atomic,
)
from netarena.common.core.runner import Runner, read_results
from tests.helpers.toy import ToyApp

pytestmark = pytest.mark.timeout(30)


def _plant(path: Path, kind: str, target: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    else:
        os.symlink(target, path)


@pytest.mark.parametrize("kind", ["fifo", "symlink"])
def test_a_planted_results_file_is_refused_at_once(tmp_path: Path, kind: str) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    out = tmp_path / "results.jsonl"
    _plant(out, kind, victim)
    app = ToyApp()
    queries = plan_queries(app, QueryPlan(num_queries=2, seed=1))
    with pytest.raises(UnsafeResultsFile, match=kind if kind == "symlink" else "FIFO"):
        asyncio.run(Runner(app, app.reference_agent()).run(queries, out=out))
    with pytest.raises(UnsafeResultsFile):
        read_results(out)
    assert victim.read_text() == "keep me\n"


def test_a_fifo_with_a_reader_is_refused_too(tmp_path: Path) -> None:
    """Opened for reading and writing a FIFO does not block, and fstat then refuses it."""
    out = tmp_path / "results.jsonl"
    os.mkfifo(out)
    reader = os.open(out, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with pytest.raises(UnsafeResultsFile, match="FIFO"):
            open_regular(out)
    finally:
        os.close(reader)


def test_run_out_replaces_a_planted_summary_and_refuses_a_planted_results_file(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.mkfifo(tmp_path / "summary.json")
    args = ["run", "malt", "-n", "3", "--seed", "4", "--out", str(tmp_path), "--json"]
    runner = CliRunner()
    result = runner.invoke(cli, args)
    assert result.exit_code == 0, result.output
    summary = tmp_path / "summary.json"
    assert stat.S_ISREG(summary.lstat().st_mode)
    assert json.loads(summary.read_text())["queries"] == 3
    assert len(read_results(tmp_path / "results.jsonl")) == 3

    (tmp_path / "results.jsonl").unlink()
    os.symlink(victim, tmp_path / "results.jsonl")
    refused = runner.invoke(cli, args)
    assert refused.exit_code == 2 and "refusing results path" in refused.output
    assert victim.read_text() == "keep me\n"


def test_resume_cuts_a_torn_line_and_appends(tmp_path: Path) -> None:
    app = ToyApp()
    queries = plan_queries(app, QueryPlan(num_queries=3, seed=2))
    out = tmp_path / "results.jsonl"
    asyncio.run(Runner(app, app.reference_agent()).run(queries[:2], out=out))
    with out.open("a") as sink:
        sink.write('{"query_id": "torn')
    again = asyncio.run(Runner(app, app.reference_agent()).run(queries, out=out))
    lines = out.read_text().splitlines()
    assert len(again) == 3 and len(lines) == 3
    assert all(json.loads(line)["query_id"] for line in lines)


def test_write_atomic_never_opens_what_is_planted(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    os.symlink(victim, target)
    write_atomic(target, "{}")
    assert not target.is_symlink() and target.read_text() == "{}"
    assert victim.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json", "victim.txt"]


def test_read_regular(tmp_path: Path) -> None:
    assert read_regular(tmp_path / "missing") is None
    (tmp_path / "a").write_bytes(b"x")
    assert read_regular(tmp_path / "a") == b"x"


def test_server_results_names_are_keyed_and_unpredictable(tmp_path: Path) -> None:
    identity = json.dumps(["toy", "http://purple", {"seed": 1}])
    first = keyed_name(tmp_path, "toy", identity)
    assert keyed_name(tmp_path, "toy", identity) == first  # a restarted server finds it
    other = tmp_path / "other"
    assert keyed_name(other, "toy", identity).name != first.name  # another key elsewhere
    plain = hashlib.sha256(identity.encode()).hexdigest()
    assert plain[:16] not in first.name and plain[:32] not in first.name
    key = tmp_path / ".netarena-results-key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32


def test_a_truncated_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".netarena-results-key").write_bytes(b"short")
    with pytest.raises(UnsafeResultsFile, match="truncated"):
        keyed_name(tmp_path, "toy", "x")
