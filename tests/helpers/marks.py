"""Skip marks for optional dependencies, checked without importing them.

Importing scikit-learn takes 2.3 s; a module-level ``pytest.importorskip`` made every test
process pay it while collecting, whichever tests it then ran.
"""

from __future__ import annotations

import importlib.util

import pytest

NEEDS_SKLEARN = pytest.mark.skipif(importlib.util.find_spec("sklearn") is None,
                                   reason="scikit-learn (netarena-common[audit]) is not installed")
