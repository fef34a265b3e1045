"""The host-wide ``error_cost`` share (``errorbudget._share``) on files of its own.

The real value is one for the whole host, held by other test workers' judges at any moment, so
these tests point the module at a value and a holders' record in a temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.route.judge import errorbudget
from netarena.route.judge.errorbudget import judge_quiet


class Cost:
    """``error_cost`` as a file; its write of ``interrupt_at`` raises Ctrl-C's exception after."""

    def __init__(self, path: Path, interrupt_at: str | None = None) -> None:
        self.path, self.interrupt_at = path, interrupt_at
        path.write_text("1000")

    def __fspath__(self) -> str:
        return str(self.path)

    def read_text(self) -> str:
        return self.path.read_text()

    def write_text(self, value: str) -> None:
        self.path.write_text(value)
        if value == self.interrupt_at:
            raise KeyboardInterrupt


@pytest.fixture
def cost(monkeypatch, tmp_path: Path) -> Cost:
    monkeypatch.setattr(errorbudget, "OWNER_DIR", tmp_path)
    monkeypatch.setattr(errorbudget, "HOLDERS", tmp_path / "error_cost.json")
    value = Cost(tmp_path / "error_cost")
    monkeypatch.setattr(errorbudget, "ERROR_COST", value)
    return value


def _holders() -> list[int]:
    record = errorbudget.HOLDERS
    return json.loads(record.read_text())["holders"] if record.exists() else []


def test_held_at_zero_inside_and_put_back_after(cost: Cost) -> None:
    with judge_quiet([]):
        assert cost.read_text() == "0" and _holders() == [os.getpid()]
        with judge_quiet([]):  # nested: one holder still
            pass
        assert cost.read_text() == "0"
    assert cost.read_text() == "1000" and not errorbudget.HOLDERS.exists()


@pytest.mark.parametrize("step", ["record", "zero"])
def test_a_stop_signal_mid_join_leaves_the_value_as_it_was(monkeypatch, cost: Cost,
                                                          step: str) -> None:
    """SIGTERM's ``SystemExit`` (or Ctrl-C) raised inside the join, after the holders' record
    or after the value is set to 0, leaves neither a 0 nor this process recorded."""
    if step == "record":
        real = errorbudget.write_atomic

        def interrupted(*args: str) -> None:
            real(*args)
            raise KeyboardInterrupt

        monkeypatch.setattr(errorbudget, "write_atomic", interrupted)
    else:
        cost.interrupt_at = "0"
    with pytest.raises(KeyboardInterrupt), judge_quiet([]):
        pass
    assert cost.read_text() == "1000" and os.getpid() not in _holders()


def test_a_holder_that_died_holding_is_put_back_by_the_next(cost: Cost) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    errorbudget.HOLDERS.write_text(json.dumps({"saved": 1000, "holders": [int(dead.stdout)]}))
    cost.path.write_text("0")
    with judge_quiet([]):
        assert cost.read_text() == "0" and _holders() == [os.getpid()]
    assert cost.read_text() == "1000" and not errorbudget.HOLDERS.exists()


@pytest.mark.parametrize("where", ["another network namespace", "a read-only /proc/sys"])
def test_a_process_that_cannot_set_the_value_probes_with_it_as_it_is(
    monkeypatch, cost: Cost, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Outside the host's first network namespace (a container on its own network) the file
    does not exist; judging there must not fail (it did: every query was unscored)."""
    if where == "another network namespace":
        monkeypatch.setattr(errorbudget, "ERROR_COST", cost.path.with_name("absent"))
    else:
        monkeypatch.setattr(errorbudget.os, "access", lambda path, mode: False)
    monkeypatch.setattr(errorbudget, "_unsettable_logged", False)
    with judge_quiet([]):
        assert cost.read_text() == "1000" and not errorbudget.HOLDERS.exists()
    assert cost.read_text() == "1000" and not errorbudget.HOLDERS.exists()
    assert "error_cost cannot be set here" in caplog.text
