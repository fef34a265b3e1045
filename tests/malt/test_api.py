"""The public surface of netarena.malt and netarena.common.sandbox is pinned."""

from __future__ import annotations

import netarena.common.sandbox as sandbox
import netarena.malt as malt
from netarena.common.core.app import load_app


def test_malt_exports() -> None:
    assert sorted(malt.__all__) == [
        "GOOGLE_EXAMPLE",
        "INVARIANTS",
        "LABELS",
        "LABEL_SETS",
        "MaltApp",
        "MaltConfig",
        "MaltEpisode",
        "MaltReferenceAgent",
        "TopologyParams",
        "answer_mismatch",
        "base_topology",
        "build_topology",
        "extract_code",
        "load_textproto",
        "parse_textproto",
        "state_mismatch",
        "violations",
    ]
    assert all(hasattr(malt, name) for name in malt.__all__)


def test_sandbox_exports() -> None:
    assert sorted(sandbox.__all__) == [
        "HostLayers",
        "KEEP_WARM",
        "SAFE_STDLIB",
        "SandboxLimits",
        "SandboxPool",
        "SandboxResult",
        "SandboxSpec",
        "host_layers",
        "shared_pool",
    ]


def test_registered_as_the_malt_app() -> None:
    app = load_app("malt", {"prompt_style": "fewshot_cot"})
    assert (
        isinstance(app, malt.MaltApp) and app.kind == "constructive" and app.default_max_turns == 1
    )
    assert set(app.labels) == {1, 2, 3}
