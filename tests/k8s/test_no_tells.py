"""Fault injection leaves no trace: nothing but the spec separates a faulted policy.

Over 100 queries, every metadata field of every NetworkPolicy is read from the API as a
client sees it (list order included) and turned into every simple predictor an agent
could use: the highest or lowest value of a field (resourceVersion, generation,
creationTimestamp, ...), the value that differs from the rest, a key only some objects
have, the position in the list, the spec's key order. None may name the faulted
policies better than chance.
"""

from __future__ import annotations

import json
import ssl
import urllib.request
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.k8s import K8sApp
from netarena.k8s.apiserver.tls import serving_certificate

pytestmark = pytest.mark.slow

CHANCE_MARGIN = 0.25
"""A predictor may beat the base rate (~0.12) by at most this much precision."""


def _flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _flatten(v, f"{prefix}.{k}")
    elif isinstance(value, list):
        yield prefix + "[]", json.dumps(value, sort_keys=True)
        yield prefix + "#", len(value)
    else:
        yield prefix, value


def _sortable(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value if isinstance(value, int | float | str) else json.dumps(value)


def _features(items: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Feature name → one value per item (``None`` when the item lacks it)."""
    rows = []
    for position, item in enumerate(items):
        row = dict(_flatten(item["metadata"], "metadata"))
        row["list.position"] = position
        row["spec.key_order"] = ",".join(item.get("spec", {}))
        row["metadata.key_order"] = ",".join(item["metadata"])
        row["item.key_order"] = ",".join(item)
        rows.append(row)
    names = {k for row in rows for k in row} - {"metadata.name", "metadata.uid"}
    return {k: [row.get(k) for row in rows] for k in sorted(names)}


def _predictions(values: list[Any], k: int) -> dict[str, set[int]]:
    """Index sets each predictor picks from one query's values of one feature."""
    out: dict[str, set[int]] = {}
    present = [i for i, v in enumerate(values) if v is not None]
    if len(present) not in (0, len(values)):
        out["has-key"] = set(present)
        out["lacks-key"] = set(range(len(values))) - set(present)
    counts = Counter(json.dumps(v, sort_keys=True) for v in values)
    if len(counts) > 1:
        common = counts.most_common(1)[0][0]
        out["odd-one-out"] = {i for i, v in enumerate(values)
                              if json.dumps(v, sort_keys=True) != common}
    ranked = sorted(present, key=lambda i: (_sortable(values[i]), i))
    if len({json.dumps(values[i]) for i in present}) > 1:
        out["highest"] = set(ranked[-k:])
        out["lowest"] = set(ranked[:k])
    return out


_CLUSTER_CA = ssl.create_default_context(cadata=serving_certificate().ca_pem.decode())
"""The embedded API serves HTTPS with the process's cluster CA."""


def test_no_metadata_field_or_ordering_names_the_faulted_policies() -> None:
    app = K8sApp()
    queries = plan_queries(app, QueryPlan(num_queries=100, seed=77))
    hits: Counter[tuple[str, str]] = Counter()
    picks: Counter[tuple[str, str]] = Counter()
    faulted_total = items_total = 0
    for query in queries:
        ep = app.open(query)
        try:
            assert ep.kubectl is not None
            url = (f"{ep.kubectl.server_url}/apis/networking.k8s.io/v1/namespaces/"
                   f"{ep.model.namespace}/networkpolicies")
            config = yaml.safe_load(ep.kubectl.kubeconfig.read_text())
            token = config["users"][0]["user"]["token"]
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=10, context=_CLUSTER_CA) as response:  # noqa: S310 - loopback
                items = json.load(response)["items"]
        finally:
            ep.close()
        faulted = {i for i, item in enumerate(items)
                   if item["metadata"]["name"] in {f["policy"] for f in query.truth["faults"]}}
        assert faulted
        faulted_total += len(faulted)
        items_total += len(items)
        for feature, values in _features(items).items():
            for predictor, chosen in _predictions(values, len(faulted)).items():
                picks[(feature, predictor)] += len(chosen)
                hits[(feature, predictor)] += len(chosen & faulted)
    base = faulted_total / items_total
    precision = {key: hits[key] / picks[key] for key in picks if picks[key] >= 20}
    assert precision, "no predictor was exercised"
    tells = {k: round(p, 2) for k, p in precision.items() if p > base + CHANCE_MARGIN}
    assert not tells, f"base rate {base:.2f}; predictors that name the faulted policies: {tells}"
