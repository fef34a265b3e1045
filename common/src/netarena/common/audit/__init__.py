"""Shortcut finding: adversarial validation of generated instances (``netarena audit``).

An app reads each instance's faulted state into labelled ``AuditObject`` records
(``App.audit_objects``); classifiers trained on some instances try to tell faults from design
objects on others by looks alone (``classify_kinds``, cross-fitted by instance), and a kind
whose faults they rank above the design with an AUC over ``TELL_AUC`` is a tell, once enough
faults settle it (``MIN_FAULTS``; an unsettled kind needs a larger audit). Metamorphic checks
(``App.audit_checks``) test that each stated detail changes the answer. ``ShapeModel`` is the
same classifier in a shortcut-taker's hands, for the ladders' shape rungs.

scikit-learn is an optional dependency (``pip install 'netarena[audit]'``).
"""

from netarena.common.audit.classify import (
    FOLDS,
    MIN_FAULTS,
    TELL_AUC,
    KindResult,
    classify_kinds,
)
from netarena.common.audit.features import featurize
from netarena.common.audit.run import AuditReport, collect_objects, run_audit
from netarena.common.audit.shape import ShapeModel, shape_model, source_digest

__all__ = [
    "FOLDS",
    "MIN_FAULTS",
    "TELL_AUC",
    "AuditReport",
    "KindResult",
    "ShapeModel",
    "classify_kinds",
    "collect_objects",
    "featurize",
    "run_audit",
    "shape_model",
    "source_digest",
]
