"""Where the reference data the tests compare against lives.

The upstream copies (Google's MALT example model, Online Boutique's manifests) sit in
``shared/data`` beside the checkout, as on developer machines and in CI; set
``NETARENA_SHARED_DATA`` to point elsewhere. The product itself never reads them.
"""

from __future__ import annotations

import os
from pathlib import Path


def shared_data(*parts: str) -> Path:
    """Path of ``parts`` under the shared reference data folder."""
    env = os.environ.get("NETARENA_SHARED_DATA")
    base = Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "data"
    return base.joinpath(*parts)
