"""Adversarial validation: can a classifier tell a fault from the design by its looks alone?

For every object kind, two classifiers (a logistic regression and a gradient-boosted tree,
scikit-learn) are trained on the objects of one set of instances and judged on the objects of
fresh instances. The ROC AUC says how well looks alone rank faults above design objects: 0.5
is chance, 1.0 a perfect tell. A kind whose faults have no design objects at all is a tell by
construction (AUC 1.0): its mere presence gives the fault away.

An AUC on a few fresh faults is mostly chance: with seven, classifiers that know nothing
pass 0.60 in 10-50% of audits (``benchmarks/audit_null.py``). A kind over the line
is a tell when its AUC is settled, on ``MIN_FAULTS`` fresh faults or with its whole interval
above the line; otherwise it is unsettled, and only a larger audit says which it is.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from netarena.common.audit.features import featurize
from netarena.common.core.evidence import AuditObject

__all__ = [
    "MIN_FAULTS", "TELL_AUC", "KindResult", "classify_kinds", "instance_features",
    "make_classifiers",
]

TELL_AUC = 0.60
"""A kind whose faults a classifier ranks above its design objects with a higher AUC is a tell."""

MIN_FAULTS = 30
"""Fresh faults on which a kind's AUC is settled whatever its interval. With 30 its standard
error is about 0.055, and classifiers that know nothing pass ``TELL_AUC`` in one audit of
ten to twenty; with 7, in 10-50% (``benchmarks/audit_null.py`` on BGP instances)."""

FPR_CAP = 0.01
"""False-positive rate at which ``KindResult.recall_at_1pct`` counts caught faults."""


class KindResult(BaseModel):
    """How well looks alone give away the faults of one object kind."""

    model_config = ConfigDict(frozen=True)

    kind: str
    """The object kind."""
    train_objects: int
    """Objects of this kind in the training instances."""
    train_faults: int
    """Of those, faults."""
    test_objects: int
    """Objects of this kind in the fresh (test) instances."""
    test_faults: int
    """Of those, faults."""
    auc: float | None
    """Best ROC AUC of the classifiers on the test instances; ``None`` when not measurable
    (no faults of this kind, or one class missing from the training set)."""
    auc_ci95: tuple[float, float] | None = None
    """95% interval of ``auc`` (Hanley and McNeil's standard error)."""
    auc_by_model: dict[str, float] = {}
    """Each classifier's test AUC (``logistic``, ``boosted``)."""
    within_auc: float | None = None
    """The best classifier's AUC within instances: the chance it scores a fresh fault above
    a design object of the same instance (averaged over instances holding both). This is
    what a shape agent can use on the query in front of it; the pooled ``auc`` also counts
    what sets instances apart, such as their size (a fault sits among fewer objects of
    its kind in a small network), which no single query shows."""
    half_auc: float | None = None
    """The best classifier's test AUC when it learns from every other training instance.
    Well below ``auc``, the AUC still climbs with data: a shortcut-taker who generates more
    instances than the audit learns from would tell more, and ``auc`` is a floor."""
    recall_at_1pct: float | None = None
    """Share of test faults the best classifier flags at a 1% false-positive rate."""
    top_features: list[tuple[str, float]] = []
    """The logistic regression's strongest fault indicators (feature, coefficient)."""
    note: str = ""
    """Why the AUC is what it is when it was not measured by a classifier."""

    @property
    def settled(self) -> bool:
        """The AUC says which side of ``TELL_AUC`` the kind is on.

        It was not measured by a classifier, or was on ``MIN_FAULTS`` fresh faults, or its
        interval lies on one side.
        """
        if self.auc_ci95 is None or self.test_faults >= MIN_FAULTS:
            return True
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
        """Over ``TELL_AUC`` on too few fresh faults to tell a tell from chance."""
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


def _auc_interval(auc: float, positives: int, negatives: int) -> tuple[float, float]:
    q1, q2 = auc / (2 - auc), 2 * auc * auc / (1 + auc)
    variance = (
        auc * (1 - auc)
        + (positives - 1) * (q1 - auc * auc)
        + (negatives - 1) * (q2 - auc * auc)
    ) / (positives * negatives)
    half = 1.96 * math.sqrt(max(variance, 0.0))
    return (max(0.0, auc - half), min(1.0, auc + half))


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


def _half(train: Sequence[tuple[dict[str, float], bool, str]]) -> list[int]:
    """The objects of half the training instances: every other one in sorted order."""
    kept = set(sorted({instance for _, _, instance in train})[::2])
    return [i for i, (_, _, instance) in enumerate(train) if instance in kept]


def _half_auc(name: str, x_half: Any, y_half: Sequence[bool], x_test: Any,
              y_test: Sequence[bool]) -> float | None:
    from sklearn.metrics import roc_auc_score

    if len(set(y_half)) < 2:
        return None
    model = make_classifiers()[name].fit(x_half, y_half)
    return round(float(roc_auc_score(y_test, model.predict_proba(x_test)[:, 1])), 4)


def _top_features(model: Any, names: Sequence[str], count: int = 5) -> list[tuple[str, float]]:
    coefs = model[-1].coef_[0]
    order = sorted(range(len(names)), key=lambda i: -coefs[i])[:count]
    return [(names[i], round(float(coefs[i]), 3)) for i in order if coefs[i] > 0]


def _judge_kind(
    kind: str,
    train: list[tuple[dict[str, float], bool, str]],
    test: list[tuple[dict[str, float], bool, str]],
) -> KindResult:
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.metrics import roc_auc_score

    y_train, y_test = [y for _, y, _ in train], [y for _, y, _ in test]
    counts = {
        "train_objects": len(train), "train_faults": sum(y_train),
        "test_objects": len(test), "test_faults": sum(y_test),
    }
    faults, designs = sum(y_train) + sum(y_test), len(y_train) + len(y_test) - sum(
        y_train
    ) - sum(y_test)
    if faults == 0:
        return KindResult(kind=kind, auc=None, note="no faults of this kind", **counts)
    if designs == 0:
        return KindResult(kind=kind, auc=1.0, note="no design object of this kind", **counts)
    if len(set(y_train)) < 2 or len(set(y_test)) < 2:
        return KindResult(kind=kind, auc=None, note="one class missing from a split", **counts)
    vectorizer = DictVectorizer(sparse=False)
    x_train = vectorizer.fit_transform([f for f, _, _ in train])
    x_test = vectorizer.transform([f for f, _, _ in test])
    names = list(vectorizer.get_feature_names_out())
    aucs: dict[str, float] = {}
    scores: dict[str, list[float]] = {}
    top: list[tuple[str, float]] = []
    for name, model in make_classifiers().items():
        model.fit(x_train, y_train)
        scores[name] = list(model.predict_proba(x_test)[:, 1])
        aucs[name] = round(float(roc_auc_score(y_test, scores[name])), 4)
        if name == "logistic":
            top = _top_features(model, names)
    best = max(aucs, key=lambda name: aucs[name])
    positives = sum(y_test)
    half = _half(train)
    return KindResult(
        kind=kind,
        auc=aucs[best],
        auc_ci95=_auc_interval(aucs[best], positives, len(y_test) - positives),
        auc_by_model=aucs,
        within_auc=_within_auc(y_test, scores[best], [i for _, _, i in test]),
        half_auc=_half_auc(best, x_train[half], [y_train[i] for i in half], x_test, y_test),
        recall_at_1pct=round(_recall_at(y_test, scores[best], FPR_CAP), 4),
        top_features=top,
        **counts,
    )


def classify_kinds(
    train: Sequence[AuditObject], test: Sequence[AuditObject]
) -> list[KindResult]:
    """Train on ``train``'s instances, judge on ``test``'s, one result per object kind.

    Args:
        train: Labelled objects of the training instances (``instance`` set on each).
        test: Labelled objects of fresh instances.

    Returns:
        One ``KindResult`` per kind seen in either set, sorted by kind.
    """
    split: dict[str, dict[str, list[tuple[dict[str, float], bool, str]]]] = defaultdict(
        lambda: {"train": [], "test": []}
    )
    for part, objects in (("train", train), ("test", test)):
        for obj, features in zip(objects, instance_features(objects), strict=True):
            split[obj.kind][part].append((features, obj.fault, obj.instance))
    return [_judge_kind(kind, parts["train"], parts["test"]) for kind, parts in sorted(
        split.items()
    )]
