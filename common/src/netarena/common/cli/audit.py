"""``netarena audit``: look for faults an agent could spot by their looks alone.

Prints, per object kind, the best classifier's ROC AUC on instances it did not learn from
(cross-fitted by instance) with its interval, what it was when learning from half the
instances (an AUC still climbing with data is a floor), within instances (what a shape agent
can use on one query), the faults it catches at 1% false positives and its strongest
indicators, then the app's metamorphic checks; ``--json`` prints the report instead. Exits 1
when the audit finds a tell or a kind over the line on too few faults to settle it (then it
says about how many queries would), or a check fails; 2 on a bad request.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from netarena.common.cli.console import print_table, setup_logging
from netarena.common.core.errors import ConfigError

__all__ = ["audit_command", "register"]

err = Console(stderr=True)


def _kinds_table(report: object) -> Table:
    from netarena.common.audit import MIN_FAULTS, AuditReport

    assert isinstance(report, AuditReport)
    table = Table(
        title=f"{report.app} audit · {report.queries} instances in {report.folds} folds "
        f"· seed {report.seed} · tell above AUC {report.tell_auc:.2f}, settled on "
        f"{MIN_FAULTS} faults"
    )
    for col in ("kind", "objects", "faults", "AUC", "95%", "half data", "within",
                "caught @1% FP", "top features", "verdict"):
        table.add_column(col, justify="left" if col in ("kind", "top features", "verdict")
                         else "right")
    for k in report.kinds:
        ci = f"[{k.auc_ci95[0]:.2f}, {k.auc_ci95[1]:.2f}]" if k.auc_ci95 else "-"
        table.add_row(
            k.kind,
            str(k.objects),
            str(k.faults),
            "-" if k.auc is None else f"{k.auc:.3f}",
            ci,
            "-" if k.half_auc is None else f"{k.half_auc:.3f}",
            "-" if k.within_auc is None else f"{k.within_auc:.3f}",
            "-" if k.recall_at_1pct is None else f"{k.recall_at_1pct:.2f}",
            ", ".join(name for name, _ in k.top_features[:3]) or k.note,
            "TELL" if k.tell else "unsettled" if k.unsettled else "ok",
        )
    return table


def audit_command(
    app_name: Annotated[str, typer.Argument(metavar="APP", help="malt, route or k8s")],
    queries: Annotated[int, typer.Option("--queries", "-n", min=2)] = 400,
    seed: Annotated[int, typer.Option(help="the plan's seed")] = 0,
    labels: Annotated[
        str | None, typer.Option(help="comma-separated labels or label sets (e.g. static)")
    ] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="instances read at once")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Train classifiers to tell faults from design by looks; fail on any tell."""
    from netarena.common.audit import MIN_FAULTS, run_audit
    from netarena.common.core.app import load_app

    setup_logging(logging.WARNING)
    try:
        app = load_app(app_name)
        report = run_audit(
            app,
            queries=queries,
            seed=seed,
            labels=[x for x in (labels or "").split(",") if x],
            concurrency=concurrency,
        )
    except (ConfigError, ImportError) as exc:
        hint = " (pip install 'netarena[audit]')" if isinstance(exc, ImportError) else ""
        err.print(f"[red]error:[/red] {exc}{hint}")
        raise typer.Exit(2) from exc
    if as_json:
        typer.echo(json.dumps(
            {**report.model_dump(mode="json"), "tells": report.tells,
             "unsettled": report.unsettled, "queries_to_settle": report.queries_to_settle,
             "failed_checks": report.failed_checks, "passed": report.passed},
            indent=2,
        ))
    else:
        if report.kinds:
            print_table(_kinds_table(report))
        if report.checks:
            checks = Table(title=f"{report.app} metamorphic checks")
            for col in ("misreading", "queries stating it", "judged wrong", "need", "verdict"):
                checks.add_column(col, justify="left" if col == "misreading" else "right")
            for c in report.checks:
                checks.add_row(c.name, str(c.queries), f"{c.rate:.3f}", f"{c.threshold:.2f}",
                               "ok" if c.passed else "MISSED")
            print_table(checks)
        for query_id, reason in report.failed.items():
            err.print(f"unread: {query_id}: {reason}")
        err.print("audit: " + ("passed" if report.passed else "FAILED: " + "; ".join(
            [f"tells {', '.join(report.tells)}"] * bool(report.tells)
            + [f"unsettled {', '.join(report.unsettled)} (over the line on fewer than "
               f"{MIN_FAULTS} faults: a tell or chance; about "
               f"{report.queries_to_settle} queries would settle them)"]
            * bool(report.unsettled)
            + [f"checks {', '.join(report.failed_checks)}"] * bool(report.failed_checks)
            + [f"{len(report.failed)} instances unread"] * bool(report.failed)
        )))
    if not report.passed:
        raise typer.Exit(1)


def register(cli: typer.Typer) -> None:
    """Add ``audit`` to the ``netarena`` command."""
    cli.command("audit")(audit_command)
