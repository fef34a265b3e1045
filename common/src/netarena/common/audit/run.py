"""``run_audit``: generate instances, read their objects, and look for tells.

Every instance is judged by classifiers that learnt on other instances (``classify_kinds``
cross-fits them by instance), as a shortcut-taker would learn on instances it has seen and
use what it learnt on new ones. Metamorphic checks (``App.audit_checks``) run over all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from pydantic import BaseModel, ConfigDict

from netarena.common.audit.classify import (
    FOLDS,
    MIN_FAULTS,
    TELL_AUC,
    KindResult,
    classify_kinds,
)
from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError, NetArenaError
from netarena.common.core.evidence import AuditCheck, AuditObject
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.types import Query

__all__ = ["AuditReport", "audit_queries", "run_audit", "collect_objects", "MAX_FAILED_SHARE"]

log = logging.getLogger(__name__)

MAX_FAILED_SHARE = 0.02
"""Most instances whose objects could not be read before the audit itself fails."""

class AuditReport(BaseModel):
    """What an audit found: per object kind, how well looks alone give faults away."""

    model_config = ConfigDict(frozen=True)

    app: str
    """The audited app."""
    labels: list[str]
    """The labels (or label sets) the plan drew from; empty for the app's default plan."""
    seed: int
    """The plan's seed."""
    queries: int
    """Instances generated, each judged by classifiers that learnt on the others' folds."""
    folds: int = FOLDS
    """Folds the instances were dealt into."""
    failed: dict[str, str] = {}
    """Query id → why its objects could not be read."""
    kinds: list[KindResult] = []
    """One result per object kind."""
    checks: list[AuditCheck] = []
    """Metamorphic checks, when the app has any."""
    tell_auc: float = TELL_AUC
    """The AUC above which a kind is a tell."""

    @property
    def tells(self) -> list[str]:
        """Kinds whose faults looks alone give away."""
        return [k.kind for k in self.kinds if k.tell]

    @property
    def unsettled(self) -> list[str]:
        """Kinds over the line on too few faults to say whether they are tells."""
        return [k.kind for k in self.kinds if k.unsettled]

    @property
    def queries_to_settle(self) -> int | None:
        """About how many queries would settle every unsettled kind; None when none is.

        The audit's size scaled by the rarest one's shortfall of ``MIN_FAULTS`` faults.
        """
        counts = [k.faults for k in self.kinds if k.unsettled]
        if not counts:
            return None
        return -(-self.queries * MIN_FAULTS // max(min(counts), 1))

    @property
    def failed_checks(self) -> list[str]:
        """Metamorphic checks that missed too many misreadings."""
        return [c.name for c in self.checks if not c.passed]

    @property
    def passed(self) -> bool:
        """No kind over the line (settled or not), every check passed, all but a few read."""
        return (
            not self.tells
            and not self.unsettled
            and not self.failed_checks
            and len(self.failed) <= MAX_FAILED_SHARE * max(self.queries, 1)
        )


def collect_objects(
    app: App, queries: Sequence[Query], concurrency: int = 1
) -> tuple[list[AuditObject], dict[str, str]]:
    """Every query's labelled objects (``instance`` set to its id), and the failures.

    Args:
        app: The app whose ``audit_objects`` reads each instance.
        queries: The instances.
        concurrency: Instances read at once (capped by ``app.max_concurrency``).
    """
    workers = min(concurrency, app.max_concurrency or concurrency, max(len(queries), 1))

    def read(query: Query) -> list[AuditObject] | str:
        try:
            return [o.model_copy(update={"instance": query.id}) for o in app.audit_objects(query)]
        except ConfigError:  # the app has no audit, or cannot audit this plan: not a failure
            raise
        except NetArenaError as exc:
            log.warning("audit: %s could not be read: %s", query.id, exc)
            return f"{type(exc).__name__}: {exc}"

    objects: list[AuditObject] = []
    failed: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for query, found in zip(queries, pool.map(read, queries), strict=True):
            if isinstance(found, str):
                failed[query.id] = found
            else:
                objects.extend(found)
    return objects, failed


def audit_queries(app: App, queries: int, seed: int, labels: Sequence[str] = ()) -> list[Query]:
    """The instances an audit reads: a plan of ``queries`` at ``seed``.

    Raises:
        ConfigError: The plan is invalid.
    """
    return list(plan_queries(app, QueryPlan(num_queries=queries, seed=seed,
                                            labels=tuple(labels) or None)))


def run_audit(
    app: App,
    queries: int = 400,
    seed: int = 0,
    labels: Sequence[str] = (),
    concurrency: int = 1,
    folds: int = FOLDS,
) -> AuditReport:
    """Audit ``app`` on ``queries`` generated instances.

    Args:
        app: The app (its ``audit_objects`` must be implemented).
        queries: Instances in all, each judged out of fold.
        seed: The plan's seed.
        labels: Labels or label sets to draw from (the default plan's when empty).
        concurrency: Instances read at once.
        folds: Folds the instances are dealt into.

    Raises:
        ConfigError: The app has no audit, or the plan is invalid.
    """
    planned = audit_queries(app, queries, seed, labels)
    objects, failed = collect_objects(app, planned, concurrency)
    return AuditReport(
        app=app.name,
        labels=list(labels),
        seed=seed,
        queries=len(planned),
        folds=folds,
        failed=failed,
        kinds=classify_kinds(objects, folds),
        checks=list(app.audit_checks(planned)),
    )
