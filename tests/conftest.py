"""Shared fixtures and the rules for root-only tests."""

from __future__ import annotations

import os

import pytest


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``root`` when not root: they create network namespaces."""
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root to create network namespaces (CI runs as root)")
    for item in items:
        if "root" in item.keywords:
            item.add_marker(skip)
