"""A test-sized audit of static networks reads real instances and fails on a planted tell.

The audit's reader (``static/audit.py``) builds each network, reads every machine healthy
and faulted with the read any agent could send, and labels what the faults made. Planting
a tell (every fault rule given a comment no design rule carries) must fail the audit: the
classifiers see it on fresh instances, and the planted comment is among the fault's marks.
"""

from __future__ import annotations

import pytest

from netarena.route import RouteApp
from netarena.route.static import faults as route_faults
from tests.helpers.marks import NEEDS_SKLEARN

from .conftest import NEEDS_ROOT

pytestmark = [pytest.mark.root, pytest.mark.slow, NEEDS_ROOT, NEEDS_SKLEARN]


def test_a_planted_comment_fails_a_test_sized_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    from netarena.common.audit import run_audit

    original = route_faults.sample_fault

    def planted(*args: object, **kwargs: object) -> dict:
        fault = original(*args, **kwargs)  # type: ignore[arg-type]
        for rule in fault.get("rules", ()):
            rule["comment"] = "planted"
        return fault

    monkeypatch.setattr(route_faults, "sample_fault", planted)
    app = RouteApp({"num_subnets": 3, "hosts_per_subnet": 2})
    report = run_audit(app, queries=30, seed=5, labels=("DT",), concurrency=4)
    block = next(k for k in report.kinds if k.kind == "filter_block")
    assert block.faults and block.tell, block
    assert any("comment=planted" in name for name, _ in block.top_features), block.top_features
    assert not report.passed and "filter_block" in report.tells
    assert len(report.failed) <= 1, report.failed
