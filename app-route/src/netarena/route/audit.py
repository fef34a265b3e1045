"""The audit's reader for these networks (``netarena audit route``): not written yet."""

from __future__ import annotations

from netarena.common.core.app import App
from netarena.common.core.errors import ConfigError
from netarena.common.core.evidence import AuditObject
from netarena.common.core.types import Query

__all__ = ["audit_objects"]


def audit_objects(app: App, query: Query) -> list[AuditObject]:
    """Every object an agent can read in ``query``'s faulted network, labelled by the truth."""
    raise ConfigError(f"no audit reader for {query.label} yet")
