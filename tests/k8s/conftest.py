"""Fixtures shared by the k8s tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from netarena.k8s import K8sApp
from netarena.k8s.episode import K8sEpisode


@pytest.fixture
def episode() -> Iterator[K8sEpisode]:
    """A live episode of one level-1 query on the embedded API server, closed after the test."""
    app = K8sApp()
    ep = app.open(app.generate(42, 1, "CP"))
    yield ep
    ep.close()
