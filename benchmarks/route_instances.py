"""How fresh route instances are (issue 13): distinct prompts per run, overlap across seeds.

Generates two runs of ``--queries`` queries each (the runner's plan: labels cycle, per-query
seeds derived from the run seed) and prints, overall and per label: distinct prompts
within run A, distinct instances (prompt plus the hidden fault plan) within run A, and
the share of run A's instances that also occur in run B. Targets: >= 99% distinct prompts
in a 500-query run, < 1% shared between two seeds. Pure generation: no root needed.

Run: ``python benchmarks/route_instances.py [--queries 500] [--seeds 1,2]``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.types import Query
from netarena.route import RouteApp


def instance(query: Query) -> str:
    """What an agent faces: the prompt and the faults behind it."""
    return query.prompt + json.dumps(query.truth["faults"], sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--seeds", default="1,2")
    args = parser.parse_args()
    seed_a, seed_b = (int(s) for s in args.seeds.split(","))
    app = RouteApp()
    run_a = plan_queries(app, QueryPlan(num_queries=args.queries, seed=seed_a))
    run_b = plan_queries(app, QueryPlan(num_queries=args.queries, seed=seed_b))
    in_b = {instance(q) for q in run_b}
    groups: dict[str, list[Query]] = defaultdict(list)
    for q in run_a:
        groups["all"].append(q)
        groups[f"L{q.level} {q.label}"].append(q)
    print(f"route instances: two runs of {args.queries} queries, seeds {seed_a} and {seed_b}")
    print("group          n  distinct prompts  distinct instances  shared with other seed")
    for name, qs in sorted(groups.items(), key=lambda kv: (kv[0] != "all", kv[0])):
        prompts = len({q.prompt for q in qs})
        instances = {instance(q) for q in qs}
        shared = len(instances & in_b)
        print(
            f"{name:<12} {len(qs):>3}  {prompts / len(qs):>16.1%}  "
            f"{len(instances) / len(qs):>18.1%}  {shared / len(instances):>22.1%}"
        )


if __name__ == "__main__":
    main()
