"""``docs/validity.md`` stays true as the code changes.

The card audits NetArena against the Agentic Benchmark Checklist. These tests hold it to
what it cites and quotes:

- every ABC item is there once, with one verdict (met, not met, n/a) per app, every
  "not met" names its issue or what it would take, and the counts table equals the verdicts;
- every test (``tests/FILE.py::NAME``) and file (``benchmarks/…``, ``common/…``) it cites
  exists, test names resolved in the file's syntax tree;
- its ladder tables are exactly the ranges ``netarena calibrate`` checks, as printed by
  ``netarena ladder`` (regenerate with ``netarena ladder --write docs/validity.md``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from netarena.common.cli.calibrate import ladder, ladder_table, write_ladder_table
from netarena.common.cli.root import cli
from netarena.common.core.app import app_names, load_app
from netarena.common.core.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
CARD = ROOT / "docs" / "validity.md"
REGENERATE = "run `.venv/bin/netarena ladder --write docs/validity.md` and commit the card"

ABC_IDS = (
    *("O.a.1", "O.a.2", "O.b.1", "O.b.2", "O.b.3", "O.c.1", "O.c.2", "O.d.1", "O.d.2"),
    *("O.e.1", "O.e.2", "O.e.3", "O.f.2", "O.f.3", "O.g.1", "O.g.2", "O.g.3", "O.h.1"),
    *("O.h.2", "O.i.1"),
    *(f"T.{n}" for n in range(1, 11)),
    *(f"R.{n}" for n in range(1, 14)),
)
"""The checklist's items (outcome 20, task 10, reporting 13), in the card's order."""
VERDICTS = ("met", "not met", "n/a")
CITED_ROOTS = ("tests/", "benchmarks/", "common/", "app-malt/", "app-route/", "app-k8s/",
               "a2a_llm/", "docs/", "scripts/", "docker/")


def _card() -> str:
    return CARD.read_text()


def _items(text: str) -> dict[str, dict[str, str]]:
    """Item id → app → verdict, from ``### ID — …`` headings and ``- APP: **VERDICT**`` lines."""
    items: dict[str, dict[str, str]] = {}
    current: str | None = None
    for line in text.splitlines():
        heading = re.match(r"### ([OTR]\.[a-z0-9.]+) — ", line)
        if heading:
            current = heading.group(1)
            assert current not in items, f"{current} appears twice"
            items[current] = {}
            continue
        if line.startswith("## "):
            current = None
        verdict = re.match(r"- (all|malt|route|k8s): \*\*([^*]+)\*\*", line)
        if current is None or not verdict:
            continue
        who, said = verdict.groups()
        assert said in VERDICTS, f"{current} {who}: unknown verdict {said!r}"
        for app in app_names() if who == "all" else [who]:
            assert app not in items[current], f"{current}: two verdicts for {app}"
            items[current][app] = said
    return items


def test_every_item_has_one_verdict_per_app() -> None:
    items = _items(_card())
    assert tuple(items) == ABC_IDS
    for item, verdicts in items.items():
        assert sorted(verdicts) == sorted(app_names()), (item, verdicts)


def _not_met(text: str) -> list[tuple[str, str]]:
    """Each ``not met`` verdict with its text (the bullet and its continuation lines)."""
    found = []
    item = ""
    for block in re.split(r"\n(?=- |### |## )", text):
        heading = re.match(r"### ([OTR]\.[a-z0-9.]+) — ", block)
        if heading:
            item = heading.group(1)
        if re.match(r"- (all|malt|route|k8s): \*\*not met\*\*", block):
            found.append((item, block))
    return found


def test_every_unmet_item_names_its_issue_or_what_it_would_take() -> None:
    unmet = _not_met(_card())
    assert unmet
    for item, block in unmet:
        assert re.search(r"issue \d+|would take", block), (item, block)


def test_the_counts_are_the_verdicts() -> None:
    text = _card()
    items = _items(text)
    block = re.search(r"<!-- counts:begin -->\n(.*?)<!-- counts:end -->", text, re.DOTALL)
    assert block, "no counts block"
    quoted = {}
    for row in block.group(1).splitlines()[2:]:
        app, *counts = (cell.strip() for cell in row.strip("|").split("|"))
        quoted[app] = tuple(int(c) for c in counts)
    actual = {}
    for app in app_names():
        tally = Counter(verdicts[app] for verdicts in items.values())
        actual[app] = tuple(tally[v] for v in VERDICTS)
    assert quoted == actual


