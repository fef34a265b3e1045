"""Adversarial validation: can a classifier tell a fault from the design by its looks alone?

For every object kind, two classifiers (a logistic regression and a gradient-boosted tree,
scikit-learn) are cross-fitted by instance: the instances are dealt into ``FOLDS`` folds,
and each fold's objects are scored by classifiers trained on the other folds' instances
only, as a shortcut-taker would learn on instances it has seen and use what it learnt on
new ones. The ROC AUC of those out-of-fold scores says how well looks alone rank faults
above design objects: 0.5 is chance, 1.0 a perfect tell. Every instance is judged once, so
an audit of N queries judges N fresh instances with classifiers that learnt from 4N/5; a
single split (60% learning, 40% judged) measured a weaker classifier on fewer faults, and
its AUCs swung by ±0.05 from seed to seed. A kind whose faults have no design objects at all
is a tell by construction (AUC 1.0): its mere presence gives the fault away.

An AUC on a few faults is mostly chance: with seven, classifiers that know nothing
pass 0.60 in 10-50% of audits (``benchmarks/audit_null.py``). A kind over the line
is a tell when its AUC is settled, on ``MIN_FAULTS`` faults or with its whole interval
above the line; otherwise it is unsettled, and only a larger audit says which it is.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from netarena.common.audit.features import featurize
from netarena.common.core.evidence import AuditObject

__all__ = [
    "FOLDS", "MIN_FAULTS", "TELL_AUC", "KindResult", "classify_kinds", "deal_folds",
    "instance_features", "instance_interval", "make_classifiers", "out_of_fold",
]

TELL_AUC = 0.60
"""A kind whose faults a classifier ranks above its design objects with a higher AUC is a tell."""

FOLDS = 5
"""Folds the instances are dealt into: each is judged by classifiers trained on the rest."""

MIN_FAULTS = 30
"""Faults on which a kind's AUC is settled whatever its interval. With 30 its standard
error is about 0.055, and classifiers that know nothing pass ``TELL_AUC`` in one audit of
ten to twenty; with 7, in 10-50% (``benchmarks/audit_null.py`` on BGP instances)."""

INTERVAL_FAULTS = 5
"""Fewest faults on which the interval can settle a kind. Resampling one to four faults
gives no interval worth the name (a normal approximation was far too narrow there too):
on two, a kind that looks says nothing about reaches an AUC of 0.90 about one time in
fifty, and a dynamic audit has some forty kinds (one BGP kind was called a tell on 2
faults at 0.904, its interval [0.62, 1.00], 2026-12-06)."""

BOOTSTRAP_REPS = 400
"""Instance resamplings behind an AUC's interval (its ends moved by at most 0.003 among
ten sets of draws on 300 instances)."""

FPR_CAP = 0.01
"""False-positive rate at which ``KindResult.recall_at_1pct`` counts caught faults."""


class KindResult(BaseModel):
    """How well looks alone give away the faults of one object kind."""

    model_config = ConfigDict(frozen=True)

    kind: str
    """The object kind."""
    objects: int
    """Objects of this kind, every one scored out of fold."""
    faults: int
    """Of those, faults."""
    auc: float | None
    """Best ROC AUC of the classifiers' out-of-fold scores; ``None`` when not measurable
    (no faults of this kind)."""
    auc_ci95: tuple[float, float] | None = None
    """95% interval of ``auc``, resampling instances (``instance_interval``)."""
    auc_by_model: dict[str, float] = {}
    """Each classifier's out-of-fold AUC (``logistic``, ``boosted``)."""
    within_auc: float | None = None
    """The best classifier's AUC within instances: the chance it scores a fault above
    a design object of the same instance (averaged over instances holding both). This is
    what a shape agent can use on the query in front of it; the pooled ``auc`` also counts
    what sets instances apart, such as their size (a fault sits among fewer objects of
    its kind in a small network), which no single query shows."""
    half_auc: float | None = None
    """The best classifier's AUC when each fold's classifier learns from every other one of
    its training instances.
    Well below ``auc``, the AUC still climbs with data: a shortcut-taker who generates more
    instances than the audit learns from would tell more, and ``auc`` is a floor."""
    recall_at_1pct: float | None = None
    """Share of faults the best classifier flags at a 1% false-positive rate."""
    top_features: list[tuple[str, float]] = []
    """The strongest fault indicators (feature, coefficient) of a logistic regression fitted
    on every instance."""
    note: str = ""
    """Why the AUC is what it is when it was not measured by a classifier."""

    @property
    def settled(self) -> bool:
        """The AUC says which side of ``TELL_AUC`` the kind is on.

        It was not measured by a classifier, or was on ``MIN_FAULTS`` faults, or its
        interval, on ``INTERVAL_FAULTS`` faults or more, lies on one side.
        """
        if self.auc_ci95 is None or self.faults >= MIN_FAULTS:
            return True
        if self.faults < INTERVAL_FAULTS:
            return False
        low, high = self.auc_ci95
        return low > TELL_AUC or high <= TELL_AUC

    @property
    def over(self) -> bool:
        """The AUC is over ``TELL_AUC``, settled or not."""
        return self.auc is not None and self.auc > TELL_AUC

    @property
    def tell(self) -> bool:
        """Looks alone give this kind's faults away, beyond what chance would on this many."""
        return self.over and self.settled

    @property
    def unsettled(self) -> bool:
        """Over ``TELL_AUC`` on too few faults to tell a tell from chance."""
        return self.over and not self.settled


