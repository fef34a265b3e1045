"""The audit finds a planted tell and passes a twin-drawn design (toy firewall instances).

Each toy instance is a firewall of design rules and one or two faults drawn from the same
distribution of positions, verdicts, comments and priorities; the planted variant gives every
fault a comment no design rule carries (issue 35's "a fault kind always given a comment").
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from typer.testing import CliRunner

from netarena.common.audit import (
    MIN_FAULTS,
    AuditReport,
    KindResult,
    ShapeModel,
    classify_kinds,
    run_audit,
)
from netarena.common.audit.classify import instance_interval
from netarena.common.core.evidence import AuditCheck, AuditObject
from netarena.common.core.types import Query
from tests.helpers.marks import NEEDS_SKLEARN
from tests.helpers.toy import ToyApp, ToyConfig

pytestmark = NEEDS_SKLEARN

_NOTES = ("backup", "monitoring", "vendor", "")


class _FirewallConfig(ToyConfig):
    planted: bool = False
    """Every fault rule carries the comment 'temp' that no design rule carries."""


class _FirewallApp(ToyApp):
    config_model = _FirewallConfig
    config: _FirewallConfig

    def audit_objects(self, query: Query) -> Sequence[AuditObject]:
        rng = random.Random(query.seed)
        count = rng.randint(6, 12)
        faults = set(rng.sample(range(count), query.level if query.level < 3 else 2))
        objects = []
        for position in range(count):
            fault = position in faults
            note = "temp" if fault and self.config.planted else rng.choice(_NOTES)
            objects.append(AuditObject(
                kind="rule",
                fields={"verdict": rng.choice(("drop", "reject")), "comment": note,
                        "position": position / count, "priority": rng.choice((100, 200, 1000))},
                fault=fault,
            ))
            objects.append(AuditObject(
                kind="route", fields={"metric": rng.choice((0, 10, 100))}, fault=False
            ))
        return objects

    def audit_checks(self, queries: Sequence[Query]) -> Sequence[AuditCheck]:
        return [AuditCheck(name="bound:exactly->at least", queries=len(queries),
                           judged_wrong=len(queries))]


def test_twin_drawn_faults_are_no_tell() -> None:
    report = run_audit(_FirewallApp(), queries=300, seed=1)
    rule = next(k for k in report.kinds if k.kind == "rule")
    assert rule.auc is not None and rule.auc <= 0.6
    assert not rule.tell
    assert next(k for k in report.kinds if k.kind == "route").note == "no faults of this kind"
    assert report.passed, report.tells


def test_a_planted_comment_is_a_tell_and_fails_the_audit() -> None:
    report = run_audit(_FirewallApp({"planted": True}), queries=300, seed=1)
    rule = next(k for k in report.kinds if k.kind == "rule")
    assert rule.tell and rule.auc is not None and rule.auc > 0.95
    assert rule.recall_at_1pct is not None and rule.recall_at_1pct > 0.9
    assert rule.within_auc is not None and rule.within_auc > 0.95
    assert rule.half_auc is not None and rule.half_auc > 0.95  # learnt from a few
    assert any("comment=temp" in name for name, _ in rule.top_features)
    assert not report.passed and report.tells == ["rule"]


def test_a_tell_of_size_alone_is_pooled_not_within_an_instance() -> None:
    """One fault per instance sits among fewer objects in a small one: the instance's size
    ranks faults above design objects across instances, never inside one."""
    rng = random.Random(3)

    def instance(name: str) -> list[AuditObject]:
        size = rng.choice((4, 16))
        fault = rng.randrange(size)
        return [AuditObject(kind="rule", fields={"lines": size}, fault=i == fault,
                            instance=name) for i in range(size)]

    (rule,) = classify_kinds([obj for i in range(300) for obj in instance(str(i))])
    assert rule.auc is not None and rule.auc > 0.65 and rule.within_auc == 0.5


def test_a_tell_learnt_value_by_value_climbs_with_data() -> None:
    """Faults take 50 of 500 values: each must be seen to be learnt, so the AUC on half
    the learning instances is well below the full one's, and the full one is a floor too."""
    rng = random.Random(0)

    def instance(name: str) -> list[AuditObject]:
        return [AuditObject(kind="rule", fault=i == 0, instance=name, fields={
            "value": f"v{rng.randrange(0, 500, 10) if i == 0 else rng.randrange(500)}"})
            for i in range(10)]

    (rule,) = classify_kinds([obj for i in range(200) for obj in instance(f"a{i}")])
    assert rule.auc is not None and rule.half_auc is not None
    assert rule.auc > 0.7 and rule.auc - rule.half_auc > 0.05


def test_a_kind_only_faults_have_is_a_tell() -> None:
    only = [AuditObject(kind="mtu", fields={"mtu": 68}, fault=True, instance=str(i))
            for i in range(4)]
    design = [AuditObject(kind="rule", fields={"a": "x"}, fault=False, instance=str(i))
              for i in range(4)]
    (mtu, _) = classify_kinds(only + design)
    assert mtu.kind == "mtu" and mtu.auc == 1.0 and mtu.tell


