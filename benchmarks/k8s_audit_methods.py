"""Which fault methods give themselves away? ``netarena audit k8s`` by method, on more data.

Usage: .venv/bin/python benchmarks/k8s_audit_methods.py [N] [SEEDS]
(defaults: 400 queries at each of seeds 31,32,33,34; about 4 CPU-minutes for the default)

One audit's AUC moves by a few hundredths between seeds, and a tell the classifiers need
more examples to learn stays hidden. This pools the instances of several seeds, scores each
object out of fold (the audit's own folds by instance, classifiers and features:
``classify.deal_folds``, ``out_of_fold``) and prints, per kind, the out-of-fold AUC of both
classifiers, then the AUC of each fault method's objects against the design's (instances
whose faults share one method), so a tell can be traced to the method that writes it.
"""

from __future__ import annotations

import sys
from collections import defaultdict

import numpy as np
from sklearn.feature_extraction import DictVectorizer
from sklearn.metrics import roc_auc_score

from netarena.common.audit.classify import (
    FOLDS,
    deal_folds,
    instance_features,
    make_classifiers,
    out_of_fold,
)
from netarena.common.core.app import load_app
from netarena.common.core.evidence import AuditObject
from netarena.common.core.plan import QueryPlan, plan_queries


def _collect(n: int, seeds: list[int]) -> tuple[list[AuditObject], dict[str, str]]:
    """Labelled objects of every instance, and each instance's method (``mixed``: several)."""
    app = load_app("k8s")
    objects: list[AuditObject] = []
    methods: dict[str, str] = {}
    for seed in seeds:
        for query in plan_queries(app, QueryPlan(num_queries=n, seed=seed)):
            key = f"{seed}:{query.id}"
            found = {str(f["method"]) for f in query.truth.get("faults") or []}
            methods[key] = found.pop() if len(found) == 1 else "mixed"
            objects += [o.model_copy(update={"instance": key}) for o in app.audit_objects(query)]
    return objects, methods


def _against_design(faults: np.ndarray, design: np.ndarray) -> float:
    """AUC of ``faults``' scores against ``design``'s."""
    labels = np.r_[np.ones(len(faults)), np.zeros(len(design))]
    return float(roc_auc_score(labels, np.r_[faults, design]))


def _report(kind: str, rows: list[tuple[dict[str, float], AuditObject]],
            methods: dict[str, str]) -> None:
    vectors = DictVectorizer(sparse=False)
    x = vectors.fit_transform([f for f, _ in rows])
    y = np.array([o.fault for _, o in rows])
    dealt = deal_folds([o.instance for _, o in rows], FOLDS)
    folds = [dealt[o.instance] for _, o in rows]
    scores = {name: np.array(out_of_fold(name, x, list(y), folds)) for name in make_classifiers()}
    aucs = {name: float(roc_auc_score(y, s)) for name, s in scores.items()}
    print(f"{kind}: {len(y)} objects, {int(y.sum())} faults; out-of-fold AUC "
          + ", ".join(f"{name} {auc:.3f}" for name, auc in aucs.items()))
    best = scores[max(aucs, key=lambda name: aucs[name])]
    by_method: dict[str, list[float]] = defaultdict(list)
    for index, (_, obj) in enumerate(rows):
        if obj.fault and methods[obj.instance] != "mixed":
            by_method[methods[obj.instance]].append(best[index])
    for method, found in sorted(by_method.items(), key=lambda kv: -len(kv[1])):
        print(f"  {method:22s} {len(found):5d} objects  AUC against the design "
              f"{_against_design(np.array(found), best[~y]):.3f}")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    seeds = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "31,32,33,34").split(",")]
    objects, methods = _collect(n, seeds)
    by_kind: dict[str, list[tuple[dict[str, float], AuditObject]]] = defaultdict(list)
    for obj, features in zip(objects, instance_features(objects), strict=True):
        by_kind[obj.kind].append((features, obj))
    for kind, rows in sorted(by_kind.items()):
        _report(kind, rows, methods)


if __name__ == "__main__":
    main()
