"""A hash of an app's generated queries at fixed seeds: a restructure must leave it unchanged.

Generation is pure, so moving code must not move a byte of any query's id, prompt, params or
truth. Run before and after a refactor and compare the last line (issue 42 recorded route's).

``python benchmarks/query_hash.py route --labels '' ospf bgp`` (``''``: every label).
"""

from __future__ import annotations

import argparse
import hashlib
import json

from netarena.common.core.app import load_app
from netarena.common.core.plan import QueryPlan, plan_queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--labels", nargs="+", default=[""], help="label sets, comma-separated")
    parser.add_argument("--queries", type=int, default=120)
    args = parser.parse_args()
    app = load_app(args.app)
    total = hashlib.sha256()
    for seed in args.seeds:
        for labels in args.labels:
            chosen = tuple(label for label in labels.split(",") if label)
            plan = QueryPlan(num_queries=args.queries, seed=seed, labels=chosen or None)
            digest = hashlib.sha256()
            for q in plan_queries(app, plan):
                record = {"id": q.id, "prompt": q.prompt, "params": q.params, "truth": q.truth}
                digest.update(json.dumps(record, sort_keys=True, default=str).encode())
            total.update(digest.digest())
            print(f"seed {seed} labels {labels or '(all)'}: {digest.hexdigest()[:16]}")
    print(f"{args.app}: {total.hexdigest()}")


if __name__ == "__main__":
    main()