def _kind(auc: float, faults: int, ci: tuple[float, float]) -> KindResult:
    return KindResult(kind="rule", objects=700, faults=faults, auc=auc, auc_ci95=ci)


def test_an_auc_over_the_line_on_few_faults_is_unsettled_not_a_tell() -> None:
    """On eight faults an AUC of 0.66 is what chance gives in a third of audits: the
    audit neither passes nor calls it a tell, and says how large an audit would settle it."""
    few = _kind(0.66, 8, (0.46, 0.86))
    assert few.unsettled and not few.tell and not few.settled
    report = AuditReport(app="toy", labels=[], seed=0, queries=400, kinds=[few])
    assert not report.passed and report.unsettled == ["rule"] and report.tells == []
    assert report.queries_to_settle == -(-400 * MIN_FAULTS // 8)
    # settled: enough faults, or an interval wholly on one side of the line
    assert _kind(0.62, MIN_FAULTS, (0.52, 0.72)).tell
    assert _kind(0.97, 8, (0.79, 1.0)).tell
    # on two faults the interval (a normal approximation) settles nothing
    assert _kind(0.904, 2, (0.62, 1.0)).unsettled
    assert not _kind(0.55, 8, (0.35, 0.75)).unsettled
    assert AuditReport(app="toy", labels=[], seed=0, queries=400,
                       kinds=[_kind(0.55, 8, (0.35, 0.75))]).passed


def _clustered(seed: int, together: str) -> tuple[list[bool], list[float], list[str]]:
    """300 instances of 12 scored objects sharing an instance's random shift.

    ``together="all"``: one fault per instance, the shift moving every object;
    ``"faults"``: three faults in every other instance, the shift moving the faults alone.
    """
    rng = random.Random(seed)
    labels, scores, instances = [], [], []
    for i in range(300):
        shift = rng.gauss(0, 1)
        faults = 1 if together == "all" else 3 * (i % 2)
        for j in range(12):
            fault = j < faults
            labels.append(fault)
            scores.append(0.4 * fault + shift * (together == "all" or fault) + rng.gauss(0, 0.3))
            instances.append(str(i))
    return labels, scores, instances


@pytest.mark.parametrize("together", ["all", "faults"])
def test_the_auc_interval_resamples_instances_and_covers_what_audits_spread(
    together: str,
) -> None:
    """Objects of one instance move together. Hanley and McNeil's interval, which treats
    each as its own draw, was 2.9 times as wide as what fresh audits spread in the first
    case and half as wide in the second; resampling instances gives the spread."""
    from sklearn.metrics import roc_auc_score

    aucs = sorted(roc_auc_score(*_clustered(seed, together)[:2]) for seed in range(100, 300))
    low, high = instance_interval(*_clustered(1, together))
    spread = aucs[-6] - aucs[5]  # the middle 95% of 200 fresh audits
    assert abs((high - low) - spread) < 0.25 * spread
    assert low < roc_auc_score(*_clustered(1, together)[:2]) < high


def test_a_missed_metamorphic_check_fails_the_audit() -> None:
    check = AuditCheck(name="bound:below->at most", queries=61, judged_wrong=8)
    assert not check.passed and AuditCheck(name="x", queries=0, judged_wrong=0).passed


def test_the_shape_model_flags_planted_faults_not_design() -> None:
    app = _FirewallApp({"planted": True})
    queries = [app.generate(seed, 1 + seed % 3) for seed in range(200)]
    train = [o.model_copy(update={"instance": q.id}) for q in queries[:150]
             for o in app.audit_objects(q)]
    model = ShapeModel().fit(train)
    flagged = caught = false = 0
    for q in queries[150:]:
        objects = list(app.audit_objects(q))
        for obj, flag in zip(objects, model.flags(objects), strict=True):
            flagged += flag
            caught += flag and obj.fault
            false += flag and not obj.fault
    assert caught > 0.9 * flagged and false == 0


def test_audit_command_exits_1_on_a_tell(monkeypatch: pytest.MonkeyPatch) -> None:
    from netarena.common.cli.root import cli
    from netarena.common.core import app as app_module

    monkeypatch.setattr(app_module, "load_app", lambda name, config=None: _FirewallApp(
        {"planted": name == "planted"}))
    runner = CliRunner()
    planted = runner.invoke(cli, ["audit", "planted", "--queries", "200", "--json"])
    assert planted.exit_code == 1, planted.output
    assert '"tells": [\n    "rule"\n  ]' in planted.output
    clean = runner.invoke(cli, ["audit", "clean", "--queries", "200"])
    assert clean.exit_code == 0, clean.output
    assert "rule" in clean.output and "bound:exactly->at least" in clean.output