def instance_features(objects: Sequence[AuditObject]) -> list[dict[str, float]]:
    """Features of every object, computed instance by instance (context stays within one)."""
    by_instance: dict[str, list[int]] = defaultdict(list)
    for index, obj in enumerate(objects):
        by_instance[obj.instance].append(index)
    out: list[dict[str, float]] = [{} for _ in objects]
    for indices in by_instance.values():
        for index, features in zip(indices, featurize([objects[i] for i in indices]), strict=True):
            out[index] = features
    return out


def make_classifiers() -> dict[str, Any]:
    """Fresh, deterministic classifiers by name; each takes a dense feature matrix."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import MaxAbsScaler

    return {
        "logistic": make_pipeline(
            MaxAbsScaler(), LogisticRegression(max_iter=5000, class_weight="balanced")
        ),
        "boosted": HistGradientBoostingClassifier(
            max_iter=150, class_weight="balanced", random_state=0
        ),
    }


def instance_interval(labels: Sequence[bool], scores: Sequence[float],
                      instances: Sequence[str], reps: int = BOOTSTRAP_REPS) -> tuple[float, float]:
    """95% interval of the AUC of ``scores``, resampling whole instances.

    The objects of one instance are not independent draws: they share a network, and the
    audit generates instances, not objects. An interval that treats every object as its
    own draw (Hanley and McNeil's) is too narrow where an instance's faults move together
    and too wide where its faults and design objects do (both in
    ``tests/common/test_audit.py``), so instances are drawn with replacement and the AUC
    recomputed on the objects they bring: a percentile interval. The out-of-fold scores
    are kept, so the classifiers' own variance is not in it. Ties count half, as in the AUC.
    """
    import numpy as np

    y = np.asarray(labels, dtype=bool)
    _, owner = np.unique(np.asarray(instances), return_inverse=True)
    _, level = np.unique(np.asarray(scores, dtype=float), return_inverse=True)
    count, levels = int(owner.max()) + 1, int(level.max()) + 1
    rng = np.random.default_rng(0)
    aucs = []
    for _ in range(reps):
        weight = np.bincount(rng.integers(0, count, count), minlength=count)[owner]
        pos = np.bincount(level, weights=weight * y, minlength=levels)
        neg = np.bincount(level, weights=weight * ~y, minlength=levels)
        if pos.sum() and neg.sum():
            below = np.cumsum(neg) - neg
            aucs.append(float((pos * (below + neg / 2)).sum() / (pos.sum() * neg.sum())))
    if not aucs:  # no draw held both a fault and a design object: nothing is known
        return 0.0, 1.0
    low, high = np.percentile(aucs, [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


def _recall_at(labels: Sequence[bool], scores: Sequence[float], cap: float) -> float:
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(labels, scores)
    return float(max(t for f, t in zip(fpr, tpr, strict=True) if f <= cap))


def _within_auc(labels: Sequence[bool], scores: Sequence[float],
                instances: Sequence[str]) -> float | None:
    from sklearn.metrics import roc_auc_score

    groups: dict[str, list[int]] = defaultdict(list)
    for index, instance in enumerate(instances):
        groups[instance].append(index)
    aucs = [
        float(roc_auc_score([labels[i] for i in group], [scores[i] for i in group]))
        for group in groups.values()
        if 0 < sum(labels[i] for i in group) < len(group)
    ]
    return round(sum(aucs) / len(aucs), 4) if aucs else None


def _top_features(model: Any, names: Sequence[str], count: int = 5) -> list[tuple[str, float]]:
    coefs = model[-1].coef_[0]
    order = sorted(range(len(names)), key=lambda i: -coefs[i])[:count]
    return [(names[i], round(float(coefs[i]), 3)) for i in order if coefs[i] > 0]


Row = tuple[dict[str, float], bool, str]  # an object's features, fault label, instance


def deal_folds(instances: Sequence[str], folds: int) -> dict[str, int]:
    """Each instance's fold.

    Dealt round-robin in a fixed shuffle, so folds differ in size by at most one and no order
    of the ids (levels, labels) lines up with them.
    """
    order = sorted(set(instances))
    random.Random(0).shuffle(order)
    return {instance: i % folds for i, instance in enumerate(order)}


def out_of_fold(name: str, x: Any, y: Sequence[bool], folds: Sequence[int],
                keep: Sequence[bool] | None = None) -> list[float]:
    """Each object's score from classifier ``name`` trained on the other folds' objects.

    Only the objects ``keep`` keeps are learnt from. A fold whose training part holds one
    class only gets the score of a classifier that knows nothing (0.5).
    """
    scores = [0.5] * len(y)
    for fold in sorted(set(folds)):
        train = [i for i, f in enumerate(folds) if f != fold and (keep is None or keep[i])]
        test = [i for i, f in enumerate(folds) if f == fold]
        if len({y[i] for i in train}) < 2:
            continue
        model = make_classifiers()[name].fit(x[train], [y[i] for i in train])
        for i, score in zip(test, model.predict_proba(x[test])[:, 1], strict=True):
            scores[i] = float(score)
    return scores


def _judge_kind(kind: str, rows: list[Row], dealt: dict[str, int]) -> KindResult:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.metrics import roc_auc_score

    y = [fault for _, fault, _ in rows]
    instances = [instance for _, _, instance in rows]
    positives = sum(y)
    counts = {"objects": len(rows), "faults": positives}
    if positives == 0:
        return KindResult(kind=kind, auc=None, note="no faults of this kind", **counts)
    if positives == len(rows):
        return KindResult(kind=kind, auc=1.0, note="no design object of this kind", **counts)
    vectorizer = DictVectorizer(sparse=False)
    x = vectorizer.fit_transform([f for f, _, _ in rows])  # names only: no label is read
    fold = [dealt[i] for i in instances]
    scores = {name: out_of_fold(name, x, y, fold) for name in make_classifiers()}
    aucs = {name: round(float(roc_auc_score(y, s)), 4) for name, s in scores.items()}
    best = max(aucs, key=lambda name: aucs[name])
    halves = set(sorted(set(instances))[::2])  # every other instance, in sorted order
    half = out_of_fold(best, x, y, fold, keep=[i in halves for i in instances])
    logistic = make_classifiers()["logistic"].fit(x, y)
    return KindResult(
        kind=kind,
        auc=aucs[best],
        auc_ci95=instance_interval(y, scores[best], instances),
        auc_by_model=aucs,
        within_auc=_within_auc(y, scores[best], instances),
        half_auc=round(float(roc_auc_score(y, half)), 4),
        recall_at_1pct=round(_recall_at(y, scores[best], FPR_CAP), 4),
        top_features=_top_features(logistic, list(vectorizer.get_feature_names_out())),
        **counts,
    )


def classify_kinds(objects: Sequence[AuditObject], folds: int = FOLDS) -> list[KindResult]:
    """Cross-fit the classifiers by instance and judge every object out of fold, per kind.

    Args:
        objects: Labelled objects (``instance`` set on each).
        folds: Folds the instances are dealt into.

    Returns:
        One ``KindResult`` per kind, sorted by kind.
    """
    rows: dict[str, list[Row]] = defaultdict(list)
    for obj, features in zip(objects, instance_features(objects), strict=True):
        rows[obj.kind].append((features, obj.fault, obj.instance))
    dealt = deal_folds([obj.instance for obj in objects], folds)
    return [_judge_kind(kind, kind_rows, dealt) for kind, kind_rows in sorted(rows.items())]
