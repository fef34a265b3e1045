"""What an audit reads from one instance: the objects an agent can see, labelled by the truth.

An app turns a query's faulted state into ``Evidence`` (``App.audit_objects``): every object an
agent could read (a firewall rule, a route, a config line, a policy peer), described by the
fields an agent sees, and labelled ``fault`` when the injection made or changed it. The audit
(``netarena.common.audit``) trains classifiers on these records; a fault that a classifier
can tell from the design by its looks alone is a shortcut no diagnosis is needed for.

``AuditCheck`` records the other half of an audit: metamorphic checks (a stated detail that
must change the answer wherever it is stated).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AuditObject", "AuditCheck", "FieldValue"]

FieldValue = str | float | int | bool | None
"""One field of an object as an agent reads it: text is categorical, numbers are numbers."""


class AuditObject(BaseModel):
    """One object an agent can see in an instance's faulted state."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str
    """Object kind, the unit a classifier is trained and judged on (``nft_rule``,
    ``ip_rule``, ``ospf_interface_line``, ``policy_peer``). A kind should group objects an
    agent would compare with each other."""
    fields: dict[str, FieldValue] = Field(default_factory=dict)
    """What an agent sees of it, abstracted the way an agent would generalise: identifiers
    replaced by their class (an address by ``inventory``/``cgnat``/``bogon``, a label value by
    whether a workload carries it), numbers kept numeric, positions as numbers. Raw
    per-instance identifiers teach a classifier nothing across instances."""
    fault: bool
    """The truth: the injection made or changed this object."""
    instance: str = ""
    """The query id it belongs to (filled in by the audit); context features compare an
    object with the others of its kind in the same instance."""


class AuditCheck(BaseModel):
    """A metamorphic check: a stated detail must change the answer wherever it is stated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    """What is misread (``bound:exactly->at least``, ``qualifier:depth``)."""
    queries: int
    """Queries that state the detail (where misreading it changes the program)."""
    judged_wrong: int
    """Of those, queries where the misreading's answer is judged wrong."""
    threshold: float = 0.9
    """Least share of ``queries`` that must be judged wrong."""

    @property
    def rate(self) -> float:
        """Share of the stating queries where the misreading is judged wrong (1.0 if none)."""
        return self.judged_wrong / self.queries if self.queries else 1.0

    @property
    def passed(self) -> bool:
        """The misreading is caught often enough."""
        return self.rate >= self.threshold
