"""The public surface of netarena.route resolves, and the app is registered as ``route``.

The ``__all__`` list itself is pinned in ``test_generation.py``.
"""

from __future__ import annotations

import netarena.route as route
from netarena.common.core.app import load_app


def test_every_export_resolves() -> None:
    assert len(set(route.__all__)) == len(route.__all__)
    for name in route.__all__:
        assert getattr(route, name) is not None, name


def test_registered_as_the_route_app() -> None:
    app = load_app("route", {"prompt_style": "fewshot_base"})
    assert isinstance(app, route.RouteApp) and app.name == "route" and app.kind == "reactive"
    assert isinstance(app.config, route.RouteConfig) and app.config.prompt_style == "fewshot_base"
    assert set(app.labels) == {1, 2, 3}
    assert isinstance(app.reference_agent(), route.ReferenceRouteAgent)
