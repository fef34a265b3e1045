"""The real runner and CLI on the route app: reference solves all, null solves none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from netarena.route.namespaces import OWNER_DIR, list_prefixes

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, NEEDS_ROOT]
NETARENA = str(Path(sys.executable).parent / "netarena")


def run_cli(*args: str) -> dict:
    proc = subprocess.run(
        [NETARENA, "run", "route", *args, "--json"], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def leaked_since(before: set[str]) -> set[str]:
    """New prefixes whose owner is gone: ours, left behind. (Another process's live
    episodes, e.g. a parallel run on the same machine, are not leaks.)"""

    def owner_alive(prefix: str) -> bool:
        try:
            pid = int((OWNER_DIR / f"{prefix}.pid").read_text().strip())
        except (OSError, ValueError):
            return False
        return Path(f"/proc/{pid}").exists()

    return {p for p in list_prefixes() - before if not owner_alive(p)}


@pytest.mark.slow
def test_reference_agent_scores_perfectly(tmp_path: Path) -> None:
    before = list_prefixes()
    summary = run_cli(
        "--agent",
        "reference",
        "--queries",
        "30",
        "--levels",
        "1,2,3",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
    )
    assert summary["queries"] == 30
    assert summary["correctness"]["rate"] == 1.0
    assert summary["safety"]["rate"] == 1.0
    results = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert {r["level"] for r in results} == {1, 2, 3}
    assert all(r["error"] is None and r["turns"] <= 30 for r in results)
    assert leaked_since(before) == set()


def test_null_agent_scores_zero() -> None:
    summary = run_cli("--agent", "null", "--queries", "3", "--levels", "1,2,3", "--seed", "3")
    assert summary["correctness"]["rate"] == 0.0
