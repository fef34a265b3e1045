"""How often each MALT label states each qualifier, and what ignoring one costs there.

For every label, generates ``--per-label`` queries and prints, per qualifier, the share of
the label's queries that state it (``Query.qualifiers``) and the share a reader blind to it
gets wrong: the task read with that qualifier ablated everywhere (``qualifiers.ablate``),
run by our own operations and compared with the truth (answer and resulting topology). The
generator redraws a query until every stated qualifier is load-bearing, so the two columns
agree; the coverage target is a cost of at least 10 points wherever a label states a
qualifier at all. ``--agents`` also runs the blind baselines through the sandbox and prints
their rate on the queries that state their qualifier.

Usage: ``python benchmarks/malt_qualifiers.py [--per-label 60] [--seed 1] [--agents]``.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import Counter

from netarena.common.core.app import find_baseline
from netarena.common.core.plan import QueryPlan, plan_queries
from netarena.common.core.runner import RunConfig, Runner
from netarena.common.core.types import Query
from netarena.malt import LABELS, MaltApp, base_topology
from netarena.malt.generator import misses_truth
from netarena.malt.qualifiers import QUALIFIERS, ablate


def _blind_is_wrong(app: MaltApp, query: Query, qualifier: str) -> bool:
    base = base_topology(app.config.topology_params())
    return misses_truth(base, ablate(query.truth["ops"], qualifier), query.truth)


def main() -> None:
    """Print the per-label table (and, with ``--agents``, the blind baselines' rates)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-label", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--agents", action="store_true", help="also run the blind baselines")
    args = parser.parse_args()
    app = MaltApp()
    print("label            " + "".join(f"{q:>12}" for q in QUALIFIERS))
    print("                 " + "".join(f"{'stated/cost':>12}" for _ in QUALIFIERS))
    everything: list[Query] = []
    for level, labels in LABELS.items():
        for label in labels:
            plan = QueryPlan(
                num_queries=args.per_label, levels=(level,), labels=(label,), seed=args.seed
            )
            queries = plan_queries(app, plan)
            everything += queries
            n = len(queries)
            stated = Counter(q for query in queries for q in query.qualifiers)
            cells = []
            for q in QUALIFIERS:
                wrong = sum(_blind_is_wrong(app, query, q) for query in queries)
                cells.append(f"{stated[q] / n:>6.2f}/{wrong / n:<5.2f}" if stated[q] else " " * 12)
            print(f"{label:<17}" + "".join(cells))
    total = Counter(q for query in everything for q in query.qualifiers)
    print(f"\nall {len(everything)} queries: " + ", ".join(f"{q} {total[q]}" for q in QUALIFIERS))
    if not args.agents:
        return
    print("\nblind baselines, on the queries stating their qualifier (sandboxed run):")
    for q in QUALIFIERS:
        stating = [query for query in everything if q in query.qualifiers]
        agent = find_baseline(app, f"{q}-blind").make()
        results = asyncio.run(Runner(app, agent, RunConfig(concurrency=2)).run(stating))
        wrong = sum(not (r.correct and r.safe) for r in results)
        print(f"  {q}-blind: wrong on {wrong}/{len(stating)} ({wrong / max(1, len(stating)):.1%})")


if __name__ == "__main__":
    main()
