"""Verified injection: steady state, backtracking, and agreement with the intent."""

from __future__ import annotations

import pytest

from netarena.common.core.types import Query
from netarena.route import RouteApp

from .conftest import NEEDS_ROOT
from .test_faults_root import _fault_on, _with_faults

pytestmark = [pytest.mark.root, NEEDS_ROOT]


def test_a_removed_gateway_shows_its_steady_state_at_once(small_app: RouteApp) -> None:
    """The hosts' cached MAC for a gateway address the fault removed would keep their
    traffic flowing for up to a minute; the verified state must be the broken one, or a
    read-only agent watches the fault appear and is blamed for it."""
    query = small_app.generate(3, 1, "RI")
    fault = _fault_on(query, "RI", "wrong_ip", "r0", subnet=2)
    with small_app.open(_with_faults(query, [fault])) as episode:
        subnet2 = [h.name for h in episode.plan.hosts_in(2)]
        others = [h.name for h in episode.plan.hosts_in(1)]
        for src in subnet2:
            for dst in others:
                if (src, dst) in episode.want:
                    assert (src, dst) not in episode.matrix.ok, episode.matrix.text()


def _backtracking(app: RouteApp) -> tuple[Query, list[dict]]:
    """A query whose first slot's first candidate makes the second slot's fault add nothing
    (the search backtracks and rebuilds), and the faults it ends with."""
    query = app.generate(4, 2, "DR+DT")
    cut_subnet2 = _fault_on(query, "DI", "link_down", "r0", subnet=2)
    cut_host = _fault_on(query, "DI", "link_down", "host", subnet=1)
    drop_subnet2 = _fault_on(query, "DT", "iptables_drop", "r0", subnet=2)
    slots = ([cut_subnet2, cut_host], [drop_subnet2])
    return _with_faults(query, *slots), [cut_host, drop_subnet2]


def test_backtracks_when_a_later_fault_adds_nothing(small_app: RouteApp) -> None:
    query, kept = _backtracking(small_app)
    with small_app.open(query) as episode:
        assert episode.attempts == [2, 1]
        assert episode.faults == kept


def test_every_rebuild_claims_a_fresh_prefix(
    small_app: RouteApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rejected candidate's network is rebuilt under a new prefix. Closing gives the old
    prefix's claim up, so a reaper in another process that had listed the old network could
    take a rebuilt one under the same prefix, ownerless for a moment, for it and remove it
    (a CI run lost a live episode's node so)."""
    from netarena.route.emulator import live
    from netarena.route.linux.namespaces import list_prefixes

    claimed: list[str] = []
    real = live.claim_prefix

    def claim(prefix: str | None = None) -> str:
        claimed.append(real(prefix))
        return claimed[-1]

    monkeypatch.setattr(live, "claim_prefix", claim)
    with small_app.open(_backtracking(small_app)[0]) as episode:
        assert episode.attempts == [2, 1] and len(claimed) >= 2
        assert len(set(claimed)) == len(claimed)
        assert [p for p in claimed if p in list_prefixes()] == [episode.prefix]