def _citations(text: str) -> set[str]:
    found = set()
    for token in re.findall(r"`([^`\s]+)`", text):
        if token.startswith(CITED_ROOTS):
            found.add(token)
    return found


@cache
def _test_names(path: Path) -> frozenset[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test_"
        ):
            names.add(node.name)
    return frozenset(names)


def test_every_cited_test_and_file_exists() -> None:
    cited = _citations(_card())
    assert any("::" in c for c in cited) and any(c.startswith("benchmarks/") for c in cited)
    missing = []
    for token in sorted(cited):
        file, _, name = token.partition("::")
        path = ROOT / file
        if not path.exists():
            missing.append(token)
        elif name and name.split("[")[0] not in _test_names(path):
            missing.append(token)
    assert not missing, f"cited but not in the repository: {missing}"


def _rows(block: str) -> dict[tuple[str, str], dict[str, tuple[float, float]]]:
    lines = [line for line in block.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rates = header[2:-1]
    table = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        app, agent = cells[0], cells[1].strip("`")
        ranges = {}
        for rate, cell in zip(rates, cells[2:], strict=False):
            if cell != "-":
                lo, hi = (float(x) for x in cell.strip("[]").split(","))
                ranges[rate] = (lo, hi)
        table[(app, agent)] = ranges
    return table


def test_the_ladder_tables_are_the_ones_calibrate_checks() -> None:
    text = _card()
    for name in app_names():
        app = load_app(name)
        block = re.search(
            rf"<!-- ladder:{name}:begin -->\n(.*?)<!-- ladder:{name}:end -->", text, re.DOTALL
        )
        assert block, f"no ladder block for {name}: add one and {REGENERATE}"
        quoted = _rows(block.group(1)) if block.group(1).strip() else {}
        checked = {(name, agent): dict(expected) for agent, expected, _ in ladder(app)}
        assert quoted == checked, f"{name}'s ladder in the card differs from the code: {REGENERATE}"
        assert block.group(1) == ladder_table(app), f"{name}'s ladder text is stale: {REGENERATE}"


def test_ladder_command_prints_and_rewrites_only_the_marked_blocks(tmp_path: Path) -> None:
    malt = load_app("malt")
    doc = tmp_path / "card.md"
    doc.write_text("before\n<!-- ladder:malt:begin -->\nstale\n<!-- ladder:malt:end -->\nafter\n")
    runner = CliRunner()
    printed = runner.invoke(cli, ["ladder", "malt"])
    assert printed.exit_code == 0 and printed.stdout == ladder_table(malt)
    assert "`baseline:rank-by-name`" in printed.stdout and "| malt | `null` |" in printed.stdout
    written = runner.invoke(cli, ["ladder", "malt", "--write", str(doc)])
    assert written.exit_code == 0, written.output
    assert doc.read_text() == (
        f"before\n<!-- ladder:malt:begin -->\n{ladder_table(malt)}<!-- ladder:malt:end -->\nafter\n"
    )
    refused = runner.invoke(cli, ["ladder", "route", "--write", str(doc)])
    assert refused.exit_code == 2 and "ladder:route:begin" in refused.output
    with pytest.raises(ConfigError):
        write_ladder_table("no markers", malt)
    absent = runner.invoke(cli, ["ladder", "malt", "--write", str(tmp_path / "nowhere.md")])
    # rich wraps the message at the terminal width, inside the path when the path is long
    assert absent.exit_code == 2 and "nowhere.md" in absent.output.replace("\n", "")


def test_a_rate_outside_the_summary_headline_still_gets_a_column() -> None:
    class Wider:
        name = "wide"

        def reference_agent(self):
            return load_app("malt").reference_agent()

        def baselines(self):
            from netarena.common.core.agents import Baseline, NullAgent

            def make() -> NullAgent:
                agent = NullAgent()
                agent.name = "baseline:odd"
                return agent

            return (Baseline("odd", "a | pipe", make, {"by_qualifier:depth": (0.1, 0.25)}),)

    table = ladder_table(Wider())  # type: ignore[arg-type]
    assert table.splitlines()[0].endswith("| by_qualifier:depth | what it does |")
    assert "| wide | `baseline:odd` | - | [0.10, 0.25] | a \\| pipe |" in table
    assert _rows(table)[("wide", "baseline:odd")] == {"by_qualifier:depth": (0.1, 0.25)}
