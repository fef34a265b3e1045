"""The repository's layout (issue 21): one distribution per folder, imports that run one way.

The import graph is read from the source with ``ast``, not by importing anything. Every
``import`` and ``from ... import`` of a ``netarena`` module counts -- at module level, inside
functions (a deferred import is still a dependency, only a later one) and under
``if TYPE_CHECKING:`` (a dependency of every reader, editor and type checker). ``from P import
m`` where ``m`` is a module of package ``P`` is an edge to ``P.m``; any other name imported
from ``P`` is an edge to ``P`` itself (its ``__init__``).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import sysconfig
from functools import cache
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Design-card folder -> the package it holds (netarena.<name>).
FOLDERS = {"common": "common", "app-malt": "malt", "app-route": "route", "app-k8s": "k8s",
           "a2a_llm": "a2a_llm"}
APPS = ("netarena.malt", "netarena.route", "netarena.k8s")
# netarena.common's subpackages; core imports none of the others.
COMMON_CONCERNS = (
    "core", "sandbox", "serving", "reporting", "training", "launch", "audit", "cli"
)
MAX_LINES = 400
# netarena.route's groups, bottom to top; a tuple holds siblings that may not import each other.
# "app" is the modules directly in netarena.route (the package facade, generator, cli).
ROUTE_LEVELS: tuple[tuple[str, ...], ...] = (
    ("linux",), ("sandbox",), ("emulator",), ("judge",), ("base",), ("static", "frr"),
    ("agents",), ("app",),
)


@cache
def _modules() -> dict[str, Path]:
    """Every module of the five distributions, by dotted name."""
    found = {}
    for folder, name in FOLDERS.items():
        src = ROOT / folder / "src"
        for path in sorted((src / "netarena" / name).rglob("*.py")):
            parts = path.relative_to(src).with_suffix("").parts
            dotted = ".".join(p for p in parts if p != "__init__" or len(parts) == 1)
            found[dotted.removesuffix(".__init__")] = path
    return found


def _imported(module: str, path: Path) -> set[str]:
    """The netarena modules ``module`` imports anywhere in its source."""
    modules = _modules()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                child = f"{base}.{alias.name}"
                targets.add(child if child in modules else base)
    resolved = set()
    for target in targets:
        while target and target not in modules:  # netarena.x.y.Name -> netarena.x.y
            target = target.rpartition(".")[0]
        if target and target != module:
            resolved.add(target)
    return resolved


@cache
def _graph() -> nx.DiGraph:
    graph = nx.DiGraph()
    for module, path in _modules().items():
        graph.add_node(module)
        graph.add_edges_from((module, target) for target in _imported(module, path))
    return graph


def _concern(module: str) -> str | None:
    parts = module.split(".")
    if parts[:2] != ["netarena", "common"] or len(parts) < 3:
        return None
    return parts[2] if parts[2] in COMMON_CONCERNS else None


def test_the_walker_sees_the_whole_tree() -> None:
    graph = _graph()
    assert len(graph) > 140
    assert ("netarena.common.core.runner", "netarena.common.core.types") in graph.edges
    assert ("netarena.malt", "netarena.malt.episode") in graph.edges  # __init__ -> module


def test_no_import_cycles() -> None:
    cycles = [sorted(c) for c in nx.strongly_connected_components(_graph()) if len(c) > 1]
    details = []
    for cycle in cycles:
        edges = _graph().subgraph(cycle).edges
        details.append("; ".join(f"{a} -> {b}" for a, b in sorted(edges)))
    assert not cycles, "import cycles:\n" + "\n".join(details)


def test_common_concerns_point_toward_the_core() -> None:
    """core imports no other concern, and the concerns' own graph has no cycle."""
    concerns = nx.DiGraph()
    for a, b in _graph().edges:
        ca, cb = _concern(a), _concern(b)
        if ca and cb and ca != cb:
            concerns.add_edge(ca, cb, example=f"{a} -> {b}")
    outward = [d["example"] for a, _, d in concerns.edges(data=True) if a == "core"]
    assert not outward, f"core imports other concerns: {outward}"
    assert nx.is_directed_acyclic_graph(concerns), list(nx.simple_cycles(concerns))
    # Every top-level common module sits in a concern (the package __init__ is the facade).
    loose = [m for m in _modules() if m.startswith("netarena.common.") and not _concern(m)]
    assert not loose, f"modules of netarena.common outside a concern: {loose}"


def test_distributions_import_one_way() -> None:
    """Apps import common, never each other; common imports no app and not a2a_llm."""
    wrong = []
    for a, b in _graph().edges:
        owner_a, owner_b = a.split(".")[1], b.split(".")[1]
        if owner_a != owner_b and owner_b != "common":
            wrong.append(f"{a} -> {b}")
    assert not wrong, wrong


