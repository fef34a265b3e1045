"""The strict type gate (``mypy`` in ``.ci/run``) covers every package, not only ``common``."""

import ast
import tomllib
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import netarena.route

ROOT = Path(__file__).resolve().parents[1]


def _mypy_config() -> dict[str, Any]:
    config: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    return config


def _override_modules(config: dict[str, Any]) -> list[str]:
    modules: list[str] = []
    for override in config.get("overrides", []):
        listed = override["module"]
        modules += [listed] if isinstance(listed, str) else listed
    return modules


def test_every_package_is_checked_strictly() -> None:
    config = _mypy_config()
    apps = {ep.value.split(":")[0] for ep in entry_points(group="netarena.apps")}
    assert apps, "no app is registered"
    assert {"netarena.common", "netarena.a2a_llm", *apps} <= set(config["packages"])
    assert config["strict"] is True


def test_overrides_relax_third_party_modules_only() -> None:
    config = _mypy_config()
    for override in config.get("overrides", []):
        assert "ignore_errors" not in override, override
    modules = _override_modules(config)
    assert not [m for m in modules if m.split(".")[0] == "netarena"]
    assert not [m for m in modules if m.split(".")[0] == "mininet"], "mininet has stubs"


def test_every_mininet_module_route_imports_has_a_stub() -> None:
    imported = set()
    for source in Path(netarena.route.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("mininet"):
                imported.add(node.module)
    assert imported, "app-route no longer imports mininet: drop typings/mininet"
    stubs = ROOT / "typings"
    for module in sorted(imported):
        assert (stubs / (module.replace(".", "/") + ".pyi")).is_file(), module
