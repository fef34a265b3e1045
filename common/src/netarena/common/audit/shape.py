"""A shortcut-taker's classifier: flags objects that look like faults, for shape baselines.

Every app's ladder has a *shape* rung: an agent that reads configuration (never a symptom),
scores each object it sees with a ``ShapeModel`` trained on other instances' truth, and deletes
or reverts what it flags. If the benchmark is sound, such an agent solves almost nothing.

The model is trained once per build on a fixed plan (deterministic), kept in the user's cache
(``$XDG_CACHE_HOME/netarena/shape``) under a key that changes with the code and the plan, and
reused by every episode of a run.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import pickle
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from netarena.common.audit.classify import FPR_CAP, instance_features, make_classifiers
from netarena.common.core.app import App
from netarena.common.core.evidence import AuditObject

__all__ = ["ShapeModel", "shape_model", "source_digest"]

log = logging.getLogger(__name__)


class ShapeModel:
    """Per object kind, a classifier of fault-looking objects and its 1%-false-positive cut."""

    def __init__(self) -> None:
        self._models: dict[str, tuple[Any, Any, float]] = {}
        self._fault_only: set[str] = set()

    def fit(self, objects: Sequence[AuditObject]) -> ShapeModel:
        """Learn from labelled objects of many instances (``instance`` set on each)."""
        from sklearn.feature_extraction import DictVectorizer

        grouped: dict[str, tuple[list[dict[str, float]], list[bool]]] = {}
        for obj, features in zip(objects, instance_features(objects), strict=True):
            xs, ys = grouped.setdefault(obj.kind, ([], []))
            xs.append(features)
            ys.append(obj.fault)
        for kind, (xs, ys) in grouped.items():
            if all(ys):
                self._fault_only.add(kind)
                continue
            if not any(ys):
                continue
            vectorizer = DictVectorizer(sparse=False)
            matrix = vectorizer.fit_transform(xs)
            model = make_classifiers()["boosted"].fit(matrix, ys)
            design = sorted(
                p for p, y in zip(model.predict_proba(matrix)[:, 1], ys, strict=True) if not y
            )
            cut = design[min(len(design) - 1, int(len(design) * (1 - FPR_CAP)))]
            self._models[kind] = (vectorizer, model, float(cut))
        return self

    def scores(self, objects: Sequence[AuditObject]) -> list[float]:
        """Fault likelihood of each object of one instance (``fault`` fields are ignored).

        One prediction per kind, on one thread: row by row, each call's thread pool cost
        more than the prediction, and on a busy machine it spun for minutes.
        """
        from threadpoolctl import threadpool_limits

        features = instance_features(objects)
        out = [1.0 if obj.kind in self._fault_only else 0.0 for obj in objects]
        rows: dict[str, list[int]] = {}
        for i, obj in enumerate(objects):
            if obj.kind in self._models and obj.kind not in self._fault_only:
                rows.setdefault(obj.kind, []).append(i)
        with threadpool_limits(limits=1):
            for kind, where in rows.items():
                vectorizer, model, _ = self._models[kind]
                found = model.predict_proba(vectorizer.transform([features[i] for i in where]))
                for i, p in zip(where, found[:, 1], strict=True):
                    out[i] = float(p)
        return out

    def flags(self, objects: Sequence[AuditObject]) -> list[bool]:
        """Objects of one instance scored above their kind's 1%-false-positive cut."""
        flagged = []
        for obj, score in zip(objects, self.scores(objects), strict=True):
            cut = self._models[obj.kind][2] if obj.kind in self._models else 1.0
            flagged.append(obj.kind in self._fault_only or score > cut)
        return flagged


def source_digest(*packages: str) -> str:
    """A digest of the Python sources of ``packages`` (dotted names): the build's identity."""
    import importlib

    digest = hashlib.sha256()
    for name in packages:
        module = importlib.import_module(name)
        for root in sorted(getattr(module, "__path__", [])):
            for path in sorted(Path(root).rglob("*.py")):
                digest.update(path.relative_to(root).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "netarena" / "shape"


TRAINING_QUERIES = 120
"""Instances a shape model is trained on unless ``NETARENA_SHAPE_QUERIES`` says otherwise
(the test suite trains on fewer: a weaker model only makes a shape rung's ceiling easier to
keep, and 120 route instances take about 15 minutes on 2 cores)."""


def shape_model(
    app: App, labels: Sequence[str] = (), queries: int | None = None, seed: int = 7_771
) -> ShapeModel:
    """The app's shape model for ``labels``, trained on ``queries`` instances from ``seed``.

    ``queries`` defaults to ``NETARENA_SHAPE_QUERIES`` or else ``TRAINING_QUERIES``.

    Cached per build (the app's and the audit's sources), app parameters and plan, so a run
    trains it at most once. Training needs what ``App.audit_objects`` needs (root, for route).
    """
    from netarena.common.audit.run import collect_objects
    from netarena.common.core.plan import QueryPlan, plan_queries

    if queries is None:
        queries = int(os.environ.get("NETARENA_SHAPE_QUERIES", TRAINING_QUERIES))
    key = hashlib.sha256(
        repr(
            (app.name, sorted(app.params().items()), tuple(labels), queries, seed,
             source_digest(type(app).__module__.rpartition(".")[0] or type(app).__module__,
                           "netarena.common.audit"))
        ).encode()
    ).hexdigest()[:20]
    path = _cache_dir() / f"{app.name}-{key}.pickle"
    path.parent.mkdir(parents=True, exist_ok=True)
    # Processes asking at once (parallel test workers, several runs) train it once: the
    # others wait on the lock and read the file the first one wrote whole.
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            with path.open("rb") as handle:
                cached: ShapeModel = pickle.load(handle)  # noqa: S301 - our own cache file
                return cached
        plan = QueryPlan(num_queries=queries, seed=seed, labels=tuple(labels) or None)
        objects, failed = collect_objects(app, plan_queries(app, plan), concurrency=4)
        if failed:
            log.warning("shape model: %d training instances unread", len(failed))
        model = ShapeModel().fit(objects)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(fd, "wb") as handle:
            pickle.dump(model, handle)
        os.replace(tmp, path)
        return model
