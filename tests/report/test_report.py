"""``netarena report`` renders real runner results into HTML, PNG and text."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib.image
import pytest
from typer.testing import CliRunner

from netarena.common.cli.root import cli
from netarena.common.core.errors import ConfigError
from netarena.common.core.stats import summarize, wilson
from netarena.common.reporting.report import write_report
from netarena.common.reporting.results import load_results
from netarena.common.reporting.summaries import overlap_matrix, run_summaries

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(toy_results: list[Path], tmp_path_factory: pytest.TempPathFactory):
    return write_report(load_results(toy_results), tmp_path_factory.mktemp("report"))


def test_writes_every_file(report) -> None:
    names = sorted(p.name for p in report.out_dir.iterdir())
    assert names == ["index.html", "rates.png", "summary.json", "summary.txt",
                     "toy-labels.png", "toy-levels.png", "toy-overlap.png", "toy-power.png"]
    for png in report.plots:
        assert png.read_bytes()[:8] == PNG_MAGIC
        height, width = matplotlib.image.imread(png).shape[:2]
        assert width >= 600 and height >= 200, (png.name, width, height)


def test_text_summary_has_rates_intervals_and_breakdowns(report) -> None:
    text = report.text.read_text()
    lines: dict[str, str] = {}
    for line in text.splitlines():  # the first line per agent is its overall row
        if line.split() and line.split()[0] in ("toy-reference", "toy-half", "null"):
            lines.setdefault(line.split()[0], line)
    lo, hi = wilson(120, 120)
    assert f"1.000 [{lo:.3f}, {hi:.3f}]" in lines["toy-reference"]
    lo, hi = wilson(0, 120)
    assert lines["null"].split()[2:5] == ["0.000", f"[{lo:.3f},", f"{hi:.3f}]"]
    half = lines["toy-half"].split()
    assert half[1] == "120" and 0.3 < float(half[2]) < 0.9
    for section in ("-- per level --", "-- per label --",
                    "-- 95% interval overlap, correctness (0 = separable) --"):
        assert section in text
    per_label = text[text.index("-- per label --"):]
    # Labels are listed by level (small L1, medium L2, big and huge L3), not alphabetically.
    positions = [per_label.index(f"\n{label} ") for label in ("small", "medium", "big", "huge")]
    assert positions == sorted(positions)


def test_summary_json_is_recomputed_with_stats(report, toy_results: list[Path]) -> None:
    runs = {run["agent"]: run for run in json.loads(report.json.read_text())["runs"]}
    assert set(runs) == {"toy-reference", "toy-half", "null"}
    null = load_results([toy_results[2]])
    expected = summarize(null, app="toy", agent="null", seed=None)
    assert runs["null"] == expected.model_dump(mode="json")
    assert runs["toy-reference"]["correctness"]["rate"] == 1.0
    assert runs["null"]["correctness"]["rate"] == 0.0
    assert runs["null"]["safety"]["rate"] == 1.0


def test_overlap_matrix_separates_reference_from_null(report, toy_results: list[Path]) -> None:
    runs = run_summaries(load_results(toy_results))["toy"]
    agents = [run.agent for run in runs]
    matrix = overlap_matrix(runs, "correctness")
    n = len(agents)
    assert all(matrix[i][i] == 1.0 for i in range(n))
    assert all(matrix[i][j] == matrix[j][i] for i in range(n) for j in range(n))
    ref, null = agents.index("toy-reference"), agents.index("null")
    assert matrix[ref][null] == 0.0
    # Safety: both never overshoot, so their intervals coincide.
    assert overlap_matrix(runs, "safety")[ref][null] == 1.0


def test_html_links_every_plot_and_names_agents(report) -> None:
    html = report.html.read_text()
    for png in report.plots:
        assert f'src="{png.name}"' in html
    for agent in ("toy-reference", "toy-half", "null"):
        assert agent in html
    assert html.count("<table>") == 1 + 2 + 3  # overall, level, label, three overlap tables


def test_load_results_accepts_dirs_and_deduplicates(toy_results: list[Path]) -> None:
    ref_dir = toy_results[0].parent
    once = load_results([ref_dir])
    twice = load_results([ref_dir, toy_results[0]])
    assert len(once) == len(twice) == 120
    with pytest.raises(ConfigError, match="no results file"):
        load_results([ref_dir / "missing.jsonl"])


def test_empty_results_file_is_rejected(tmp_path: Path) -> None:
    empty = tmp_path / "results.jsonl"
    empty.write_text("\n")
    with pytest.raises(ConfigError, match="no query records"):
        load_results([empty])


def test_cli_report_and_agentbeats(toy_results: list[Path], tmp_path: Path) -> None:
    out, ab = tmp_path / "r", tmp_path / "ab"
    args = ["report", *map(str, toy_results[:2]), "--out", str(out), "--agentbeats", str(ab)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "toy-reference" in result.stdout and "per label" in result.stdout
    assert (out / "index.html").is_file()
    assert sorted(p.name for p in ab.iterdir()) == ["toy-toy-half.json", "toy-toy-reference.json"]
    bad = CliRunner().invoke(cli, ["report", str(tmp_path / "nope.jsonl"), "--out", str(out)])
    assert bad.exit_code == 2


def test_report_of_merged_apps(toy_results: list[Path], tmp_path: Path) -> None:
    """Two apps in one report: one rates panel each, per-app breakdown files."""
    other = tmp_path / "other.jsonl"
    lines = toy_results[0].read_text().splitlines()
    other.write_text("\n".join(
        json.dumps({**json.loads(line), "app": "toy2"}) for line in lines) + "\n")
    report = write_report(load_results([toy_results[1], other]), tmp_path / "out")
    assert {p.name for p in report.plots} >= {"toy-levels.png", "toy2-overlap.png"}
    assert "== toy2 ==" in report.text.read_text()
    shutil.rmtree(tmp_path / "out")