def test_the_k8s_api_server_imports_no_app_module() -> None:
    """The control plane is generic Kubernetes: pod behaviour and the app are injected into it."""
    inside = "netarena.k8s.apiserver"
    outward = [f"{a} -> {b}" for a, b in _graph().edges
               if (a == inside or a.startswith(inside + "."))
               and b.startswith("netarena.k8s") and not (b == inside or b.startswith(inside + "."))]
    assert not outward, outward


def _route_group(module: str) -> str | None:
    """The group of a netarena.route module: its subpackage, or "app" when it sits on top."""
    parts = module.split(".")
    if parts[:2] != ["netarena", "route"]:
        return None
    package = len(parts) == 3 and _modules()[module].name == "__init__.py"
    return parts[2] if len(parts) > 3 or package else "app"


def route_wrong_way(edges: list[tuple[str, str]]) -> list[str]:
    """The edges between route groups that do not point to a lower level."""
    level = {group: i for i, groups in enumerate(ROUTE_LEVELS) for group in groups}
    wrong = []
    for a, b in edges:
        ga, gb = _route_group(a), _route_group(b)
        if ga and gb and ga != gb and level[gb] >= level[ga]:
            wrong.append(f"{a} ({ga}) -> {b} ({gb})")
    return wrong


def test_route_groups_import_downward() -> None:
    """Route's groups are layers: each imports only groups below it, siblings not each other.

    Linux plumbing knows no sandbox, the sandbox no network, the emulator no judge, the judge
    no faults; static and FRR queries share the base below them but not each other's code,
    and the agents and the app sit on top. A module that needs something from a higher or
    sibling group shows that piece belongs lower (issue 42): move it down, never import up.
    """
    groups = {g for level in ROUTE_LEVELS for g in level}
    found = {_route_group(m) for m in _modules()} - {None}
    assert found == groups, f"groups not in ROUTE_LEVELS (or listed but absent): {found ^ groups}"
    wrong = route_wrong_way(list(_graph().edges))
    assert not wrong, "imports against the route groups' direction:\n" + "\n".join(wrong)
    # The check can fail: an import from the sandbox up into the emulator is caught.
    assert route_wrong_way([("netarena.route.sandbox.sandbox", "netarena.route.emulator.plan")])
    assert route_wrong_way([("netarena.route.static.solver", "netarena.route.frr.solver")])


def test_no_module_over_400_lines() -> None:
    long = {m: n for m, p in _modules().items()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"split by concern: {long}"


@pytest.mark.parametrize("folder", sorted(FOLDERS))
def test_each_folder_is_its_own_distribution(folder: str) -> None:
    import tomllib

    project = tomllib.loads((ROOT / folder / "pyproject.toml").read_text())
    package = ROOT / folder / "src" / "netarena" / FOLDERS[folder]
    assert (package / "__init__.py").is_file()
    assert not (ROOT / folder / "src" / "netarena" / "__init__.py").exists()  # PEP 420
    assert project["project"]["name"].startswith("netarena-")
    assert not [p for p in (ROOT / folder).iterdir() if p.suffix == ".py"]  # code under src/
    if folder != "common":
        assert any(d.startswith("netarena-common") for d in project["project"]["dependencies"])


def test_root_is_the_meta_distribution() -> None:
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split("==")[0] for d in project["dependencies"]}
    assert names == {"netarena-common", "netarena-malt", "netarena-route", "netarena-k8s",
                     "netarena-a2a-llm"}


def test_editable_installs_are_plain_paths() -> None:
    """An editable install adds src/ to sys.path (a .pth), never an import-hook finder."""
    editable = []
    for name in ("netarena-common", "netarena-malt", "netarena-route", "netarena-k8s",
                 "netarena-a2a-llm"):
        try:
            text = importlib.metadata.distribution(name).read_text("direct_url.json")
        except importlib.metadata.PackageNotFoundError:
            continue
        if text and json.loads(text).get("dir_info", {}).get("editable"):
            editable.append(name)
    if not editable:
        pytest.skip("no netarena distribution is installed editable here")
    site = Path(sysconfig.get_paths()["purelib"])
    hooks = sorted(p.name for p in site.glob("__editable___netarena*finder.py"))
    assert not hooks, hooks
    pth = "".join(p.read_text() for p in site.glob("__editable__.netarena*.pth"))
    for folder in FOLDERS:
        assert str(ROOT / folder / "src") in pth.splitlines()
