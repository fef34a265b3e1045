"""Shared fixtures for the route tests: root detection and a leftover check."""

from __future__ import annotations

import os
import shutil

import pytest

NEEDS_ROOT = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("nsenter") is None,
    reason="needs root, iproute2 and nsenter to create network namespaces",
)


@pytest.fixture
def small_app():
    """A route app on a fixed 2x2 network (fast episodes)."""
    from netarena.route import RouteApp

    return RouteApp({"num_subnets": 2, "hosts_per_subnet": 2})
