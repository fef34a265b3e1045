"""The `netarena` command and the test workers collect cycles as tuned."""

from __future__ import annotations

import gc
import subprocess
import sys

from netarena.common.core.collector import THRESHOLDS


def test_the_test_workers_collect_as_tuned() -> None:
    assert gc.get_threshold() == THRESHOLDS


def test_the_netarena_command_collects_as_tuned() -> None:
    code = (
        "import gc\n"
        "from netarena.common.cli import root\n"
        "root._builtin = lambda argv: True\n"
        "root.cli = lambda: print(gc.get_threshold())\n"
        "root.main()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(THRESHOLDS)
