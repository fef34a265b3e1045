"""Every benchmark script imports: a module renamed or moved breaks them at once, not when
someone next measures (they run by hand, and nothing else imports them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SCRIPTS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", _SCRIPTS, ids=[s.stem for s in _SCRIPTS])
def test_the_benchmark_imports_and_has_a_main(script: Path, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.syspath_prepend(str(script.parent))  # as `python benchmarks/x.py` has it
    spec = importlib.util.spec_from_file_location(f"benchmark_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # runs nothing: each script's work is under __main__
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
